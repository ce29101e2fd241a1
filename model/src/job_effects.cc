// The job-effects file (read and checked key by key) and the straggler model's expected maximum.
#include "dagsgd/model/job_effects.h"

#include <cmath>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::model {

namespace {

using Json = nlohmann::json;

// Bounds of the file's values (docs/formats.md): a slowdown beyond 10x or a cv beyond 1 is a
// broken measurement, not a slow GPU.
constexpr double kMaxSlowdown = 10;
constexpr double kMaxCv = 1;
constexpr double kMaxCount = 1e12;

// Reads one object's keys, each error naming the file and the key's path.
class EffectsObject {
 public:
  EffectsObject(const Json& j, std::string where, std::string path)
      : j_(j), where_(std::move(where)), path_(std::move(path)) {}

  Expected<void> only(const std::vector<std::string>& keys) const {
    if (!j_.is_object()) return Error{where_ + ": '" + path_ + "' must be an object"};
    for (const auto& [key, value] : j_.items()) {
      bool known = false;
      for (const auto& k : keys) known = known || k == key;
      if (!known) return Error{where_ + ": unknown key '" + name(key) + "'"};
    }
    return ok();
  }

  // A finite number in [lo, hi], `fallback` where absent.
  Expected<double> number(const std::string& key, double lo, double hi, double fallback) const {
    auto it = j_.find(key);
    if (it == j_.end()) return fallback;
    const double v = it->is_number() ? it->get<double>() : std::nan("");
    if (!(v >= lo && v <= hi)) {
      std::ostringstream msg;
      msg << where_ << ": '" << name(key) << "' must be a number from " << lo << " to " << hi
          << ", got " << it->dump();
      return Error{msg.str()};
    }
    return v;
  }

  Expected<std::int64_t> count(const std::string& key) const {
    auto v = number(key, 0, kMaxCount, 0);
    DAGSGD_TRY(v);
    if (*v != std::floor(*v)) {
      return Error{where_ + ": '" + name(key) + "' must be a whole number"};
    }
    return static_cast<std::int64_t>(*v);
  }

  std::string name(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

 private:
  const Json& j_;
  std::string where_;
  std::string path_;
};

// Phi(x), the standard normal distribution function.
double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

}  // namespace

Expected<JobEffects> parse_job_effects(std::string_view text, const std::string& where) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{where + ": " + json_syntax_error(text)};
  const EffectsObject top(j, where, "");
  DAGSGD_TRY(top.only({"format", "version", "source", "interference", "noise"}));
  auto format = j.find("format");
  if (format == j.end() || *format != kJobEffectsFormat) {
    return Error{where + ": 'format' must be \"" + std::string(kJobEffectsFormat) + "\""};
  }
  auto version = j.find("version");
  if (version == j.end() || *version != 1) return Error{where + ": 'version' must be 1"};
  JobEffects e;
  if (auto s = j.find("source"); s != j.end()) {
    if (!s->is_string()) return Error{where + ": 'source' must be a string"};
    e.source = s->get<std::string>();
  }
  if (auto i = j.find("interference"); i != j.end()) {
    const EffectsObject sec(*i, where, "interference");
    DAGSGD_TRY(sec.only({"compute_slowdown", "samples"}));
    JobEffects::Interference in;
    auto slowdown = sec.number("compute_slowdown", 1, kMaxSlowdown, 1);
    DAGSGD_TRY(slowdown);
    auto samples = sec.count("samples");
    DAGSGD_TRY(samples);
    in.compute_slowdown = *slowdown;
    in.samples = *samples;
    e.interference = in;
  }
  if (auto n = j.find("noise"); n != j.end()) {
    const EffectsObject sec(*n, where, "noise");
    DAGSGD_TRY(sec.only({"iteration_cv", "iterations", "ranks"}));
    JobEffects::Noise noise;
    auto cv = sec.number("iteration_cv", 0, kMaxCv, 0);
    DAGSGD_TRY(cv);
    auto iterations = sec.count("iterations");
    DAGSGD_TRY(iterations);
    auto ranks = sec.count("ranks");
    DAGSGD_TRY(ranks);
    noise.iteration_cv = *cv;
    noise.iterations = *iterations;
    noise.ranks = *ranks;
    e.noise = noise;
  }
  return e;
}

Expected<JobEffects> load_job_effects(const std::string& path) {
  auto text = read_file(path, kMaxDocumentBytes);
  DAGSGD_TRY(text);
  return parse_job_effects(*text, "job effects '" + path + "'");
}

Expected<JobEffects> load_default_job_effects() {
  return load_job_effects(data_path("hardware/job_effects.json"));
}

Expected<EffectSwitches> parse_effects_off(const std::string& list) {
  EffectSwitches s;
  std::size_t from = 0;
  while (from <= list.size() && !list.empty()) {
    const std::size_t comma = std::min(list.find(',', from), list.size());
    const std::string name = list.substr(from, comma - from);
    if (name == "stragglers") {
      s.stragglers = false;
    } else if (name == "copies") {
      s.copies = false;
    } else if (name == "interference") {
      s.interference = false;
    } else {
      return Error{"unknown effect '" + name + "' (valid: " + effect_names() + ")"};
    }
    from = comma + 1;
  }
  return s;
}

std::string effect_names() { return "stragglers, copies, interference"; }

double expected_max_normal(int n) {
  if (n <= 1) return 0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1): smooth, so Simpson's rule converges fast. The
  // density of the maximum is below 1e-20 outside [-10, 10] for every int n >= 2.
  constexpr double kEnd = 10;
  constexpr int kSteps = 20000;  // even, for Simpson's rule; h = 1e-3
  const double h = 2 * kEnd / kSteps;
  const double nn = n;
  auto f = [nn](double x) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    return x * nn * phi * std::exp((nn - 1) * std::log(normal_cdf(x)));
  };
  double sum = f(-kEnd) + f(kEnd);
  for (int k = 1; k < kSteps; ++k) sum += (k % 2 == 1 ? 4 : 2) * f(-kEnd + k * h);
  return sum * h / 3;
}

double straggler_factor(double cv, int n) { return 1 + cv * expected_max_normal(n); }

}  // namespace dagsgd::model
