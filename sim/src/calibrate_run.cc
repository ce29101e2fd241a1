// A calibration from names (calibrate_run.h): the settings checked, the logs read and the fit.
#include "dagsgd/sim/calibrate_run.h"

#include <algorithm>

#include "dagsgd/model/format.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/sim/calibrate_trace.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;

namespace {

bool given(const CalibrationRequest& r, const std::string& name) {
  return std::find(r.given.begin(), r.given.end(), name) != r.given.end();
}

// The settings that belong to one kind of fit and were given for the other.
Expected<void> check_kind(const CalibrationRequest& r) {
  if (r.stack.empty()) {
    for (const char* name : {"--link", "--call", "--ranks-per-node", "--fabric-file"}) {
      if (given(r, name)) {
        return Error{"calibrate: " + std::string(name) +
                     " applies to a stack fit: give --stack NAME|FILE"};
      }
    }
    return model::ok();
  }
  if (r.link.empty()) {
    return Error{
        "calibrate: --stack needs --link, the fabric the benchmark crossed (its rate and latency "
        "are known; the stack "
        "is what the log adds to them)"};
  }
  for (const char* name : {"--algorithm", "--scope", "--nominal-gbps", "--no-measured"}) {
    if (given(r, name)) {
      return Error{"calibrate: " + std::string(name) +
                   " applies to a fabric fit, not to a stack fit (--stack)"};
    }
  }
  const model::NameRegistry calls("call", {"allreduce", "iallreduce", "iallreduce_in_place"});
  if (auto ok = calls.check(r.call); !ok) return model::with_context("--call", ok.error());
  return model::ok();
}

Expected<void> check_request(const CalibrationRequest& r) {
  DAGSGD_TRY(check_kind(r));
  const model::NameRegistry algorithms("algorithm", model::calibration_algorithm_names());
  if (!algorithms.contains(r.algorithm)) {
    return Error{"calibrate: unknown --algorithm '" + r.algorithm +
                 "'; valid algorithms: " + algorithms.list()};
  }
  if (r.scope != "intra" && r.scope != "inter" && r.scope != "both") {
    return Error{"calibrate: unknown --scope '" + r.scope + "'; valid scopes: intra, inter, both"};
  }
  if (r.ranks != 0 && r.logs.size() > 1) {
    return Error{
        "calibrate: --ranks applies to one log; with several, each file name (allreduce4.log -> 4) "
        "or log "
        "gives its rank count"};
  }
  if (r.statistic != "auto" && r.statistic != "avg" && r.statistic != "max") {
    return Error{"calibrate: unknown --statistic '" + r.statistic + "'; valid: auto, avg, max"};
  }
  if (r.logs.empty() == r.trace.empty() || (!r.trace.empty() && r.stack.empty())) {
    return Error{"calibrate: give benchmark LOGs, or --trace RUN with --stack"};
  }
  return model::ok();
}

// A traced run's own collectives as the logs.
Expected<std::vector<BenchmarkLog>> trace_logs(const CalibrationRequest& r,
                                               std::vector<std::string>& notes) {
  auto t = read_trace_collectives(r.trace);
  if (!t) return t.error();
  notes.push_back("note: '" + r.trace + "': " + std::to_string(t->used) +
                  " allreduces alone in flight; left out " + std::to_string(t->overlapped) +
                  " overlapping another, " + std::to_string(t->warmup) + " in the warm-up");
  return std::move(t->logs);
}

// Reads every log, saying where each rank count came from.
Expected<std::vector<BenchmarkLog>> read_logs(const CalibrationRequest& r,
                                              std::vector<std::string>& notes) {
  const auto statistic = r.statistic == "max"   ? LatencyStatistic::kMax
                         : r.statistic == "avg" ? LatencyStatistic::kAvg
                                                : LatencyStatistic::kAuto;
  std::vector<BenchmarkLog> logs;
  for (const auto& path : r.logs) {
    auto log = read_benchmark_log(path, r.ranks, statistic);
    if (!log) return log.error();
    const std::string p = std::to_string(log->series.ranks);
    switch (log->ranks_from) {
      case RanksFrom::kUnknown:
        return Error{"calibrate: --ranks not given and neither the file name '" + path +
                     "' nor the log states a rank count; pass --ranks P"};
      case RanksFrom::kFileName:
        notes.push_back("note: --ranks not given; using " + p + " from the file name '" + path +
                        "'");
        break;
      case RanksFrom::kLog:
        notes.push_back("note: --ranks not given; using " + p + " as the log '" + path +
                        "' states");
        break;
      case RanksFrom::kGiven:
        break;
    }
    if (log->log.ranks && *log->log.ranks != log->series.ranks) {
      notes.push_back("warning: the log '" + path + "' states " + std::to_string(*log->log.ranks) +
                      " ranks, calibrating for " + p);
    }
    if (log->zero_sized > 0) {
      notes.push_back("note: '" + path + "': skipped " + std::to_string(log->zero_sized) +
                      " zero-byte row(s)");
    }
    if (!logs.empty() && log->max != logs.front().max) {
      return Error{"calibrate: '" + path + "' has " + (log->max ? "a" : "no") +
                   " Max Latency(us) column and an earlier log has " + (log->max ? "none" : "one") +
                   "; pass --statistic avg"};
    }
    logs.push_back(std::move(*log));
  }
  return logs;
}

Expected<StackLogCalibration> fit_stack(const CalibrationRequest& r,
                                        const std::vector<BenchmarkLog>& logs,
                                        const model::HardwareCatalog& catalog,
                                        const std::string& command) {
  auto base = model::load_stack(r.stack);
  if (!base) return base.error();
  model::HardwareCatalog fabrics = catalog;
  if (!r.fabric_file.empty()) DAGSGD_TRY(fabrics.add_fabric_file(r.fabric_file));
  auto link = fabrics.fabric(r.link);
  if (!link) return model::with_context("--link", link.error());
  StackSettings settings;
  settings.setup.ranks_per_node = r.ranks_per_node;
  settings.setup.call = r.call;
  // A trace's collectives are the framework's calls.
  if (!r.trace.empty() && !given(r, "--call") && base->framework) {
    settings.setup.call = base->framework->call;
  }
  settings.fit_step = !r.no_step;
  settings.name = r.name;
  settings.description = r.description;
  settings.command = command;
  // Only the link the benchmark crossed prices its algorithms (calibrate_stack refuses a layout
  // whose algorithm uses both), so it stands for both classes.
  return calibrate_stack_logs(logs, *link, *link, *base, settings);
}

Expected<LogCalibration> fit_fabric(const CalibrationRequest& r,
                                    const std::vector<BenchmarkLog>& logs,
                                    const std::string& command, std::vector<std::string>& notes) {
  EntrySettings settings;
  settings.algorithm = r.algorithm;
  settings.fit_step = !r.no_step;
  settings.name = r.name;
  settings.description = r.description;
  settings.scope = r.scope;
  settings.nominal_bytes_per_s = r.nominal_gbps * (1e9 / 8);
  settings.keep_measured = !r.no_measured;
  settings.command = command;
  auto c = calibrate_logs(logs, settings);
  if (!c) return c.error();
  const double gbps = c->fit.bandwidth() / (1e9 / 8);
  if (r.nominal_gbps > 0 && gbps > r.nominal_gbps) {
    notes.push_back(
        "warning: fitted bandwidth " + model::fmt("%.3g", gbps) +
        " Gbit/s exceeds --nominal-gbps " + model::fmt("%.3g", r.nominal_gbps) +
        (settings.keep_measured
             ? "; the entry keeps it as the line rate and caps the fitted bandwidth there (its "
               "measured curves price the collectives)"
             : "; the entry uses the fit as nominal") +
        " (does the log match --algorithm?)");
  }
  return c;
}

// The command that reproduces the request's fit, for the written entry's sources.
std::string calibration_command(const CalibrationRequest& r, const std::vector<int>& ranks) {
  std::string cmd = "dagsgd calibrate";
  for (const auto& log : r.logs) cmd += " " + log;
  if (!r.trace.empty()) cmd += " --trace " + r.trace;
  if (ranks.size() == 1) cmd += " --ranks " + std::to_string(ranks.front());
  if (r.stack.empty()) {
    cmd += " --algorithm " + r.algorithm;
  } else {
    cmd += " --link " + r.link + " --stack " + r.stack;
    if (r.trace.empty() || given(r, "--call")) cmd += " --call " + r.call;
    if (r.ranks_per_node != 1) cmd += " --ranks-per-node " + std::to_string(r.ranks_per_node);
  }
  if (r.statistic != "auto") cmd += " --statistic " + r.statistic;
  if (r.no_step) cmd += " --no-step";
  return cmd;
}

}  // namespace

std::string CalibrationRun::entry_json() const {
  return stack ? model::stack_to_json(stack->fit.stack) : model::fabric_to_json(fabric->fabric);
}

Expected<CalibrationRun> run_calibration(const CalibrationRequest& request,
                                         const model::HardwareCatalog& catalog,
                                         std::vector<std::string>& notes) {
  DAGSGD_TRY(check_request(request));
  CalibrationRun run;
  auto logs = request.trace.empty() ? read_logs(request, notes) : trace_logs(request, notes);
  if (!logs) return logs.error();
  run.logs = std::move(*logs);
  std::vector<int> ranks;
  for (const auto& l : run.logs) ranks.push_back(l.series.ranks);
  const std::string command = calibration_command(request, ranks);
  if (!request.stack.empty()) {
    auto c = fit_stack(request, run.logs, catalog, command);
    if (!c) return c.error();
    run.stack = std::move(*c);
  } else {
    auto c = fit_fabric(request, run.logs, command, notes);
    if (!c) return c.error();
    run.fabric = std::move(*c);
  }
  return run;
}

}  // namespace dagsgd::sim
