// manifest.json reading and writing (nlohmann-json stays inside this file).
#include "dagsgd/trace/manifest.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dagsgd::trace {

namespace {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest-rank on the sorted sample with linear interpolation between neighbours.
  double pos = q * static_cast<double>(v.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(pos));
  auto hi = std::min(lo + 1, v.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

}  // namespace

void compute_stats(IterationStats& s) {
  std::vector<double> v;
  for (std::size_t i = 0; i < s.times_s.size(); ++i) {
    if (static_cast<int>(i) >= s.warmup) v.push_back(s.times_s[i]);
  }
  if (v.empty()) {
    s.mean_s = s.p50_s = s.p95_s = 0;
    return;
  }
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_s = sum / static_cast<double>(v.size());
  s.p50_s = percentile(v, 0.50);
  s.p95_s = percentile(v, 0.95);
}

namespace {
constexpr std::string_view kRankPrefix = "rank-";
constexpr std::string_view kRankSuffix = ".trace.json";
}  // namespace

std::string rank_trace_name(int rank) {
  return std::string(kRankPrefix) + std::to_string(rank) + std::string(kRankSuffix);
}

std::optional<int> parse_rank_trace_name(std::string_view name) {
  if (name.size() <= kRankPrefix.size() + kRankSuffix.size() ||
      name.substr(0, kRankPrefix.size()) != kRankPrefix ||
      name.substr(name.size() - kRankSuffix.size()) != kRankSuffix) {
    return std::nullopt;
  }
  std::string_view digits =
      name.substr(kRankPrefix.size(), name.size() - kRankPrefix.size() - kRankSuffix.size());
  // Only the canonical spelling: "rank-01" is not what rank_trace_name(1) writes.
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  int rank = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
  if (ec != std::errc() || end != digits.data() + digits.size() || rank < 0) return std::nullopt;
  return rank;
}

std::string manifest_to_json(const RunManifest& m) {
  nlohmann::ordered_json j;
  j["tool"] = "dagsgd";
  j["tool_version"] = m.tool_version;
  j["kind"] = m.kind;
  j["command"] = m.command;
  j["ranks"] = m.ranks;
  j["hosts"] = m.hosts;
  if (!m.machines.empty()) j["machines"] = m.machines;
  if (!m.cpus.empty()) j["cpus"] = m.cpus;
  j["model"] = m.model;
  j["config"] = m.config;
  nlohmann::ordered_json it;
  it["warmup"] = m.iterations.warmup;
  it["times_s"] = m.iterations.times_s;
  it["mean_s"] = m.iterations.mean_s;
  it["p50_s"] = m.iterations.p50_s;
  it["p95_s"] = m.iterations.p95_s;
  j["iterations"] = it;
  j["clock_residual_ns"] = m.clock_residual_ns;
  j["traces"] = m.traces;
  j["status"] = m.status;
  j["run_id"] = m.run_id;
  return j.dump(2) + "\n";
}

model::Expected<RunManifest> manifest_from_json(const std::string& text, const std::string& where) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return model::Error{where + ": not a JSON object"};
  }
  RunManifest m;
  try {
    m.tool_version = j.value("tool_version", "");
    m.kind = j.value("kind", "");
    m.command = j.value("command", std::vector<std::string>{});
    if (!j.contains("ranks")) return model::Error{where + ": missing 'ranks'"};
    m.ranks = j.at("ranks").get<int>();
    if (m.ranks <= 0) {
      return model::Error{where + ": 'ranks' must be positive (" + std::to_string(m.ranks) + ")"};
    }
    m.hosts = j.value("hosts", std::vector<std::string>{});
    m.machines = j.value("machines", std::vector<std::string>{});
    m.cpus = j.value("cpus", std::vector<int>{});
    const auto per_rank = static_cast<std::size_t>(m.ranks);
    if (!m.machines.empty() && m.machines.size() != per_rank) {
      return model::Error{where + ": 'machines' has " + std::to_string(m.machines.size()) +
                          " entries for " + std::to_string(m.ranks) + " ranks"};
    }
    if (!m.cpus.empty() && m.cpus.size() != per_rank) {
      return model::Error{where + ": 'cpus' has " + std::to_string(m.cpus.size()) +
                          " entries for " + std::to_string(m.ranks) + " ranks"};
    }
    for (int c : m.cpus) {
      if (c < 1) return model::Error{where + ": 'cpus' entries must be >= 1"};
    }
    m.model = j.value("model", "");
    m.config = j.value("config", std::map<std::string, std::string>{});
    if (j.contains("iterations")) {
      const auto& it = j.at("iterations");
      m.iterations.warmup = it.value("warmup", 0);
      m.iterations.times_s = it.value("times_s", std::vector<double>{});
      m.iterations.mean_s = it.value("mean_s", 0.0);
      m.iterations.p50_s = it.value("p50_s", 0.0);
      m.iterations.p95_s = it.value("p95_s", 0.0);
    }
    m.clock_residual_ns = j.value("clock_residual_ns", 0.0);
    m.traces = j.value("traces", std::vector<std::string>{});
    m.status = j.value("status", "ok");
    if (j.contains("run_id") && !j.at("run_id").is_string()) {
      return model::Error{where + ": 'run_id' must be a string"};
    }
    m.run_id = j.value("run_id", "");
  } catch (const nlohmann::json::exception& e) {
    return model::Error{where + ": " + e.what()};
  }
  return m;
}

model::Expected<void> write_manifest(const std::string& run_dir, const RunManifest& m) {
  std::string path = run_dir + "/" + kManifestName;
  std::ofstream out(path, std::ios::trunc);
  if (!out) return model::Error{"cannot write '" + path + "'"};
  out << manifest_to_json(m);
  out.close();
  if (!out) return model::Error{"cannot write '" + path + "'"};
  return model::ok();
}

model::Expected<RunManifest> read_manifest(const std::string& run_dir) {
  std::string path = run_dir + "/" + kManifestName;
  std::ifstream in(path);
  if (!in) return model::Error{"cannot read '" + path + "'"};
  std::stringstream ss;
  ss << in.rdbuf();
  return manifest_from_json(ss.str(), "manifest '" + path + "'");
}

}  // namespace dagsgd::trace
