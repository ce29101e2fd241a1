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

// How gradient aggregation overlaps backward: none, wfbp, mgwfbp, bucket:MB[,FIRST_MB],
// fusion:MB,CYCLE_MS.
struct OverlapPolicy {
  enum class Kind { kNone, kWfbp, kMgwfbp, kBucket, kFusion };
  Kind kind = Kind::kWfbp;
  Bytes bucket_bytes = 0;        // kBucket: the cap of a bucket; kFusion: of a fused group
  Bytes first_bucket_bytes = 0;  // kBucket: the first bucket's cap (0: bucket_bytes)
  Nanos cycle = 0;               // kFusion: a background thread's cycle
  std::string name() const;
};
// "none", "wfbp", "mgwfbp", "bucket:25" (MiB of fp32 gradients, as PyTorch DDP's bucket_cap_mb),
// "bucket:25,1" (a first bucket of 1 MiB, as DDP's), "fusion:64,5" (Horovod: gradients ready in
// the same 5 ms cycle fused up to 64 MiB).
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

// Builds the DAG: per worker resources "wK.io", "wK.copy", "wK.compute"; one shared "comm"
// channel serializes collectives in issue order. Tasks are added iteration by iteration.
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
