// The dagsgd command line: git-style subcommands, exit 0 / 1 (failure) / 2 (bad input or usage).
#include <filesystem>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/paths.h"

// The installed binary's data: <prefix>/bin/dagsgd finds <prefix>/share/dagsgd/datasets
// (model/paths.h); in the build tree there is none there and the source tree's is used.
extern "C" const char* dagsgd_installed_data_dir() {
  static const std::string dir = [] {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : dagsgd::model::data_dir_beside(exe.string(), DAGSGD_BIN_TO_DATA);
  }();
  return dir.empty() ? nullptr : dir.c_str();
}

// Keeps the memory a command frees for its next tables instead of handing it back to the kernel
// at once: a table in fresh pages costs a page fault and a zeroed page per 4 KiB (or 2 MiB), and
// `dagsgd analyze` allocates and frees tables of tens of MB one after another (each rank's event
// tables, the sort's, the DAG's, the replay's). 256 MiB of room stay at the top of the heap and
// are returned only beyond that (docs/performance.md, "Trace reader": the page faults and times
// of `analyze` of the 313 MB run with and without it). glibc only; the Python module keeps the
// interpreter's policy.
namespace {
void keep_freed_memory() {
#if defined(__GLIBC__)
  constexpr int kTopPad = 256 << 20;
  mallopt(M_TOP_PAD, kTopPad);
  mallopt(M_TRIM_THRESHOLD, kTopPad);
#endif
}
}  // namespace

int main(int argc, char** argv) {
  using namespace dagsgd::tools;
  keep_freed_memory();
  const std::vector<std::string> args(argv + 1, argv + argc);
  return run_commands(args, [](CLI::App& app, Action& action) {
#ifdef DAGSGD_WITH_MPI
    // The subcommands that run or launch MPI programs live in this binary only.
    add_train(app, action);
    add_collect(app, action);
    add_validate(app, action);
#else
    (void)app;
    (void)action;
#endif
  });
}
