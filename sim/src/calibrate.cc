// Fabric calibration from benchmark logs (calibrate.h).
#include "dagsgd/sim/calibrate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "dagsgd/model/format.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;

namespace {

// "allreduce4.log" -> 4: the trailing number of the file name without its extensions.
std::optional<int> ranks_from_file_name(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  stem = stem.substr(0, stem.find('.'));
  std::size_t start = stem.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(stem[start - 1])) != 0) --start;
  if (start == stem.size() || stem.size() - start > 6) return std::nullopt;
  return std::stoi(stem.substr(start));
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::string file_stem(const std::string& path) {
  const std::string name = file_name(path);
  return name.substr(0, name.find('.'));
}

}  // namespace

Expected<BenchmarkLog> read_benchmark_log(const std::string& path, int ranks,
                                          LatencyStatistic statistic) {
  auto log = trace::read_latency_log(path);
  if (!log) return log.error();
  const bool has_max = std::all_of(
      log->points.begin(), log->points.end(),
      [](const trace::LatencyPoint& p) { return p.bytes == 0 || p.max_latency_us >= 0; });
  if (statistic == LatencyStatistic::kMax && !has_max) {
    return Error{"log '" + path +
                 "' has no 'Max Latency(us)' column (OSU's full table, osu_allreduce -f)"};
  }
  BenchmarkLog out;
  out.path = path;
  out.max =
      statistic == LatencyStatistic::kMax || (statistic == LatencyStatistic::kAuto && has_max);
  out.series.ranks = ranks;
  out.ranks_from = RanksFrom::kGiven;
  if (ranks == 0) {
    if (auto from_name = ranks_from_file_name(path)) {
      out.series.ranks = *from_name;
      out.ranks_from = RanksFrom::kFileName;
    } else if (log->ranks) {
      out.series.ranks = *log->ranks;
      out.ranks_from = RanksFrom::kLog;
    } else {
      out.ranks_from = RanksFrom::kUnknown;
    }
  }
  if (out.ranks_from != RanksFrom::kUnknown && out.series.ranks < 2) {
    return Error{"log '" + path + "': ranks must be at least 2, got " +
                 std::to_string(out.series.ranks)};
  }
  for (const auto& p : log->points) {
    if (p.bytes == 0) {
      ++out.zero_sized;
      continue;
    }
    const double us = out.max ? p.max_latency_us : p.latency_us;
    if (!(us > 0)) {
      return Error{"log '" + path + "': line " + std::to_string(p.line) +
                   ": latency must be > 0 to calibrate"};
    }
    out.series.points.push_back({p.bytes, us * 1e3});
  }
  out.log = std::move(*log);
  return out;
}

std::vector<model::MeasuredAllreduce> measured_curves(const std::vector<BenchmarkLog>& logs) {
  struct Acc {
    double avg = 0;
    double max = 0;
    double min = 0;
    int n = 0;
    bool has_max = true;
    bool has_min = true;
  };
  std::map<int, std::map<model::Bytes, Acc>> by_ranks;
  for (const auto& l : logs) {
    for (const auto& p : l.log.points) {
      if (p.bytes == 0) continue;
      Acc& a = by_ranks[l.series.ranks][p.bytes];
      a.avg += p.latency_us * 1e3;
      a.max += p.max_latency_us * 1e3;
      a.min += p.min_latency_us * 1e3;
      // Back to back, Min and Max are the ranks' means over a stream: no per-call tail, and
      // not the rank that has its result first (the root of a rooted algorithm).
      a.has_max = a.has_max && !l.log.back_to_back && p.max_latency_us >= p.latency_us;
      a.has_min = a.has_min && !l.log.back_to_back && p.min_latency_us >= 0 &&
                  p.min_latency_us <= p.latency_us;
      ++a.n;
    }
  }
  std::vector<model::MeasuredAllreduce> out;
  for (const auto& [ranks, sizes] : by_ranks) {
    // A curve prices collectives of two ranks or more, as a fabric file's loader requires.
    if (sizes.size() < 2 || ranks < 2) continue;
    model::MeasuredAllreduce m;
    m.ranks = ranks;
    bool has_max = true;
    bool has_min = true;
    for (const auto& [bytes, a] : sizes) {
      m.points.emplace_back(bytes, std::llround(a.avg / a.n));
      // Each log's Max is at least its Avg (has_max); the means keep that, and so must the
      // rounding to nanoseconds.
      m.slowest.push_back(
          std::max<model::Nanos>(m.points.back().second, std::llround(a.max / a.n)));
      m.fastest.push_back(
          std::min<model::Nanos>(m.points.back().second, std::llround(a.min / a.n)));
      has_max = has_max && a.has_max;
      has_min = has_min && a.has_min;
    }
    if (!has_max) m.slowest.clear();
    if (!has_min) m.fastest.clear();
    out.push_back(std::move(m));
  }
  return out;
}

namespace {

// The collective a log's benchmark line names when it is not allreduce, "" when it is allreduce
// or the line does not say (a table without the line, the runtime's own benchmark, a trace):
// OSU's "OSU MPI[-CUDA] [Non-blocking ]<Name> Latency Test vX" (osu_latency's is "OSU MPI
// Latency Test": point to point) and nccl-tests' "Collective test starting: <name>_perf".
std::string other_collective(const std::string& benchmark) {
  std::string b = benchmark;
  for (char& c : b) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string name;
  if (b.rfind("osu mpi", 0) == 0) {
    const auto end = b.find(" latency test");
    if (end == std::string::npos) return "";
    auto start = b.find(' ', 7);  // past "OSU MPI" and a "-CUDA"-like suffix
    start = start == std::string::npos || start >= end ? end : start + 1;
    name = b.substr(start, end - start);
    if (name.rfind("non-blocking ", 0) == 0) name.erase(0, 13);
    if (name.empty()) name = "point-to-point";
  } else if (const auto at = b.find("collective test starting:"); at != std::string::npos) {
    std::istringstream in(b.substr(at + 25));
    in >> name;
    name = std::filesystem::path(name).filename().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, "_perf") == 0) {
      name.erase(name.size() - 5);
    }
    if (name == "all_reduce") return "";
  }
  return name == "allreduce" ? "" : name;
}

// The logs' series, and what the reports say about them (`out`'s ranks, sizes, benchmark, max).
template <typename Calibration>
Expected<std::vector<model::TimingSeries>> gather(const std::vector<BenchmarkLog>& logs,
                                                  Calibration& out) {
  if (logs.empty()) return Error{"calibrate: no benchmark logs"};
  std::vector<model::TimingSeries> series;
  for (const auto& l : logs) {
    if (const std::string other = other_collective(l.log.benchmark); !other.empty()) {
      return Error{"log '" + l.path + "': its header '" + l.log.benchmark + "' times " + other +
                   ", not allreduce; calibrate fits allreduce latencies (osu_allreduce, "
                   "osu_iallreduce, nccl-tests all_reduce_perf, dagsgd-allreduce-bench)"};
    }
    if (l.series.ranks < 2) return Error{"log '" + l.path + "': its rank count is not known"};
    if (l.max != logs.front().max) {
      return Error{"log '" + l.path + "' has " + (l.max ? "a" : "no") +
                   " Max Latency(us) column and an earlier log has " + (l.max ? "none" : "one")};
    }
    if (out.benchmark.empty()) {
      out.benchmark = l.log.benchmark.empty() ? l.log.format : l.log.benchmark;
    }
    out.ranks.push_back(l.series.ranks);
    out.sizes += (out.sizes.empty() ? "" : ", ") + std::to_string(l.series.points.size()) +
                 " sizes of '" + file_name(l.path) + "' (p=" + std::to_string(l.series.ranks) + ")";
    series.push_back(l.series);
  }
  out.max = logs.front().max;
  return series;
}

// What a fit's errors are prefixed with: the one log, or "logs".
std::string where_of(const std::vector<BenchmarkLog>& logs) {
  return logs.size() == 1 ? "log '" + logs.front().path + "'" : "logs";
}

// Gathers the logs into `out` and fits their series with `fit` into out.fit.
template <typename Calibration, typename Fit>
Expected<void> fit_logs(const std::vector<BenchmarkLog>& logs, Calibration& out, const Fit& fit) {
  auto series = gather(logs, out);
  if (!series) return series.error();
  auto result = fit(*series);
  if (!result) return model::with_context(where_of(logs), result.error());
  out.fit = std::move(*result);
  return model::ok();
}

// " (rms relative error 1.2%, max 3.4%)", for a fitted value's source.
template <typename Fit>
std::string fit_errors(const Fit& fit) {
  return " (rms relative error " + model::fmt("%.1f", fit.rms_relative * 100) + "%, max " +
         model::fmt("%.1f", fit.max_relative_error * 100) + "%)";
}

}  // namespace

Expected<LogCalibration> calibrate_logs(const std::vector<BenchmarkLog>& logs,
                                        const EntrySettings& settings) {
  LogCalibration out;
  model::CalibrationOptions options;
  options.algorithm = settings.algorithm;
  options.fit_step = settings.fit_step;
  DAGSGD_TRY(fit_logs(logs, out, [&options](const std::vector<model::TimingSeries>& series) {
    return model::calibrate_allreduce(series, options);
  }));

  std::string name = settings.name;
  if (name.empty()) {
    for (const auto& l : logs) name += (name.empty() ? "" : "+") + file_stem(l.path);
  }
  const std::string fitted = settings.algorithm + " allreduce formula fitted to " + out.sizes +
                             ", " + out.benchmark + (out.max ? ", max latency" : "");
  const std::string description = settings.description.empty()
                                      ? "fitted link: " + fitted
                                      : settings.description + "; " + fitted;
  const std::string source = settings.command + fit_errors(out.fit);
  auto fabric = model::fabric_from_calibration(out.fit, name, settings.scope, description, source,
                                               settings.nominal_bytes_per_s);
  if (!fabric) return model::with_context(where_of(logs), fabric.error());
  out.fabric = std::move(*fabric);
  if (settings.keep_measured) {
    out.fabric.measured_allreduce = measured_curves(logs);
    // The curves grow beyond their largest size as the fitted formula does; a ring fit keeps the
    // default (what `auto` picks), which every entry written before the key had.
    if (settings.algorithm != "ring") {
      for (auto& c : out.fabric.measured_allreduce) c.algorithm = settings.algorithm;
    }
    // A formula fit above the stated line rate says the library does not run that formula's
    // algorithm (or the link passed a burst), not that the wire is faster. With the curves
    // kept they price each collective, and the line rate is what collectives in flight share
    // (model::link_capacity), so it stays as stated and the formula's bandwidth is capped at it.
    const double line = settings.nominal_bytes_per_s;
    if (line > 0 && out.fabric.achievable_bandwidth > line) {
      out.fabric.source += "; the fit's " +
                           model::fmt("%.4g", out.fabric.achievable_bandwidth * 8 / 1e9) +
                           " Gbit/s capped at the stated line rate";
      out.fabric.achievable_bandwidth = line;
      out.fabric.nominal_bandwidth = line;
    }
  }
  // What calibrate writes must load as --fabric-file loads it (every range of docs/limits.md):
  // a fit or a log that gives a number outside them is an error here, not a file that fails later.
  model::HardwareCatalog check;
  if (auto loads = check.add_fabric_json(model::fabric_to_json(out.fabric), "the fitted entry");
      !loads) {
    return model::Error{where_of(logs) + ": the fitted fabric would not load as a fabric file (" +
                        loads.error().message + ")"};
  }
  return out;
}

Expected<StackLogCalibration> calibrate_stack_logs(const std::vector<BenchmarkLog>& logs,
                                                   const model::FabricSpec& intra,
                                                   const model::FabricSpec& inter,
                                                   const model::StackSpec& base,
                                                   const StackSettings& settings) {
  StackLogCalibration out;
  model::StackCalibrationOptions options;
  options.setup = settings.setup;
  options.fit_step = settings.fit_step;
  DAGSGD_TRY(fit_logs(logs, out, [&](const std::vector<model::TimingSeries>& series) {
    return model::calibrate_stack(series, model::LinkCost::from_fabric(intra),
                                  model::LinkCost::from_fabric(inter), base, options);
  }));
  out.link = out.fit.link_class == "inter" ? inter : intra;
  model::StackSpec& s = out.fit.stack;
  s.name = settings.name.empty() ? base.name + "-calibrated" : settings.name;
  const std::string on = "link '" + out.link.name + "' (" +
                         model::fmt("%.4g", out.link.achievable_bandwidth * 8 / 1e9) + " Gbit/s, " +
                         model::fmt("%.3g", model::to_micros(out.link.latency)) + " us)";
  s.description = (settings.description.empty() ? base.description : settings.description) +
                  "; library calibrated on " + on + " from " + out.sizes + ", " + out.benchmark +
                  (out.max ? ", max latency" : "");
  const std::string source =
      "transfer calibration on " + on + ": " + settings.command + fit_errors(out.fit);
  for (auto& [field, src] : s.sources) {
    if (src == "transfer calibration") src = source;
  }
  return out;
}

}  // namespace dagsgd::sim
