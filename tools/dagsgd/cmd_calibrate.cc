// `dagsgd calibrate LOG`: fits a link's alpha, beta and eager/rendezvous step to an allreduce
// micro-benchmark log and prints (or writes) a fabric entry for --fabric-file.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "command.h"
#include "dagsgd/model/calibration.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/osu_log.h"

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
  std::string statistic = "auto";  // avg, max, or auto (max when the log has it)
  bool json = false;
  std::string out;
  bool force = false;
};

constexpr double kBytesPerSecPerGbps = 1e9 / 8;

// "allreduce4.log" -> 4: the trailing number of the file name without its extensions.
std::optional<int> ranks_from_file_name(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  stem = stem.substr(0, stem.find('.'));
  std::size_t start = stem.size();
  while (start > 0 && std::isdigit(static_cast<unsigned char>(stem[start - 1])) != 0) --start;
  if (start == stem.size() || stem.size() - start > 6) return std::nullopt;
  return std::stoi(stem.substr(start));
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string file_name(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::string file_stem(const std::string& path) {
  const std::string name = file_name(path);
  return name.substr(0, name.find('.'));
}

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

struct LoadedLog {
  trace::LatencyLog log;
  model::TimingSeries series;
  bool max = false;  // the points are the Max Latency(us) column
};

// Reads one log and decides its rank count: --ranks, else the file name, else the log itself.
model::Expected<LoadedLog> load_log(const std::string& path, int flag_ranks,
                                    const std::string& statistic) {
  auto log = trace::read_latency_log(path);
  if (!log) return log.error();
  const bool has_max = std::all_of(
      log->points.begin(), log->points.end(),
      [](const trace::LatencyPoint& p) { return p.bytes == 0 || p.max_latency_us >= 0; });
  if (statistic == "max" && !has_max) {
    return model::Error{"calibrate: --statistic max: the log '" + path +
                        "' has no 'Max Latency(us)' column (OSU's full table, osu_allreduce -f)"};
  }
  const bool use_max = statistic == "max" || (statistic == "auto" && has_max);
  int ranks = flag_ranks;
  if (ranks == 0) {
    if (auto from_name = ranks_from_file_name(path)) {
      ranks = *from_name;
      std::fprintf(stderr, "dagsgd: note: --ranks not given; using %d from the file name '%s'\n",
                   ranks, path.c_str());
    } else if (log->ranks) {
      ranks = *log->ranks;
      std::fprintf(stderr, "dagsgd: note: --ranks not given; using %d as the log '%s' states\n",
                   ranks, path.c_str());
    } else {
      return model::Error{"calibrate: --ranks not given and neither the file name '" + path +
                          "' nor the log states a rank count; pass --ranks P"};
    }
  }
  if (ranks < 2) {
    return model::Error{"calibrate: '" + path + "': ranks must be at least 2, got " +
                        std::to_string(ranks)};
  }
  if (log->ranks && *log->ranks != ranks) {
    std::fprintf(stderr, "dagsgd: warning: the log '%s' states %d ranks, calibrating for %d\n",
                 path.c_str(), *log->ranks, ranks);
  }
  LoadedLog out{*log, {ranks, {}}, use_max};
  int zero_sized = 0;
  for (const auto& p : log->points) {
    if (p.bytes == 0) {
      ++zero_sized;
      continue;
    }
    const double us = use_max ? p.max_latency_us : p.latency_us;
    if (!(us > 0)) {
      return model::Error{"log '" + path + "': line " + std::to_string(p.line) +
                          ": latency must be > 0 to calibrate"};
    }
    out.series.points.push_back({p.bytes, us * 1e3});
  }
  if (zero_sized > 0) {
    std::fprintf(stderr, "dagsgd: note: '%s': skipped %d zero-byte row(s)\n", path.c_str(),
                 zero_sized);
  }
  return out;
}

// The logs' latencies as the entry's measured curves, one per rank count: the average rank's
// latency, and the slowest rank's where every log of that rank count has a Max column; sizes
// in increasing order, a size measured several times (in one log or in two of the same rank
// count) averaged.
std::vector<model::MeasuredAllreduce> measured_curves(const std::vector<LoadedLog>& logs) {
  struct Acc {
    double avg = 0;
    double max = 0;
    int n = 0;
    bool has_max = true;
  };
  std::map<int, std::map<model::Bytes, Acc>> by_ranks;
  for (const auto& l : logs) {
    for (const auto& p : l.log.points) {
      if (p.bytes == 0) continue;
      Acc& a = by_ranks[l.series.ranks][p.bytes];
      a.avg += p.latency_us * 1e3;
      a.max += p.max_latency_us * 1e3;
      a.has_max = a.has_max && p.max_latency_us >= p.latency_us;
      ++a.n;
    }
  }
  std::vector<model::MeasuredAllreduce> out;
  for (const auto& [ranks, sizes] : by_ranks) {
    if (sizes.size() < 2) continue;
    model::MeasuredAllreduce m;
    m.ranks = ranks;
    bool has_max = true;
    for (const auto& [bytes, a] : sizes) {
      m.points.emplace_back(bytes, std::llround(a.avg / a.n));
      m.slowest.push_back(std::llround(a.max / a.n));
      has_max = has_max && a.has_max;
    }
    if (!has_max) m.slowest.clear();
    out.push_back(std::move(m));
  }
  return out;
}

int run_calibrate(const CalibrateFlags& f) {
  const auto algorithms = model::calibration_algorithm_names();
  if (std::find(algorithms.begin(), algorithms.end(), f.algorithm) == algorithms.end()) {
    return report_error("calibrate: unknown --algorithm '" + f.algorithm +
                        "'; valid algorithms: " + join(algorithms));
  }
  if (f.scope != "intra" && f.scope != "inter" && f.scope != "both") {
    return report_error("calibrate: unknown --scope '" + f.scope +
                        "'; valid scopes: intra, inter, both");
  }
  if (f.ranks != 0 && f.logs.size() > 1) {
    return report_error(
        "calibrate: --ranks applies to one log; with several, each file name (allreduce4.log "
        "-> 4) or log gives its rank count");
  }
  std::vector<model::TimingSeries> series;
  std::vector<LoadedLog> loaded_logs;
  std::vector<int> ranks;
  std::string sizes;  // "266 sizes of 'a.log' (p=2), ..."
  std::string benchmark;
  if (f.statistic != "auto" && f.statistic != "avg" && f.statistic != "max") {
    return report_error("calibrate: unknown --statistic '" + f.statistic +
                        "'; valid: auto, avg, max");
  }
  std::string statistic_used;
  for (const auto& path : f.logs) {
    auto loaded = load_log(path, f.ranks, f.statistic);
    if (!loaded) return report_error(loaded.error().message);
    const std::string used = loaded->max ? "max" : "avg";
    if (!statistic_used.empty() && statistic_used != used) {
      return report_error("calibrate: '" + path + "' has " + (loaded->max ? "a" : "no") +
                          " Max Latency(us) column and an earlier log has " +
                          (loaded->max ? "none" : "one") + "; pass --statistic avg");
    }
    statistic_used = used;
    if (benchmark.empty()) {
      benchmark = loaded->log.benchmark.empty() ? loaded->log.format : loaded->log.benchmark;
    }
    ranks.push_back(loaded->series.ranks);
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(loaded->series.points.size()) +
             " sizes of '" + file_name(path) + "' (p=" + std::to_string(loaded->series.ranks) + ")";
    series.push_back(loaded->series);
    loaded_logs.push_back(std::move(*loaded));
  }
  model::CalibrationOptions options;
  options.algorithm = f.algorithm;
  options.fit_step = !f.no_step;
  auto fit = model::calibrate_allreduce(series, options);
  const std::string where = f.logs.size() == 1 ? "log '" + f.logs.front() + "'" : "logs";
  if (!fit) return report_error(where + ": " + fit.error().message);

  std::string name = f.name;
  if (name.empty()) {
    for (const auto& path : f.logs) name += (name.empty() ? "" : "+") + file_stem(path);
  }
  const std::string fitted = f.algorithm + " allreduce formula fitted to " + sizes + ", " +
                             benchmark + (statistic_used == "max" ? ", max latency" : "");
  const std::string description =
      f.description.empty() ? "fitted link: " + fitted : f.description + "; " + fitted;
  const std::string source = command_line(f, ranks) + " (rms relative error " +
                             fmt("%.1f", fit->rms_relative * 100) + "%, max " +
                             fmt("%.1f", fit->max_relative_error * 100) + "%)";
  auto fabric = model::fabric_from_calibration(*fit, name, f.scope, description, source,
                                               f.nominal_gbps * kBytesPerSecPerGbps);
  if (!fabric) return report_error(where + ": " + fabric.error().message);
  if (!f.no_measured) fabric->measured_allreduce = measured_curves(loaded_logs);
  const std::string entry = model::fabric_to_json(*fabric);
  const double gbps = fit->bandwidth() / kBytesPerSecPerGbps;
  if (f.nominal_gbps > 0 && gbps > f.nominal_gbps) {
    std::fprintf(stderr,
                 "dagsgd: warning: fitted bandwidth %.3g Gbit/s exceeds --nominal-gbps %.3g; the "
                 "entry uses the fit as nominal (does the log match --algorithm?)\n",
                 gbps, f.nominal_gbps);
  }

  if (!f.out.empty()) {
    auto w = model::write_file(f.out, entry + "\n", f.force);
    if (!w) return report_error(w.error().message);
  }

  if (f.json) {
    nlohmann::ordered_json j;
    j["logs"] = f.logs;
    j["benchmark"] = benchmark;
    j["ranks"] = ranks;
    j["algorithm"] = f.algorithm;
    j["statistic"] = statistic_used;
    j["alpha_us"] = fit->link.alpha_ns / 1e3;
    j["beta_ns_per_byte"] = fit->link.beta_ns_per_byte;
    j["bandwidth_gbps"] = gbps;
    j["eager_limit_bytes"] = fit->link.eager_limit;
    j["rendezvous_latency_us"] = fit->link.rendezvous_ns / 1e3;
    j["rms_us"] = fit->rms_ns / 1e3;
    j["rms_relative_error"] = fit->rms_relative;
    j["max_relative_error"] = fit->max_relative_error;
    j["max_error_bytes"] = fit->max_error_bytes;
    auto& pts = j["points"] = nlohmann::ordered_json::array();
    for (const auto& p : fit->points) {
      pts.push_back({{"ranks", p.ranks},
                     {"bytes", p.bytes},
                     {"measured_us", p.measured_ns / 1e3},
                     {"fitted_us", p.fitted_ns / 1e3},
                     {"relative_error", p.relative_error}});
    }
    j["fabric"] = nlohmann::ordered_json::parse(entry);
    if (!f.out.empty()) j["written_to"] = f.out;
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }

  std::printf(
      "calibrate: %s; %s formula; %s\n", sizes.c_str(), f.algorithm.c_str(),
      statistic_used == "max" ? "Max Latency(us) column (the slowest rank)" : "average latency");
  std::printf("fit: alpha %.2f us per message, beta %.4f ns/byte (%.3f Gbit/s, %.3f GB/s)\n",
              fit->link.alpha_ns / 1e3, fit->link.beta_ns_per_byte, gbps, fit->bandwidth() / 1e9);
  if (fit->has_step()) {
    std::printf("     eager/rendezvous step: messages above %lld bytes pay %.2f us more\n",
                static_cast<long long>(fit->link.eager_limit), fit->link.rendezvous_ns / 1e3);
  } else {
    std::printf("     no eager/rendezvous step%s\n", f.no_step ? " (--no-step)" : " found");
  }
  std::printf("residuals: rms %.2f us, rms relative %.2f%%, max relative %.2f%% at %lld bytes\n",
              fit->rms_ns / 1e3, fit->rms_relative * 100, fit->max_relative_error * 100,
              static_cast<long long>(fit->max_error_bytes));
  std::printf("\n%5s %12s %14s %14s %9s\n", "ranks", "bytes", "measured_us", "fitted_us", "error");
  for (const auto& p : fit->points) {
    std::printf("%5d %12lld %14.2f %14.2f %8.2f%%\n", p.ranks, static_cast<long long>(p.bytes),
                p.measured_ns / 1e3, p.fitted_ns / 1e3, p.relative_error * 100);
  }
  std::printf("\nfabric entry (load with --fabric-file):\n%s\n", entry.c_str());
  if (!f.out.empty()) std::printf("wrote '%s'\n", f.out.c_str());
  return kExitOk;
}

}  // namespace

void add_calibrate(CLI::App& root, Action& action) {
  auto flags = std::make_shared<CalibrateFlags>();
  CLI::App* cmd = root.add_subcommand(
      "calibrate",
      "Fit a link's alpha, beta and eager/rendezvous step to an allreduce micro-benchmark log "
      "(OSU or nccl-tests) and print a fabric entry for --fabric-file");
  cmd->add_option("logs", flags->logs,
                  "benchmark logs (OSU '# Size Avg Latency(us)' or nccl-tests); several logs "
                  "(one per rank count) are fitted together")
      ->required();
  cmd->add_option("--ranks", flags->ranks,
                  "ranks of the allreduce, for one log (default: the trailing number of the file "
                  "name, e.g. allreduce4.log -> 4, or the count the log states)");
  cmd->add_option(
      "--algorithm", flags->algorithm,
      "the formula to fit: " + join(model::calibration_algorithm_names()) + " (default ring)");
  cmd->add_option("--name", flags->name,
                  "the fabric entry's name (default: the logs' file stems joined by '+')");
  cmd->add_option("--description", flags->description,
                  "what the link is (the entry's description says what was fitted after it)");
  cmd->add_option("--scope", flags->scope, "the entry's scope: intra, inter (default) or both");
  cmd->add_option("--nominal-gbps", flags->nominal_gbps,
                  "the link's line rate in Gbit/s for the entry (default: the fitted bandwidth)")
      ->check(CLI::PositiveNumber);
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
  cmd->callback([flags, &action] { action = [flags] { return run_calibrate(*flags); }; });
}

}  // namespace dagsgd::tools
