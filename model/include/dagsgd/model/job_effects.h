// What a data-parallel job pays around the wire on GPU ranks (docs/gpu-effects.md): the
// job-effects file that measures it, which effects are on, and the straggler model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

// The job-effects file (docs/formats.md, "Job effects"): written by `dagsgd analyze
// --effects-out`, read by predict and whatif with --effects. A section the file leaves out is
// empty.
struct JobEffects {
  struct Interference {
    double compute_slowdown = 1;  // >= 1: compute kernels beside communication over alone
    std::int64_t samples = 0;
  };
  struct Noise {
    double iteration_cv = 0;  // std / mean of per-rank, per-iteration compute time
    std::int64_t iterations = 0;
    std::int64_t ranks = 0;
  };
  std::string source;  // the trace(s) it was measured on
  std::optional<Interference> interference;
  std::optional<Noise> noise;
};

inline constexpr const char* kJobEffectsFormat = "dagsgd-job-effects";

// Parses and checks a job-effects file's text; errors name `where` and the key.
Expected<JobEffects> parse_job_effects(std::string_view text, const std::string& where);
Expected<JobEffects> load_job_effects(const std::string& path);
// The bundled measurement GPU ranks get unless told otherwise
// (datasets/hardware/job_effects.json, measured on real traces; its source says how).
Expected<JobEffects> load_default_job_effects();

// Which effects a prediction prices; all on by default (GPU ranks only: the workload decides).
struct EffectSwitches {
  bool stragglers = true;
  bool copies = true;
  bool interference = true;
};
// "stragglers,copies,interference" (comma-separated) -> those switched off; "" switches none off.
// An unknown name lists the valid ones.
Expected<EffectSwitches> parse_effects_off(const std::string& list);
// The names parse_effects_off accepts, comma-separated.
std::string effect_names();

// E[max of n independent standard normal draws]; 0 for n <= 1. Exact up to the quadrature
// (E[max] = integral of (1 - Phi^n) over x > 0 minus that of Phi^n over x < 0, Simpson's rule),
// so that 2 ranks give 1/sqrt(pi) and 3 give 3/(2 sqrt(pi)).
double expected_max_normal(int n);
// The expected compute of the slowest of n ranks over one rank's mean, each rank's iteration
// compute drawn independently from a normal law with coefficient of variation `cv`:
// 1 + cv x expected_max_normal(n).
double straggler_factor(double cv, int n);

}  // namespace dagsgd::model
