// Rendering a prediction for people (text) and machines (JSON).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/scenario.h"

namespace dagsgd::reports {

// `scenario`: as the user stated it, echoed in both renderings.
std::string predict_text(const sim::Description& scenario, const sim::PredictResult& r);
// One JSON object: iteration_time_s, throughput_samples_per_s, speedup, efficiency, breakdown
// (forward, backward, comm_total, comm_exposed, update, io, h2d, idle; seconds), critical_path,
// bottleneck, and more. Deterministic: the same input gives the same bytes.
std::string predict_json(const sim::Description& scenario, const sim::PredictResult& r);

}  // namespace dagsgd::reports
