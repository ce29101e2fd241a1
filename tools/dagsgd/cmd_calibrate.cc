// `dagsgd calibrate LOG`: fits a link's alpha, beta and eager/rendezvous step to an allreduce
// micro-benchmark log and prints (or writes) a fabric entry for --fabric-file; with --stack, fits
// the software stack's parameters on a known link instead (transfer calibration).
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/format.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/reports/calibrate_report.h"
#include "dagsgd/sim/calibrate.h"
#include "dagsgd/sim/calibrate_trace.h"

namespace dagsgd::tools {
namespace {

struct CalibrateFlags {
  std::vector<std::string> logs;
  std::string trace;  // a traced run whose collectives stand for the logs
  int ranks = 0;
  std::string algorithm = "ring";
  std::string name;
  std::string description;
  std::string scope = "inter";
  double nominal_gbps = 0;
  bool no_step = false;
  bool no_measured = false;
  std::string statistic = "auto";
  bool json = false;
  std::string out;
  bool force = false;
  // Transfer calibration.
  std::string stack;
  std::string link;
  std::string fabric_file;
  int ranks_per_node = 1;
  std::string call = "allreduce";
  const CLI::App* app = nullptr;
  bool given(const char* flag) const { return app != nullptr && app->count(flag) > 0; }
};

// The command that reproduces this fit (a fabric fit, or with --stack a transfer calibration),
// for the written entry's source field.
std::string command_line(const CalibrateFlags& f, const std::vector<int>& ranks) {
  std::string cmd = "dagsgd calibrate";
  for (const auto& log : f.logs) cmd += " " + log;
  if (!f.trace.empty()) cmd += " --trace " + f.trace;
  if (ranks.size() == 1) cmd += " --ranks " + std::to_string(ranks.front());
  if (f.stack.empty()) {
    cmd += " --algorithm " + f.algorithm;
  } else {
    cmd += " --link " + f.link + " --stack " + f.stack;
    if (f.trace.empty() || f.given("--call")) cmd += " --call " + f.call;
    if (f.ranks_per_node != 1) cmd += " --ranks-per-node " + std::to_string(f.ranks_per_node);
  }
  if (f.statistic != "auto") cmd += " --statistic " + f.statistic;
  if (f.no_step) cmd += " --no-step";
  return cmd;
}

model::Expected<void> check_stack_flags(const CalibrateFlags& f) {
  if (f.link.empty()) {
    return model::Error{
        "calibrate: --stack needs --link, the fabric the benchmark crossed (its rate and "
        "latency are known; the stack is what the log adds to them)"};
  }
  for (const char* flag : {"--algorithm", "--scope", "--nominal-gbps", "--no-measured"}) {
    if (f.given(flag)) {
      return model::Error{std::string("calibrate: ") + flag +
                          " applies to a fabric fit, not to a stack fit (--stack)"};
    }
  }
  const model::NameRegistry calls("call", {"allreduce", "iallreduce", "iallreduce_in_place"});
  if (auto ok = calls.check(f.call); !ok) return model::with_context("--call", ok.error());
  return model::ok();
}

model::Expected<void> check_flags(const CalibrateFlags& f) {
  if (!f.stack.empty()) {
    if (auto ok = check_stack_flags(f); !ok) return ok;
  } else {
    for (const char* flag : {"--link", "--call", "--ranks-per-node", "--fabric-file"}) {
      if (f.given(flag)) {
        return model::Error{std::string("calibrate: ") + flag +
                            " applies to a stack fit: give --stack NAME|FILE"};
      }
    }
  }
  const model::NameRegistry algorithms("algorithm", model::calibration_algorithm_names());
  if (!algorithms.contains(f.algorithm)) {
    return model::Error{"calibrate: unknown --algorithm '" + f.algorithm +
                        "'; valid algorithms: " + algorithms.list()};
  }
  if (f.scope != "intra" && f.scope != "inter" && f.scope != "both") {
    return model::Error{"calibrate: unknown --scope '" + f.scope +
                        "'; valid scopes: intra, inter, both"};
  }
  if (f.ranks != 0 && f.logs.size() > 1) {
    return model::Error{
        "calibrate: --ranks applies to one log; with several, each file name (allreduce4.log "
        "-> 4) or log gives its rank count"};
  }
  if (f.statistic != "auto" && f.statistic != "avg" && f.statistic != "max") {
    return model::Error{"calibrate: unknown --statistic '" + f.statistic +
                        "'; valid: auto, avg, max"};
  }
  return model::ok();
}

// Reads every log, saying where each rank count came from.
model::Expected<std::vector<sim::BenchmarkLog>> read_logs(const CalibrateFlags& f) {
  const auto statistic = f.statistic == "max"   ? sim::LatencyStatistic::kMax
                         : f.statistic == "avg" ? sim::LatencyStatistic::kAvg
                                                : sim::LatencyStatistic::kAuto;
  std::vector<sim::BenchmarkLog> logs;
  for (const auto& path : f.logs) {
    auto log = sim::read_benchmark_log(path, f.ranks, statistic);
    if (!log) return log.error();
    const int p = log->series.ranks;
    switch (log->ranks_from) {
      case sim::RanksFrom::kUnknown:
        return model::Error{"calibrate: --ranks not given and neither the file name '" + path +
                            "' nor the log states a rank count; pass --ranks P"};
      case sim::RanksFrom::kFileName:
        print_note("dagsgd: note: --ranks not given; using " + std::to_string(p) +
                   " from the file name '" + path + "'\n");
        break;
      case sim::RanksFrom::kLog:
        print_note("dagsgd: note: --ranks not given; using " + std::to_string(p) + " as the log '" +
                   path + "' states\n");
        break;
      case sim::RanksFrom::kGiven:
        break;
    }
    if (log->log.ranks && *log->log.ranks != p) {
      print_note("dagsgd: warning: the log '" + path + "' states " +
                 std::to_string(*log->log.ranks) + " ranks, calibrating for " + std::to_string(p) +
                 "\n");
    }
    if (log->zero_sized > 0) {
      print_note("dagsgd: note: '" + path + "': skipped " + std::to_string(log->zero_sized) +
                 " zero-byte row(s)\n");
    }
    if (!logs.empty() && log->max != logs.front().max) {
      return model::Error{"calibrate: '" + path + "' has " + (log->max ? "a" : "no") +
                          " Max Latency(us) column and an earlier log has " +
                          (log->max ? "none" : "one") + "; pass --statistic avg"};
    }
    logs.push_back(std::move(*log));
  }
  return logs;
}

// --trace: the run's own collectives (sim/calibrate_trace.h) as the logs.
model::Expected<std::vector<sim::BenchmarkLog>> trace_logs(const CalibrateFlags& f) {
  auto t = sim::read_trace_collectives(f.trace);
  if (!t) return t.error();
  print_note("dagsgd: note: '" + f.trace + "': " + std::to_string(t->used) +
             " allreduces alone in flight; left out " + std::to_string(t->overlapped) +
             " overlapping another, " + std::to_string(t->warmup) + " in the warm-up\n");
  return std::move(t->logs);
}

constexpr const char* kHelp =
    "Fit a link's alpha, beta and eager/rendezvous step to an allreduce micro-benchmark log "
    "(OSU or nccl-tests) and print a fabric entry for --fabric-file; with --stack and --link, "
    "fit the software stack above a known link and print a stack file for --stack";

int run_stack_calibration(const CalibrateFlags& f, const std::vector<sim::BenchmarkLog>& logs,
                          const std::vector<int>& ranks) {
  auto base = model::load_stack(f.stack);
  if (!base) return report_error(base.error().message);
  auto catalog = model::HardwareCatalog::load_default();
  if (!catalog) return report_error(catalog.error().message, kExitFailure);
  if (!f.fabric_file.empty()) {
    if (auto added = catalog->add_fabric_file(f.fabric_file); !added) {
      return report_error(added.error().message);
    }
  }
  auto link = catalog->fabric(f.link);
  if (!link) return report_error(model::with_context("--link", link.error()).message);
  sim::StackSettings settings;
  settings.setup.ranks_per_node = f.ranks_per_node;
  settings.setup.call = f.call;
  // A trace's collectives are the framework's calls.
  if (!f.trace.empty() && !f.given("--call") && base->framework) {
    settings.setup.call = base->framework->call;
  }
  settings.fit_step = !f.no_step;
  settings.name = f.name;
  settings.description = f.description;
  settings.command = command_line(f, ranks);
  // Only the link the benchmark crossed prices its algorithms (calibrate_stack refuses a layout
  // whose algorithm uses both), so it stands for both classes.
  auto c = sim::calibrate_stack_logs(logs, *link, *link, *base, settings);
  if (!c) return report_error(c.error().message);
  if (!f.out.empty()) {
    auto w = model::write_file(f.out, model::stack_to_json(c->fit.stack) + "\n", f.force);
    if (!w) return report_error(w.error().message);
  }
  const auto inputs = f.trace.empty() ? f.logs : std::vector<std::string>{f.trace};
  print(f.json ? reports::stack_calibration_json(*c, inputs, f.out)
               : reports::stack_calibration_text(*c, f.out));
  return kExitOk;
}

int run_calibrate(const CalibrateFlags& f) {
  if (auto ok = check_flags(f); !ok) return report_error(ok.error().message);
  if (f.logs.empty() == f.trace.empty() || (!f.trace.empty() && f.stack.empty())) {
    return report_error("calibrate: give benchmark LOGs, or --trace RUN with --stack");
  }
  auto logs = f.trace.empty() ? read_logs(f) : trace_logs(f);
  if (!logs) return report_error(logs.error().message);
  std::vector<int> ranks;
  for (const auto& l : *logs) ranks.push_back(l.series.ranks);
  if (!f.stack.empty()) return run_stack_calibration(f, *logs, ranks);
  sim::EntrySettings settings;
  settings.algorithm = f.algorithm;
  settings.fit_step = !f.no_step;
  settings.name = f.name;
  settings.description = f.description;
  settings.scope = f.scope;
  settings.nominal_bytes_per_s = f.nominal_gbps * (1e9 / 8);
  settings.keep_measured = !f.no_measured;
  settings.command = command_line(f, ranks);
  auto c = sim::calibrate_logs(*logs, settings);
  if (!c) return report_error(c.error().message);
  const double gbps = c->fit.bandwidth() / (1e9 / 8);
  if (f.nominal_gbps > 0 && gbps > f.nominal_gbps) {
    print_note("dagsgd: warning: fitted bandwidth " + model::fmt("%.3g", gbps) +
               " Gbit/s exceeds --nominal-gbps " + model::fmt("%.3g", f.nominal_gbps) +
               "; the entry uses the fit as nominal (does the log match --algorithm?)\n");
  }
  if (!f.out.empty()) {
    auto w = model::write_file(f.out, model::fabric_to_json(c->fabric) + "\n", f.force);
    if (!w) return report_error(w.error().message);
  }
  print(f.json ? reports::calibration_json(*c, f.logs, f.algorithm, f.out)
               : reports::calibration_text(*c, f.algorithm, f.no_step, f.out));
  return kExitOk;
}

}  // namespace

void add_calibrate(CLI::App& root, Action& action) {
  auto [cmd, flags] = add_command<CalibrateFlags>(root, action, "calibrate", kHelp, run_calibrate);
  flags->app = cmd;
  cmd->add_option("logs", flags->logs,
                  "benchmark logs (OSU '# Size Avg Latency(us)' or nccl-tests); several logs "
                  "(one per rank count) are fitted together");
  cmd->add_option("--trace", flags->trace,
                  "with --stack: fit to a traced run's own allreduces instead (those alone in "
                  "flight after the warm-up; --call defaults to the stack framework's call)");
  cmd->add_option("--ranks", flags->ranks,
                  "ranks of the allreduce, for one log (default: the trailing number of the file "
                  "name, e.g. allreduce4.log -> 4, or the count the log states)")
      ->check(worker_count());
  cmd->add_option("--algorithm", flags->algorithm,
                  "the formula to fit: " +
                      model::NameRegistry("", model::calibration_algorithm_names()).list() +
                      " (default ring)");
  cmd->add_option("--name", flags->name,
                  "the fabric entry's name (default: the logs' file stems joined by '+')");
  cmd->add_option("--description", flags->description,
                  "what the link is (the entry's description says what was fitted after it)");
  cmd->add_option("--scope", flags->scope, "the entry's scope: intra, inter (default) or both");
  cmd->add_option("--nominal-gbps", flags->nominal_gbps,
                  "the link's line rate in Gbit/s for the entry (default: the fitted bandwidth)")
      ->check(positive_finite());
  cmd->add_flag("--no-step", flags->no_step, "fit alpha and beta only, without a step");
  cmd->add_option("--statistic", flags->statistic,
                  "which latency to use: max (the slowest rank; a replayed collective ends when "
                  "its last rank has the result), avg, or auto (default: max when the log has a "
                  "'Max Latency(us)' column, as OSU's -f table and dagsgd-allreduce-bench do)");
  cmd->add_flag(
      "--no-measured", flags->no_measured,
      "leave the log's latencies out of the entry (by default they are kept as "
      "'allreduce_measured' and price allreduces of that rank count in place of the fit)");
  cmd->add_option("--stack", flags->stack,
                  "transfer calibration: fit this software stack's library parameters (" +
                      model::bundled_stacks().list() +
                      ", or a stack file) on the known --link and write a stack file for "
                      "--stack FILE on predict, whatif and replay (docs/communication.md)");
  cmd->add_option("--link", flags->link,
                  "with --stack: the fabric the benchmark crossed (a catalog name, or one of "
                  "--fabric-file)");
  cmd->add_option("--fabric-file", flags->fabric_file, "with --stack: extra fabric definitions")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ranks-per-node", flags->ranks_per_node,
                  "with --stack: the benchmark's ranks per node (default 1: every rank on its "
                  "own node; equal to the rank count: one node)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--call", flags->call,
                  "with --stack: the call the benchmark timed: allreduce (OSU osu_allreduce, "
                  "nccl-tests; default), iallreduce, iallreduce_in_place");
  cmd->add_flag("--json", flags->json, "print the fit, residuals and entry as JSON");
  cmd->add_option("--out", flags->out,
                  "write the fabric entry (with --stack: the stack file) to this file");
  cmd->add_flag("--force", flags->force, "let --out replace an existing file");
}

}  // namespace dagsgd::tools
