// The validation table and validation.json.
#include "dagsgd/reports/validation_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <utility>

#include "dagsgd/model/format.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::reports {

namespace {

using Json = nlohmann::ordered_json;
using model::fmt;

// The modes' short labels, in the order of the table's columns.
std::string mode_label(const std::string& mode) {
  if (mode == "profile") return "(a)";
  if (mode == "calibrated") return "(b)";
  if (mode == "transfer") return "(c)";
  if (mode == "stack") return "(d)";
  return "(" + mode + ")";
}

// In the order ValidationTargets::of gives a pair's predictions, whichever pair comes first.
std::vector<std::string> modes_in(const std::vector<sim::ValidationPrediction>& predictions) {
  std::vector<std::string> modes;
  for (const auto& p : predictions) {
    if (std::find(modes.begin(), modes.end(), p.mode) == modes.end()) modes.push_back(p.mode);
  }
  std::stable_sort(modes.begin(), modes.end(), [](const std::string& a, const std::string& b) {
    return mode_label(a) < mode_label(b);
  });
  return modes;
}

}  // namespace

std::string validation_replay_file(const std::vector<sim::MeasuredRun>& runs,
                                   const sim::ValidationPrediction& p) {
  const sim::MeasuredRun& s = runs[p.source];
  const sim::MeasuredRun& t = runs[p.target];
  const std::string ex = t.exchange == "allreduce" ? "" : t.exchange + "_";
  return "predictions/replay_" + s.profile + "_to_" + t.profile + "_p" + std::to_string(t.ranks) +
         "_" + t.overlap + "_" + ex + t.model + "_" + p.mode + ".json";
}

std::string validation_table(const ValidationReport& r) {
  const auto modes = modes_in(r.predictions);
  // The exchange column only for a grid that measured another exchange than allreduce.
  const bool exchanges =
      std::any_of(r.measured.begin(), r.measured.end(),
                  [](const sim::MeasuredRun& m) { return m.exchange != "allreduce"; });
  char line[512];
  std::snprintf(line, sizeof line, "%-10s %-10s %5s %-7s ", "source", "target", "ranks", "overlap");
  std::string out = line;
  if (exchanges) {
    std::snprintf(line, sizeof line, "%-9s ", "exchange");
    out += line;
  }
  std::snprintf(line, sizeof line, "%-9s %12s", "model", "measured_s");
  out += line;
  for (const auto& m : modes) {
    std::snprintf(line, sizeof line, " %11s %7s", ("pred" + mode_label(m) + "_s").c_str(),
                  ("err" + mode_label(m)).c_str());
    out += line;
  }
  out += "\n";
  // The predictions of one (source, target) pair are consecutive, at most one per mode.
  for (std::size_t i = 0; i < r.predictions.size();) {
    const auto& first = r.predictions[i];
    const auto& tgt = r.measured[first.target];
    std::snprintf(line, sizeof line, "%-10s %-10s %5d %-7s ",
                  r.measured[first.source].profile.c_str(), tgt.profile.c_str(), tgt.ranks,
                  tgt.overlap.c_str());
    out += line;
    if (exchanges) {
      std::snprintf(line, sizeof line, "%-9s ", tgt.exchange.c_str());
      out += line;
    }
    std::snprintf(line, sizeof line, "%-9s %12.4f", tgt.model.c_str(), first.measured_s);
    out += line;
    for (const auto& m : modes) {
      std::string cell = "-";
      std::string error = "-";
      if (i < r.predictions.size() && r.predictions[i].mode == m &&
          r.predictions[i].source == first.source && r.predictions[i].target == first.target) {
        const auto& p = r.predictions[i++];
        if (p.ok) {
          cell = fmt("%.4f", p.predicted_s);
          error = fmt("%+.1f%%", p.error * 100);
        }
      }
      std::snprintf(line, sizeof line, " %11s %7s", cell.c_str(), error.c_str());
      out += line;
    }
    out += "\n";
  }
  if (const auto rs = sim::summarize_repeats(r.measured); rs.configurations > 0) {
    std::snprintf(line, sizeof line,
                  "repeats: %d runs per configuration (measured: the median mean iteration; "
                  "trace: the median slowest-rank compute); the repeats lie within %.1f%% of "
                  "the median on average, %.1f%% at worst (%s)\n",
                  r.repeats, rs.mean_spread * 100, rs.worst_spread * 100, rs.worst.c_str());
    out += line;
  }
  for (const auto& [mode, s] : sim::summarize(r.predictions)) {
    std::snprintf(line, sizeof line,
                  "mode %-10s %s: %d predictions, mean |error| %.1f%%, worst |error| %.1f%%",
                  mode.c_str(), mode_label(mode).c_str(), s.predictions, s.mean_abs_error * 100,
                  s.worst_abs_error * 100);
    out += line;
    if (s.failed > 0) out += ", " + std::to_string(s.failed) + " failed";
    out += "\n";
  }
  return out;
}

std::string validation_json(const ValidationReport& r) {
  Json profiles = Json::array();
  for (const auto& p : r.profiles) {
    profiles.push_back({{"name", p.name},
                        {"tc_rate", p.tc_rate},
                        {"rate_gbps", p.rate_gbps},
                        {"latency_us", p.latency_us}});
  }
  // A run's or a prediction's numbers when it succeeded, else why not.
  auto outcome = [](Json j, bool ok, std::initializer_list<std::pair<const char*, double>> numbers,
                    const std::string& failure) {
    if (!ok) {
      j["failure"] = failure;
      return j;
    }
    for (const auto& [key, value] : numbers) j[key] = value;
    return j;
  };
  Json measured = Json::array();
  for (const auto& m : r.measured) {
    Json run =
        outcome({{"profile", m.profile},
                 {"ranks", m.ranks},
                 {"overlap", m.overlap},
                 {"exchange", m.exchange},
                 {"model", m.model},
                 {"run_dir", m.run_dir}},
                m.ok, {{"mean_iteration_s", m.mean_s}, {"p50_iteration_s", m.p50_s}}, m.error);
    if (!m.repeats.empty()) {
      Json repeats = Json::array();
      for (const auto& x : m.repeats) {
        repeats.push_back({{"run_dir", x.run_dir},
                           {"mean_iteration_s", x.mean_s},
                           {"slowest_rank_compute_s", x.compute_s}});
      }
      run["repeats"] = repeats;
      run["repeat_spread"] = sim::repeat_spread(m);
    }
    measured.push_back(run);
  }
  Json rows = Json::array();
  for (const auto& p : r.predictions) {
    const auto& tgt = r.measured[p.target];
    rows.push_back(outcome({{"source", r.measured[p.source].profile},
                            {"target", tgt.profile},
                            {"ranks", tgt.ranks},
                            {"overlap", tgt.overlap},
                            {"exchange", tgt.exchange},
                            {"model", tgt.model},
                            {"mode", p.mode},
                            {"measured_iteration_s", p.measured_s}},
                           p.ok, {{"predicted_iteration_s", p.predicted_s}, {"error", p.error}},
                           p.failure));
  }
  Json summary = Json::object();
  for (const auto& [mode, s] : sim::summarize(r.predictions)) {
    summary[mode] = {{"predictions", s.predictions},
                     {"failed", s.failed},
                     {"mean_abs_error", s.mean_abs_error},
                     {"worst_abs_error", s.worst_abs_error}};
  }
  // How far each configuration's repeats lie from its median run (null with one run each).
  Json repeatability = nullptr;
  if (const auto rs = sim::summarize_repeats(r.measured); rs.configurations > 0) {
    repeatability = {{"configurations", rs.configurations},
                     {"mean_spread", rs.mean_spread},
                     {"worst_spread", rs.worst_spread},
                     {"worst", rs.worst}};
  }
  Json doc{{"tool_version", model::tool_version()},
           {"cores", r.cores},
           {"iterations", r.iterations},
           {"warmup", r.warmup},
           {"batch", r.batch},
           {"ranks_per_host", r.ranks_per_host},
           {"repeats", r.repeats},
           {"host_cpu_model", r.host_cpu_model},
           {"network_model", r.network_model},
           {"profiles", profiles},
           {"measured", measured},
           {"predictions", rows},
           {"summary", summary},
           {"repeatability", repeatability},
           {"problems", r.problems},
           {"wall_s", r.wall_s}};
  return doc.dump(2) + "\n";
}

}  // namespace dagsgd::reports
