// The parts of a prediction's JSON that `predict --json` and results.json share, so that both
// write the same numbers under the same names. Private to reports/.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>

#include "dagsgd/sim/predict.h"

namespace dagsgd::reports::detail {

// Ratios to six decimals, so that JSON numbers are stable across platforms.
inline double round6(double v) { return std::round(v * 1e6) / 1e6; }

// iteration_time_s, throughput_samples_per_s, speedup, efficiency, single_gpu_iteration_time_s.
void put_headline(nlohmann::ordered_json& j, const sim::PredictResult& r);
// {"tasks", "composition_s"}: the critical path's tasks and its time per phase.
nlohmann::ordered_json critical_path_json(const sim::PredictResult& r);
// {effect: {"time_s", "detail"}}: what each effect around the wire adds (docs/gpu-effects.md).
nlohmann::ordered_json effects_json(const sim::PredictResult& r);
// The iteration time without communication and with twice the bandwidth.
nlohmann::ordered_json what_if_json(const sim::PredictResult& r);

}  // namespace dagsgd::reports::detail
