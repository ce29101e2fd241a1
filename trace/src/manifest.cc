// The run manifest's reading and writing (nlohmann-json stays inside this file).
#include "dagsgd/trace/manifest.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/units.h"

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

namespace {

using Json = nlohmann::json;
using model::Error;
using model::Expected;

constexpr double kMaxSeconds = 1e6;  // kMaxDuration in seconds

std::string type_of(const Json& j) {
  if (j.is_number_integer()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_string()) return "a string";
  if (j.is_array()) return "a list";
  if (j.is_object()) return "an object";
  if (j.is_boolean()) return "a boolean";
  return "null";
}

// A scalar for a message, at most 40 characters.
std::string shown(const Json& j) {
  if (j.is_array() || j.is_object()) return type_of(j);
  std::string d = j.dump();
  return d.size() > 40 ? d.substr(0, 37) + "..." : d;
}

// Reads the fields of one JSON object; every error names the field ("'iterations.warmup'").
class Fields {
 public:
  Fields(const Json& j, std::string prefix) : j_(j), prefix_(std::move(prefix)) {}

  std::string name(const char* key) const { return "'" + prefix_ + key + "'"; }
  const Json* find(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }

  Expected<std::string> text(const char* key, const std::string& fallback) const {
    const Json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_string()) return Error{name(key) + " must be a string, got " + shown(*v)};
    return v->get<std::string>();
  }

  Expected<std::vector<std::string>> texts(const char* key) const {
    std::vector<std::string> out;
    const Json* v = find(key);
    if (v == nullptr) return out;
    if (!v->is_array()) return Error{name(key) + " must be a list of strings, got " + shown(*v)};
    for (std::size_t i = 0; i < v->size(); ++i) {
      const Json& e = (*v)[i];
      if (!e.is_string()) {
        return Error{name(key) + "[" + std::to_string(i) + "] must be a string, got " + shown(e)};
      }
      out.push_back(e.get<std::string>());
    }
    return out;
  }

  // An integer from lo to hi (a float with a fraction or beyond is refused).
  Expected<std::int64_t> integer(const Json& v, const std::string& what, std::int64_t lo,
                                 std::int64_t hi) const {
    bool whole = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                           v.get<double>() == std::floor(v.get<double>()));
    const double d = v.is_number() ? v.get<double>() : 0;
    if (!whole || d < static_cast<double>(lo) || d > static_cast<double>(hi)) {
      return Error{what + " must be an integer from " + std::to_string(lo) + " to " +
                   std::to_string(hi) + ", got " + shown(v)};
    }
    return static_cast<std::int64_t>(d);
  }
  Expected<std::int64_t> integer(const char* key, std::int64_t lo, std::int64_t hi,
                                 std::int64_t fallback) const {
    const Json* v = find(key);
    if (v == nullptr) return fallback;
    return integer(*v, name(key), lo, hi);
  }

  // A finite number from 0 to below `max`.
  Expected<double> seconds(const Json& v, const std::string& what, double max) const {
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() < max)) {
      std::ostringstream msg;
      msg << what << " must be a number from 0 to below " << max << ", got " << shown(v);
      return Error{msg.str()};
    }
    return v.get<double>();
  }
  Expected<double> seconds(const char* key, double max) const {
    const Json* v = find(key);
    if (v == nullptr) return 0.0;
    return seconds(*v, name(key), max);
  }

 private:
  const Json& j_;
  std::string prefix_;
};

// A trace path must name a file inside the run directory.
Expected<void> check_trace_path(const std::string& t, std::size_t i) {
  const std::string what = "'traces'[" + std::to_string(i) + "] '" + t.substr(0, 80) + "'";
  if (t.empty()) return Error{what + " is empty"};
  if (t.find('\0') != std::string::npos) return Error{what + " holds a NUL byte"};
  const std::filesystem::path p(t);
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) {
    return Error{what + " is an absolute path; traces must be inside the run directory"};
  }
  for (const auto& part : p) {
    if (part == "..") {
      return Error{what + " leaves the run directory (\"..\"); traces must be inside it"};
    }
  }
  return model::ok();
}

Expected<RunManifest> parse_manifest(const Json& j) {
  RunManifest m;
  Fields f(j, "");
  auto text_into = [&](const char* key, std::string& out, const std::string& fallback) {
    auto v = f.text(key, fallback);
    if (v) out = std::move(*v);
    return v.ok() ? model::ok() : Expected<void>(v.error());
  };
  DAGSGD_TRY(text_into("run_id", m.run_id, ""));
  DAGSGD_TRY(text_into("tool_version", m.tool_version, ""));
  DAGSGD_TRY(text_into("kind", m.kind, ""));
  DAGSGD_TRY(text_into("model", m.model, ""));
  DAGSGD_TRY(text_into("status", m.status, "ok"));
  auto command = f.texts("command");
  DAGSGD_TRY(command);
  m.command = std::move(*command);
  const Json* ranks = f.find("ranks");
  if (ranks == nullptr) return Error{"missing 'ranks'"};
  auto r = f.integer(*ranks, "'ranks'", 1, model::kMaxWorkers);
  DAGSGD_TRY(r);
  m.ranks = static_cast<int>(*r);
  const auto per_rank = static_cast<std::size_t>(m.ranks);
  auto hosts = f.texts("hosts");
  DAGSGD_TRY(hosts);
  m.hosts = std::move(*hosts);
  auto machines = f.texts("machines");
  DAGSGD_TRY(machines);
  m.machines = std::move(*machines);
  if (!m.machines.empty() && m.machines.size() != per_rank) {
    return Error{"'machines' has " + std::to_string(m.machines.size()) + " entries for " +
                 std::to_string(m.ranks) + " ranks"};
  }
  if (const Json* cpus = f.find("cpus")) {
    if (!cpus->is_array()) return Error{"'cpus' must be a list of integers, got " + shown(*cpus)};
    for (std::size_t i = 0; i < cpus->size(); ++i) {
      auto c = f.integer((*cpus)[i], "'cpus'[" + std::to_string(i) + "]", 1, model::kMaxWorkers);
      DAGSGD_TRY(c);
      m.cpus.push_back(static_cast<int>(*c));
    }
    if (!m.cpus.empty() && m.cpus.size() != per_rank) {
      return Error{"'cpus' has " + std::to_string(m.cpus.size()) + " entries for " +
                   std::to_string(m.ranks) + " ranks"};
    }
  }
  if (const Json* config = f.find("config")) {
    if (!config->is_object()) {
      return Error{"'config' must be an object of strings, got " + shown(*config)};
    }
    for (const auto& [k, v] : config->items()) {
      if (!v.is_string()) {
        return Error{"'config." + k.substr(0, 80) + "' must be a string, got " + shown(v)};
      }
      m.config[k] = v.get<std::string>();
    }
  }
  if (const Json* it = f.find("iterations")) {
    if (!it->is_object()) return Error{"'iterations' must be an object, got " + shown(*it)};
    Fields fi(*it, "iterations.");
    if (const Json* times = fi.find("times_s")) {
      if (!times->is_array()) {
        return Error{"'iterations.times_s' must be a list of numbers, got " + shown(*times)};
      }
      for (std::size_t i = 0; i < times->size(); ++i) {
        auto t =
            fi.seconds((*times)[i], "'iterations.times_s'[" + std::to_string(i) + "]", kMaxSeconds);
        DAGSGD_TRY(t);
        m.iterations.times_s.push_back(*t);
      }
    }
    // The warm-up iterations are among those measured, and at least one is left after them.
    const auto n = static_cast<std::int64_t>(m.iterations.times_s.size());
    auto warmup = fi.integer("warmup", 0, std::max<std::int64_t>(0, n - 1), 0);
    if (!warmup) {
      return Error{warmup.error().message + " (" + std::to_string(n) + " measured iterations)"};
    }
    m.iterations.warmup = static_cast<int>(*warmup);
    for (auto [key, out] :
         {std::pair{"mean_s", &m.iterations.mean_s}, std::pair{"p50_s", &m.iterations.p50_s},
          std::pair{"p95_s", &m.iterations.p95_s}}) {
      auto v = fi.seconds(key, kMaxSeconds);
      DAGSGD_TRY(v);
      *out = *v;
    }
  }
  auto residual = f.seconds("clock_residual_ns", static_cast<double>(model::kMaxDuration));
  DAGSGD_TRY(residual);
  m.clock_residual_ns = *residual;
  auto traces = f.texts("traces");
  DAGSGD_TRY(traces);
  for (std::size_t i = 0; i < traces->size(); ++i) DAGSGD_TRY(check_trace_path((*traces)[i], i));
  m.traces = std::move(*traces);
  return m;
}

}  // namespace

model::Expected<RunManifest> manifest_from_json(const std::string& text, const std::string& where) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return model::Error{where + ": not valid JSON: " + model::json_syntax_error(text)};
  }
  if (!j.is_object()) return model::Error{where + ": not a JSON object"};
  auto m = parse_manifest(j);
  if (!m) return model::with_context(where, m.error());
  return m;
}

model::Expected<std::optional<int>> recorded_batch(const RunManifest& m) {
  const auto it = m.config.find("batch");
  if (it == m.config.end()) return std::optional<int>();
  const std::string& b = it->second;
  char* end = nullptr;
  const long v = std::strtol(b.c_str(), &end, 10);
  if (b.empty() || *end != '\0' || v < 1 || v > 1'000'000'000) {
    return model::Error{"manifest: config 'batch' is not a positive integer ('" + b + "')"};
  }
  return std::optional<int>(static_cast<int>(v));
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

std::string find_manifest(const std::string& run_dir) {
  std::error_code ec;
  for (const char* name : {kManifestName, kLegacyManifestName}) {
    std::string path = run_dir + "/" + name;
    if (std::filesystem::is_regular_file(path, ec)) return path;
  }
  return "";
}

model::Expected<RunManifest> read_manifest(const std::string& run_dir) {
  std::string path = find_manifest(run_dir);
  if (path.empty()) path = run_dir + "/" + kManifestName;  // read_file names what is missing
  auto text = model::read_file(path, model::kMaxDocumentBytes);
  if (!text) return text.error();
  return manifest_from_json(*text, "manifest '" + path + "'");
}

}  // namespace dagsgd::trace
