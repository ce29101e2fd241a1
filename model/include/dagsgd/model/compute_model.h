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
Expected<ComputeEfficiency> parse_compute_efficiency(const std::string& text,
                                                     const std::string& where);
Expected<ComputeEfficiency> load_default_compute_efficiency();

// Backward costs twice the forward FLOPs (gradients of inputs and of weights).
inline constexpr double kBackwardToForwardFlops = 2.0;
// SGD with momentum reads weight, gradient and momentum and writes weight and momentum:
// five fp32 words of memory traffic per parameter.
inline constexpr double kUpdateBytesPerParam = 20.0;

// One worker's compute on one batch.
struct WorkerTimes {
  std::vector<LayerTime> layers;
  Nanos update = 0;
  Nanos h2d = 0;
};

// Times of one worker on `batch` samples: layers from their FLOPs at `flops_per_s` effective
// rate, the memory-bound parameter update at `memory_bandwidth` bytes/s, and the host-to-device
// copy of one batch of fp32 inputs at `h2d_bandwidth` bytes/s. Bad input (a rate that is not
// positive and finite, a batch below 1) and times out of range (a layer's forward or backward,
// the update, the copy, or the whole forward + backward + update reaching kMaxDuration) are an
// Error naming what overflowed. Every time of a result is below kMaxDuration, and so is the sum
// of all its layers' forward and backward times and the update.
Expected<WorkerTimes> worker_times(const Network& net, int batch, double flops_per_s,
                                   double memory_bandwidth, double h2d_bandwidth);

// The unchecked parts of worker_times, for callers that have checked their inputs' ranges:
// never undefined, but a time out of range comes back as kMaxTimestamp (saturating_nanos).
std::vector<LayerTime> layer_times_from_flops(const Network& net, int batch, double flops_per_s);
Nanos update_time(std::int64_t params, double memory_bandwidth);
Nanos h2d_time(const Network& net, int batch, double bandwidth);

// Scales forward and backward times so forward+backward+update equals `step` (a measured
// single-GPU iteration). Fails when `step` is not larger than `update`, when `step` is out of
// range (at or above kMaxDuration) or when the layers' times are (their sum reaches it).
Expected<void> scale_to_step_time(std::vector<LayerTime>& layers, Nanos update, Nanos step);

}  // namespace dagsgd::model
