// The job effects analyze measures (sim/job_effects.h): the "Job effects" section of its text and
// the job-effects file that predict and whatif read with --effects (docs/formats.md).
#pragma once

#include <string>

#include "dagsgd/sim/job_effects.h"

namespace dagsgd::reports {

// Limits of the job-effects file's values (docs/formats.md): the reader refuses others.
inline constexpr double kMaxComputeSlowdown = 10;
inline constexpr double kMaxIterationCv = 1;

// The "Job effects" section of analyze's text: each measurement with its sample counts, or why
// the trace cannot give it.
std::string job_effects_text(const sim::JobEffects& e);

// The job-effects file: format, version, source (`source`: the traces as given), and the
// interference and noise sections that were measured (a section the trace could not give is left
// out). A measured slowdown below 1 (overlapped kernels no slower) is written as 1.
std::string job_effects_file(const sim::JobEffects& e, const std::string& source);

}  // namespace dagsgd::reports
