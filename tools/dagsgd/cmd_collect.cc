// `dagsgd collect`: runs any MPI program under the PMPI tracer (libdagsgd-mpitrace.so) and turns
// what its ranks wrote into a run directory: manifest.json plus rank-<r>.trace.json.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/trace/manifest.h"
#include "dagsgd/trace/trace_repair.h"

namespace dagsgd::tools {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryName = "libdagsgd-mpitrace.so";
constexpr const char* kLibraryEnv = "DAGSGD_MPITRACE_LIB";

struct CollectOptions {
  std::string out;
  bool force = false;
  long flush_ms = 200;
  std::vector<std::string> command;
};

// The tracer: $DAGSGD_MPITRACE_LIB, else beside this binary in the build tree or an install.
model::Expected<std::string> find_tracer_library() {
  if (const char* env = std::getenv(kLibraryEnv); env != nullptr && *env != '\0') {
    if (!fs::is_regular_file(env)) {
      return model::Error{std::string("$") + kLibraryEnv + " names '" + env +
                          "', which is not a file"};
    }
    return fs::absolute(env).string();
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    fs::path dir = exe.parent_path();
    candidates = {dir / ".." / "runtime" / "mpitrace" / kLibraryName,
                  dir / ".." / "lib" / kLibraryName, dir / kLibraryName,
                  dir / ".." / "lib" / "dagsgd" / kLibraryName};
  }
  std::string tried;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c)) return fs::weakly_canonical(c).string();
    tried += (tried.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  return model::Error{std::string("cannot find the MPI tracer ") + kLibraryName + " (looked in " +
                      tried + "); build the 'dagsgd-mpitrace' target or set $" + kLibraryEnv};
}

bool is_mpirun(const std::string& program) {
  std::string base = fs::path(program).filename().string();
  for (const char* name : {"mpirun", "mpiexec", "orterun", "mpirun.openmpi", "mpiexec.openmpi"}) {
    if (base == name) return true;
  }
  return false;
}

// The rank count the command asks for (-np/-n/--np N), or 0 when it does not say.
int requested_ranks(const std::vector<std::string>& cmd) {
  for (std::size_t i = 0; i + 1 < cmd.size(); ++i) {
    if (cmd[i] == "-np" || cmd[i] == "-n" || cmd[i] == "--np" || cmd[i] == "-c") {
      return std::atoi(cmd[i + 1].c_str());
    }
  }
  return 0;
}

struct ChildResult {
  bool started = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string describe() const {
    if (signal != 0)
      return std::string("was killed by signal ") + std::to_string(signal) + " (" +
             strsignal(signal) + ")";
    return "exited with status " + std::to_string(exit_code);
  }
  bool ok() const { return started && signal == 0 && exit_code == 0; }
};

volatile sig_atomic_t g_child_pid = 0;

// SIGTERM to collect goes on to the command (mpirun then stops its ranks, which flush), and
// collect stays to write the run directory.
void forward_term(int sig) {
  if (g_child_pid > 0) kill(static_cast<pid_t>(g_child_pid), sig);
}

ChildResult run_child(const std::vector<std::string>& argv,
                      const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Ctrl-C already reaches the command (same process group); collect must outlive it.
  struct sigaction ignore {};
  struct sigaction forward {};
  struct sigaction old_int {};
  struct sigaction old_term {};
  ignore.sa_handler = SIG_IGN;  // NOLINT
  forward.sa_handler = forward_term;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGTERM, &forward, &old_term);
  ChildResult r;
  pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execvp(args[0], args.data());
    std::fprintf(stderr, "dagsgd: error: cannot run '%s': %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  if (pid > 0) {
    g_child_pid = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child_pid = 0;
    r.started = true;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return r;
}

struct RankTrace {
  int rank = 0;
  std::string file;
  std::int64_t spans = 0;
  int world_size = 0;
  std::string host;
  double residual_ns = 0;
  std::string ended_by;  // "finalize", "exit", or "" when the rank died
  bool repaired = false;
  std::string error;  // unreadable even after repair
};

// Reads one rank's trace, repairing (and rewriting) a tail its dead writer left open.
RankTrace inspect_trace(const fs::path& path, int rank) {
  RankTrace t;
  t.rank = rank;
  t.file = path.filename().string();
  auto text = model::read_file(path.string());
  if (!text.ok()) {
    t.error = text.error().message;
    return t;
  }
  auto fixed = trace::repair_truncated_trace(*text, "trace '" + path.string() + "'");
  if (!fixed.ok()) {
    t.error = fixed.error().message;
    return t;
  }
  if (fixed->repaired) {
    t.repaired = true;
    auto w = model::write_file(path.string(), fixed->text, /*force=*/true);
    if (!w.ok()) t.error = w.error().message;
  }
  auto j = nlohmann::json::parse(fixed->text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("traceEvents") ||
      !j["traceEvents"].is_array()) {
    t.error = "trace '" + path.string() + "': not valid JSON even after repair";
    return t;
  }
  try {
    t.world_size = j.value("distributedInfo", nlohmann::json::object()).value("world_size", 0);
    for (const auto& e : j["traceEvents"]) {
      std::string ph = e.value("ph", "");
      if (ph == "X") {
        ++t.spans;
      } else if (ph == "M" && e.contains("args")) {
        std::string name = e.value("name", "");
        const auto& args = e["args"];
        if (name == "dagsgd_rank_info") t.host = args.value("host", "");
        if (name == "dagsgd_clock_sync") {
          t.residual_ns = args.value("residual_ns", 0.0);
          t.ended_by = args.value("ended_by", "");
        }
      }
    }
  } catch (const nlohmann::json::exception& e) {
    t.error = "trace '" + path.string() + "': " + e.what();
  }
  return t;
}

// rank-<r>.trace.json files in `dir`, by rank.
std::map<int, fs::path> find_rank_traces(const fs::path& dir) {
  std::map<int, fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    const std::string prefix = "rank-";
    const std::string suffix = ".trace.json";
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    out[std::atoi(digits.c_str())] = entry.path();
  }
  return out;
}

// Makes `out` an empty run directory; an existing one is reused only with --force.
model::Expected<void> prepare_out_dir(const fs::path& out, bool force) {
  std::error_code ec;
  if (fs::exists(out, ec)) {
    if (!fs::is_directory(out, ec)) {
      return model::Error{"--out '" + out.string() + "' exists and is not a directory"};
    }
    if (!force) {
      return model::Error{"--out '" + out.string() +
                          "' already exists; pass --force to replace its run"};
    }
    // Only what a run directory holds: never a user's other files.
    for (const auto& [rank, path] : find_rank_traces(out)) fs::remove(path, ec);
    fs::remove(out / trace::kManifestName, ec);
    return model::ok();
  }
  fs::create_directories(out, ec);
  if (ec) return model::Error{"cannot create --out '" + out.string() + "': " + ec.message()};
  return model::ok();
}

int run_collect(const CollectOptions& o) {
  if (o.command.empty()) {
    return report_error(
        "no command given after '--' (usage: dagsgd collect --out DIR [--force] -- mpirun -np 4 "
        "./prog args)");
  }
  if (o.flush_ms < 0) return report_error("--flush-ms must be >= 0");
  auto library = find_tracer_library();
  if (!library.ok()) return report_error(library.error().message, kExitFailure);
  fs::path out = fs::absolute(o.out).lexically_normal();
  if (auto prepared = prepare_out_dir(out, o.force); !prepared.ok()) {
    return report_error(prepared.error().message);
  }

  std::string preload = *library;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    preload += std::string(":") + old;
  }
  std::vector<std::pair<std::string, std::string>> env = {
      {"DAGSGD_TRACE_DIR", out.string()}, {"DAGSGD_TRACE_FLUSH_MS", std::to_string(o.flush_ms)}};
  std::vector<std::string> argv = o.command;
  if (is_mpirun(argv[0])) {
    // mpirun itself is no MPI program: the tracer goes only to the ranks, by -x, which also
    // reaches ranks on other hosts.
    std::vector<std::string> inject = {"-x", "LD_PRELOAD=" + preload};
    for (const auto& [k, v] : env) {
      inject.push_back("-x");
      inject.push_back(k);
      inject.back() += "=" + v;
    }
    argv.insert(argv.begin() + 1, inject.begin(), inject.end());
  } else {
    env.emplace_back("LD_PRELOAD", preload);
  }

  ChildResult child = run_child(argv, env);

  // Gather what the ranks left, whatever happened to them.
  std::map<int, fs::path> files = find_rank_traces(out);
  std::vector<RankTrace> traces;
  int world = 0;
  for (const auto& [rank, path] : files) {
    traces.push_back(inspect_trace(path, rank));
    world = std::max({world, traces.back().world_size, rank + 1});
  }
  if (world == 0) world = requested_ranks(o.command);

  trace::RunManifest m;
  m.tool_version = model::tool_version();
  m.kind = "collect";
  m.command = o.command;
  m.ranks = std::max(world, 0);
  m.hosts.assign(static_cast<std::size_t>(m.ranks), "");
  m.config["tracer"] = *library;
  m.config["flush_ms"] = std::to_string(o.flush_ms);
  m.config["exit"] = child.started ? child.describe() : "did not start";
  std::int64_t events = 0;
  std::vector<std::string> problems;
  std::string kept;
  for (const auto& t : traces) {
    if (t.rank < m.ranks) m.hosts[static_cast<std::size_t>(t.rank)] = t.host;
    m.clock_residual_ns = std::max(m.clock_residual_ns, t.residual_ns);
    if (!t.error.empty()) {
      problems.push_back(t.error);
      continue;
    }
    m.traces.push_back(t.file);
    events += t.spans;
    kept += (kept.empty() ? "" : ", ") + std::string("rank ") + std::to_string(t.rank) + " (" +
            std::to_string(t.spans) + " events" +
            (t.repaired             ? ", cut short and repaired"
             : t.ended_by == "exit" ? ", no MPI_Finalize"
                                    : "") +
            ")";
  }
  std::vector<int> missing;
  for (int r = 0; r < m.ranks; ++r) {
    if (files.count(r) == 0) missing.push_back(r);
  }
  if (!child.ok()) problems.insert(problems.begin(), "the command " + child.describe());
  if (!missing.empty()) {
    std::string s = "no trace from rank";
    s += missing.size() > 1 ? "s" : "";
    for (std::size_t i = 0; i < missing.size(); ++i) {
      s += (i == 0 ? " " : ", ") + std::to_string(missing[i]);
    }
    problems.push_back(s);
  }
  for (const auto& t : traces) {
    if (t.error.empty() && t.repaired) {
      problems.push_back("rank " + std::to_string(t.rank) + "'s trace was cut short");
    }
  }
  if (traces.empty() && child.ok()) {
    problems.push_back(
        "no rank wrote a trace: is the command an MPI program dynamically linked against the "
        "MPI library the tracer was built with?");
  }
  m.status = "ok";
  if (!problems.empty()) {
    m.status.clear();
    for (const auto& p : problems) m.status += (m.status.empty() ? "" : "; ") + p;
  }
  if (auto w = trace::write_manifest(out.string(), m); !w.ok()) {
    return report_error(w.error().message, kExitFailure);
  }
  if (!problems.empty()) {
    return report_error(m.status + "; traces kept: " + (kept.empty() ? "none" : kept) +
                            "; partial run directory '" + out.string() + "'",
                        kExitFailure);
  }
  std::fprintf(stderr,
               "dagsgd collect: %d rank%s, %lld events, clock residual %.0f ns; run directory "
               "'%s'\n",
               m.ranks, m.ranks == 1 ? "" : "s", static_cast<long long>(events),
               m.clock_residual_ns, out.string().c_str());
  return kExitOk;
}

}  // namespace

void add_collect(CLI::App& root, Action& action) {
  auto o = std::make_shared<CollectOptions>();
  CLI::App* sub = root.add_subcommand(
      "collect",
      "Run an MPI program under the PMPI tracer and write a run directory "
      "(manifest.json, rank-<r>.trace.json).\n"
      "Example: dagsgd collect --out run1 -- mpirun -np 4 dagsgd-allreduce-bench");
  sub->add_option("--out", o->out, "Run directory to write")->required();
  sub->add_flag("--force", o->force, "Replace the run in an existing --out directory");
  sub->add_option("--flush-ms", o->flush_ms,
                  "Write buffered events at least this often, so a killed rank loses at most "
                  "this much (0: only when the buffer fills)")
      ->capture_default_str();
  sub->add_option("command", o->command, "The command to trace, after '--'");
  sub->callback([o, &action] { action = [o] { return run_collect(*o); }; });
}

}  // namespace dagsgd::tools
