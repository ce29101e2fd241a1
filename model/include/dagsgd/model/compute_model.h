// Compute model: per-layer forward/backward times from FLOPs, a measured step time or a profile.
#pragma once

#include <cstdint>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// Achieved fraction of peak per precision (datasets/hardware/compute_efficiency.json).
struct ComputeEfficiency {
  double fp32 = 0;
  double fp16 = 0;
  double for_precision(Precision p) const { return p == Precision::kFp16 ? fp16 : fp32; }
};
Expected<ComputeEfficiency> load_compute_efficiency(const std::string& path);
Expected<ComputeEfficiency> load_default_compute_efficiency();

// Backward costs twice the forward FLOPs (gradients of inputs and of weights).
inline constexpr double kBackwardToForwardFlops = 2.0;
// SGD with momentum reads weight, gradient and momentum and writes weight and momentum:
// five fp32 words of memory traffic per parameter.
inline constexpr double kUpdateBytesPerParam = 20.0;

// Layer times of one worker on `batch` samples at `flops_per_s` effective rate.
std::vector<LayerTime> layer_times_from_flops(const Network& net, int batch, double flops_per_s);

// Parameter update time, memory-bound.
Nanos update_time(std::int64_t params, double memory_bandwidth);

// Host-to-device copy of one batch of fp32 inputs over `bandwidth` bytes/s.
Nanos h2d_time(const Network& net, int batch, double bandwidth);

// Scales forward and backward times so forward+backward+update equals `step` (a measured
// single-GPU iteration). Fails when `step` is not larger than `update`.
Expected<void> scale_to_step_time(std::vector<LayerTime>& layers, Nanos update, Nanos step);

}  // namespace dagsgd::model
