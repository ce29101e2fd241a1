// The dagsgd command line: git-style subcommands, exit 0 / 1 (failure) / 2 (bad input or usage).
#include <filesystem>
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

int main(int argc, char** argv) {
  using namespace dagsgd::tools;
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
