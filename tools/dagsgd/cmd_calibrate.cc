// `dagsgd calibrate LOG`: fits a link's alpha, beta and eager/rendezvous step to an allreduce
// micro-benchmark log and prints (or writes) a fabric entry for --fabric-file.
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/format.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/reports/calibrate_report.h"
#include "dagsgd/sim/calibrate.h"

namespace dagsgd::tools {
namespace {

struct CalibrateFlags {
  std::vector<std::string> logs;
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
};

// The command that reproduces this fit, for the entry's source field.
std::string command_line(const CalibrateFlags& f, const std::vector<int>& ranks) {
  std::string cmd = "dagsgd calibrate";
  for (const auto& log : f.logs) cmd += " " + log;
  if (ranks.size() == 1) cmd += " --ranks " + std::to_string(ranks.front());
  cmd += " --algorithm " + f.algorithm;
  if (f.statistic != "auto") cmd += " --statistic " + f.statistic;
  if (f.no_step) cmd += " --no-step";
  return cmd;
}

model::Expected<void> check_flags(const CalibrateFlags& f) {
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

constexpr const char* kHelp =
    "Fit a link's alpha, beta and eager/rendezvous step to an allreduce micro-benchmark log "
    "(OSU or nccl-tests) and print a fabric entry for --fabric-file";

int run_calibrate(const CalibrateFlags& f) {
  if (auto ok = check_flags(f); !ok) return report_error(ok.error().message);
  auto logs = read_logs(f);
  if (!logs) return report_error(logs.error().message);
  std::vector<int> ranks;
  for (const auto& l : *logs) ranks.push_back(l.series.ranks);
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
  cmd->add_option("logs", flags->logs,
                  "benchmark logs (OSU '# Size Avg Latency(us)' or nccl-tests); several logs "
                  "(one per rank count) are fitted together")
      ->required();
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
  cmd->add_flag("--json", flags->json, "print the fit, residuals and entry as JSON");
  cmd->add_option("--out", flags->out, "write the fabric entry to this file");
  cmd->add_flag("--force", flags->force, "let --out replace an existing file");
}

}  // namespace dagsgd::tools
