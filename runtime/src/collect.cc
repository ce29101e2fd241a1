// `dagsgd collect` as a library: inject the tracer, run the command, assemble the run directory.
#include "dagsgd/runtime/collect.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/runtime/process.h"
#include "dagsgd/runtime/rank_trace.h"
#include "dagsgd/trace/trace_repair.h"
#include "run_directory.h"

namespace dagsgd::runtime {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLibraryName = "libdagsgd-mpitrace.so";
constexpr const char* kLibraryEnv = "DAGSGD_MPITRACE_LIB";

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
      return std::max(0, std::atoi(cmd[i + 1].c_str()));
    }
  }
  return 0;
}

// What one rank left, read back (and repaired in place when its writer died mid-line).
struct RankTrace {
  int rank = 0;
  std::string file;
  std::int64_t spans = 0;
  int world_size = 0;
  std::string host;
  std::string run_id;
  double residual_ns = 0;
  std::string ended_by;  // "finalize", "exit", or "" when the rank died
  bool repaired = false;
  std::string error;  // unreadable even after repair
};

void read_events(const nlohmann::json& j, RankTrace& t) {
  const auto info = j.value("distributedInfo", nlohmann::json::object());
  t.world_size = info.value("world_size", 0);
  t.run_id = info.value("run_id", "");
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
}

RankTrace inspect_trace(const std::string& path, int rank) {
  RankTrace t;
  t.rank = rank;
  t.file = fs::path(path).filename().string();
  auto text = model::read_file(path);
  if (!text.ok()) {
    t.error = text.error().message;
    return t;
  }
  auto fixed = trace::repair_truncated_trace(*text, "trace '" + path + "'");
  if (!fixed.ok()) {
    t.error = fixed.error().message;
    return t;
  }
  if (fixed->repaired) {
    t.repaired = true;
    auto w = model::write_file(path, fixed->text, /*force=*/true);
    if (!w.ok()) t.error = w.error().message;
  }
  auto j = nlohmann::json::parse(fixed->text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("traceEvents") ||
      !j["traceEvents"].is_array()) {
    t.error = "trace '" + path + "': not valid JSON even after repair";
    return t;
  }
  try {
    read_events(j, t);
  } catch (const nlohmann::json::exception& e) {
    t.error = "trace '" + path + "': " + e.what();
  }
  return t;
}

std::string list_ranks(const char* what, const std::vector<int>& ranks) {
  std::string s = what;
  s += ranks.size() > 1 ? "s" : "";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    s += (i == 0 ? " " : ", ") + std::to_string(ranks[i]);
  }
  return s;
}

// The manifest of what the ranks left, with every problem in its status.
struct Assembly {
  trace::RunManifest manifest;
  std::int64_t events = 0;
  std::vector<std::string> problems;
  std::string kept;  // "rank 0 (123 events), ..."
};

Assembly assemble(const CollectRequest& req, const std::string& library, const std::string& run_id,
                  const RunDirectory& dir, const ProcessResult& child) {
  Assembly a;
  trace::RunManifest& m = a.manifest;
  std::map<int, std::string> files = dir.rank_traces();
  std::vector<RankTrace> traces;
  int world = 0;
  for (const auto& [rank, path] : files) {
    traces.push_back(inspect_trace(path, rank));
    world = std::max({world, traces.back().world_size, rank + 1});
  }
  if (world == 0) world = requested_ranks(req.command);
  m.tool_version = model::tool_version();
  m.kind = "collect";
  m.command = req.command;
  m.ranks = world;
  m.run_id = run_id;
  m.hosts.assign(static_cast<std::size_t>(m.ranks), "");
  m.config["tracer"] = library;
  m.config["flush_ms"] = std::to_string(req.flush_ms);
  m.config["exit"] = child.describe();
  m.status.clear();
  if (!child.ok()) a.problems.push_back("the command " + child.describe());
  std::vector<int> missing;
  for (int r = 0; r < m.ranks; ++r) {
    if (files.count(r) == 0) missing.push_back(r);
  }
  if (!missing.empty()) a.problems.push_back(list_ranks("no trace from rank", missing));
  for (const auto& t : traces) {
    if (t.rank < m.ranks) m.hosts[static_cast<std::size_t>(t.rank)] = t.host;
    m.clock_residual_ns = std::max(m.clock_residual_ns, t.residual_ns);
    if (!t.error.empty()) {
      a.problems.push_back(t.error);
      continue;
    }
    // An empty id is a tracer older than run ids, not another run.
    if (!t.run_id.empty() && t.run_id != run_id) {
      a.problems.push_back("'" + t.file + "' belongs to another run (run_id '" + t.run_id + "')");
      continue;
    }
    m.traces.push_back(t.file);
    a.events += t.spans;
    a.kept += (a.kept.empty() ? "" : ", ") + std::string("rank ") + std::to_string(t.rank) + " (" +
              std::to_string(t.spans) + " events" +
              (t.repaired             ? ", cut short and repaired"
               : t.ended_by == "exit" ? ", no MPI_Finalize"
                                      : "") +
              ")";
    if (t.repaired)
      a.problems.push_back("rank " + std::to_string(t.rank) + "'s trace was cut short");
  }
  if (traces.empty() && child.ok()) {
    a.problems.push_back(
        "no rank wrote a trace: is the command an MPI program dynamically linked against the "
        "MPI library the tracer was built with?");
  }
  for (const auto& p : a.problems) m.status += (m.status.empty() ? "" : "; ") + p;
  if (m.status.empty()) m.status = "ok";
  return a;
}

}  // namespace

model::Expected<std::string> find_tracer_library() {
  return find_own_library(kLibraryEnv, kLibraryName,
                          {"../runtime/mpitrace", "../lib", ".", "../lib/dagsgd"}, "the MPI tracer",
                          "dagsgd-mpitrace");
}

std::vector<std::string> traced_command(const std::vector<std::string>& command,
                                        const std::string& library,
                                        std::vector<std::pair<std::string, std::string>>& env) {
  std::string preload = library;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') {
    preload += std::string(":") + old;
  }
  std::vector<std::string> argv = command;
  if (argv.empty() || !is_mpirun(argv[0])) {
    env.emplace_back("LD_PRELOAD", preload);
    return argv;
  }
  // mpirun itself is no MPI program: the tracer goes only to the ranks.
  std::vector<std::string> inject = {"-x", "LD_PRELOAD=" + preload};
  for (const auto& [k, v] : env) {
    inject.push_back("-x");
    inject.push_back(k + "=" + v);
  }
  argv.insert(argv.begin() + 1, inject.begin(), inject.end());
  return argv;
}

model::Expected<CollectResult> collect(const CollectRequest& req) {
  if (req.command.empty()) {
    return model::Error{
        "no command given after '--' (usage: dagsgd collect --out DIR [--force] -- mpirun -np 4 "
        "./prog args)"};
  }
  if (req.flush_ms < 0) return model::Error{"--flush-ms must be >= 0"};
  CollectResult result;
  auto library = find_tracer_library();
  if (!library.ok()) {
    result.failure = library.error().message;
    return result;
  }
  const std::string out = fs::absolute(req.out).lexically_normal().string();
  auto dir = RunDirectory::prepare(out, req.force, "--out", false);
  if (!dir) return dir.error();
  result.run_dir = out;

  const std::string run_id = make_run_id();
  std::vector<std::pair<std::string, std::string>> env = {
      {"DAGSGD_TRACE_DIR", out},
      {"DAGSGD_TRACE_FLUSH_MS", std::to_string(req.flush_ms)},
      {"DAGSGD_RUN_ID", run_id}};
  std::vector<std::string> argv = traced_command(req.command, *library, env);
  // Ctrl-C reaches the command from the terminal already; collect outlives it to clean up.
  ProcessOptions options;
  options.env = env;
  options.forward_sigint = false;
  ProcessResult child = run_process(argv, options);

  Assembly a = assemble(req, *library, run_id, *dir, child);
  result.events = a.events;
  if (!a.problems.empty() && dir->rank_traces().empty()) {
    // No rank wrote anything: no manifest, and no directory if this run made it.
    dir->discard_if_empty();
    result.run_dir.clear();
    result.failure = a.manifest.status + "; traces kept: none";
    return result;
  }
  if (auto w = trace::write_manifest(out, a.manifest); !w.ok()) {
    result.failure = w.error().message;
    return result;
  }
  result.manifest = std::move(a.manifest);
  if (!a.problems.empty()) {
    result.failure = result.manifest.status + "; traces kept: " + a.kept +
                     "; partial run directory '" + out + "'";
  }
  return result;
}

}  // namespace dagsgd::runtime
