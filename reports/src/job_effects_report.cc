// Text, JSON and the job-effects file of analyze's measured interference and noise
// (job_effects_report.h).
#include "dagsgd/reports/job_effects_report.h"

#include <algorithm>
#include <cmath>

#include "dagsgd/model/format.h"
#include "job_effects_json.h"
#include "result_json.h"

namespace dagsgd::reports {

using model::fmt;
using nlohmann::ordered_json;

namespace {

// The file carries a slowdown only inside the reader's range; below 1 means no slowdown.
bool slowdown_writable(const sim::OverlapSlowdown& s) {
  return s.measured() && std::isfinite(s.slowdown) && s.slowdown <= kMaxComputeSlowdown;
}
bool noise_writable(const sim::IterationNoise& n) {
  return n.measured() && std::isfinite(n.iteration_cv) && n.iteration_cv <= kMaxIterationCv;
}

std::string slowdown_text(const sim::OverlapSlowdown& s, const std::string& subjects,
                          const std::string& others) {
  std::string out;
  if (s.seen == 0 && s.untimed_ranks > 0) {
    out = "not measurable: the trace records no start times (they follow from its dependencies)";
  } else if (s.seen == 0) {
    out = "not measurable: the trace has no " + subjects + "s";
  } else if (!s.measured()) {
    out = "not measurable: no " + subjects + " ran beside " + others +
          " for half its duration or more while the same kernel (name and shape) also ran alone";
  } else {
    out = fmt("%.3fx", s.slowdown) + " their duration alone (" + std::to_string(s.samples) +
          " runs of " + std::to_string(s.kernels) + " kernel(s) beside " + others + ", " +
          fmt("%.3f", static_cast<double>(s.beside) * 1e-6) + " ms; " + std::to_string(s.alone) +
          " alone)";
  }
  if (s.partial > 0 || s.unmatched > 0) {
    out += "; left out: " + std::to_string(s.partial) + " overlapped for less than half, " +
           std::to_string(s.unmatched) + " of kernels never alone";
  }
  return out;
}

ordered_json slowdown_json(const sim::OverlapSlowdown& s, const char* key) {
  ordered_json j;
  j[key] = s.measured() ? ordered_json(detail::round6(s.slowdown)) : ordered_json(nullptr);
  j["seen"] = s.seen;
  j["samples"] = s.samples;
  j["alone"] = s.alone;
  j["kernels"] = s.kernels;
  j["partial"] = s.partial;
  j["unmatched"] = s.unmatched;
  j["beside_s"] = static_cast<double>(s.beside) * 1e-9;
  return j;
}

}  // namespace

std::string job_effects_text(const sim::JobEffects& e) {
  std::string out = "Job effects (measured; --effects-out FILE writes them for --effects):\n";
  out += "  Interference: compute kernels beside communication kernels on their GPU: " +
         slowdown_text(e.interference, "compute kernel", "a communication kernel") + "\n";
  if (e.interference.measured() && !slowdown_writable(e.interference)) {
    out += "    (above " + fmt("%g", kMaxComputeSlowdown) + "x: not written to an effects file)\n";
  }
  out += "  Communication kernels beside compute kernels: " +
         slowdown_text(e.comm_slowdown, "communication kernel", "a compute kernel") + "\n";
  const sim::IterationNoise& n = e.noise;
  out += "  Iteration noise (compute per rank and iteration, " + std::to_string(n.iterations) +
         " iteration(s) x " + std::to_string(n.ranks) + " rank(s), " + std::to_string(n.samples) +
         " samples): ";
  if (!n.measured()) {
    out += "not measurable: needs 2 samples or more\n";
    return out;
  }
  out += "mean " + fmt("%.3f", static_cast<double>(n.mean) * 1e-6) + " ms, cv " +
         fmt("%.2f%%", 100 * n.iteration_cv) + "; across ranks within an iteration: " +
         (n.rank_measured() ? "cv " + fmt("%.2f%%", 100 * n.rank_cv)
                            : std::string("not measurable: needs 2 ranks or more")) +
         "\n";
  if (!noise_writable(n)) out += "    (cv above 1: not written to an effects file)\n";
  return out;
}

ordered_json detail::job_effects_json(const sim::JobEffects& e) {
  ordered_json j;
  j["interference"] = slowdown_json(e.interference, "compute_slowdown");
  j["comm_slowdown"] = slowdown_json(e.comm_slowdown, "slowdown");
  const sim::IterationNoise& n = e.noise;
  ordered_json noise;
  noise["iteration_cv"] =
      n.measured() ? ordered_json(detail::round6(n.iteration_cv)) : ordered_json(nullptr);
  noise["rank_cv"] =
      n.rank_measured() ? ordered_json(detail::round6(n.rank_cv)) : ordered_json(nullptr);
  noise["iterations"] = n.iterations;
  noise["ranks"] = n.ranks;
  noise["samples"] = n.samples;
  noise["mean_compute_s"] = static_cast<double>(n.mean) * 1e-9;
  j["noise"] = noise;
  return j;
}

std::string job_effects_file(const sim::JobEffects& e, const std::string& source) {
  ordered_json j;
  j["format"] = "dagsgd-job-effects";
  j["version"] = 1;
  j["source"] = source;
  if (slowdown_writable(e.interference)) {
    j["interference"] = {
        {"compute_slowdown", detail::round6(std::max(1.0, e.interference.slowdown))},
        {"samples", e.interference.samples}};
  }
  if (noise_writable(e.noise)) {
    j["noise"] = {{"iteration_cv", detail::round6(e.noise.iteration_cv)},
                  {"iterations", e.noise.iterations},
                  {"ranks", e.noise.ranks}};
  }
  return j.dump(2) + "\n";
}

}  // namespace dagsgd::reports
