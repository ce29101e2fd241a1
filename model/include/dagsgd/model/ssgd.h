// The S-SGD DAG builder and its closed forms (DESIGN.md, "The S-SGD DAG model").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// Per-layer times on one worker, layers in forward order (index 0 is the input side, the last
// is the output layer).
struct LayerTime {
  Nanos forward = 0;
  Nanos backward = 0;
  std::int64_t param_elements = 0;  // gradient elements this layer contributes
};

// How gradient aggregation overlaps backward: none, wfbp, mgwfbp, bucket:MB.
struct OverlapPolicy {
  enum class Kind { kNone, kWfbp, kMgwfbp, kBucket };
  Kind kind = Kind::kWfbp;
  Bytes bucket_bytes = 0;  // for kBucket
  std::string name() const;
};
// "none", "wfbp", "mgwfbp", "bucket:25" (MiB of fp32 gradients, as PyTorch DDP's bucket_cap_mb).
Expected<OverlapPolicy> parse_overlap(const std::string& s);

// A gradient group: layers [first, last] (forward indices) aggregated by one collective, issued
// when b[first] (the last of them to finish backward) is done.
struct GradientGroup {
  int first = 0;
  int last = 0;
  std::int64_t elements = 0;
  Nanos comm = 0;
};

// Aggregation time of a group of `elements` gradient elements (a CommModel's exchange_time).
using CommTimeFn = std::function<Nanos(std::int64_t elements)>;

// Groups for a policy. For mgwfbp, layers are merged greedily from the output side with the
// MG-WFBP rule (docs/model.md): merge layer l-1 into the open group when the group's collective
// would start later than `b[l-1]`'s end minus the startup it saves.
std::vector<GradientGroup> make_groups(const std::vector<LayerTime>& layers,
                                       const OverlapPolicy& policy, const CommTimeFn& comm);

struct SsgdConfig {
  std::vector<LayerTime> layers;  // per worker (all workers alike unless slowdown is set)
  std::vector<GradientGroup> groups;
  int workers = 1;
  int iterations = 3;
  bool prefetch = true;  // io/h2d of iteration i+1 overlap iteration i (one batch in flight)
  Nanos io = 0;
  Nanos h2d = 0;
  Nanos update = 0;
  // Optional per-worker compute slow-down factors (straggler what-ifs); empty = all 1.
  std::vector<double> slowdown;
};

// The largest DAG build_ssgd_dag may be asked for (check_ssgd_config): 50 million tasks and 100
// million edges, about 4.5 GB with the simulation's state (docs/limits.md).
inline constexpr std::int64_t kMaxDagTasks = 50'000'000;
inline constexpr std::int64_t kMaxDagEdges = 100'000'000;

// Whether build_ssgd_dag can build `config`, as an Error that says what is out of range:
// workers >= 1, iterations from 1 to 32767, groups over valid layers, at most kMaxDagTasks
// tasks and kMaxDagEdges edges, every duration (scaled by its worker's slow-down) from 0 to below
// kMaxDuration, slow-downs positive and finite, and the sum of all task durations below
// kMaxDagTime, so that no start or finish time a simulation of the DAG computes can overflow.
// Cheap (no DAG is built): call it before build_ssgd_dag on anything that came from input.
Expected<void> check_ssgd_config(const SsgdConfig& config);

// Builds the DAG: per worker resources "wK.io", "wK.copy", "wK.compute"; one shared "comm"
// channel serializes collectives in issue order. Tasks are added iteration by iteration.
// `config` must pass check_ssgd_config (a config from input that does not is bad input; one
// built by code that does not is a bug).
Dag build_ssgd_dag(const SsgdConfig& config);

// Closed forms for a single iteration when resources do not conflict (all workers alike).
Nanos closed_form_no_overlap(Nanos io, Nanos h2d, const std::vector<LayerTime>& layers,
                             Nanos comm_total, Nanos update);
Nanos closed_form_prefetched(Nanos io, Nanos h2d, const std::vector<LayerTime>& layers,
                             Nanos comm_total, Nanos update);
// The WFBP / MG-WFBP recurrence over groups (each layer its own group is plain WFBP):
// tau_b[L]=0, tau_b[l]=tau_b[l+1]+t_b[l+1]; a group's collective starts at
// max(end of the previous collective, end of b[first]); t_iter = t_f + end of last + t_u.
Nanos closed_form_grouped(const std::vector<LayerTime>& layers,
                          const std::vector<GradientGroup>& groups, Nanos update);

}  // namespace dagsgd::model
