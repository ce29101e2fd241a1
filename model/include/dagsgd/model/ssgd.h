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
// `compact`: for an SsgdDag instead, whose size limit is ssgd_task_count's (it holds no edges).
Expected<void> check_ssgd_config(const SsgdConfig& config, bool compact = false);

// Builds the DAG: per worker resources "wK.io", "wK.copy", "wK.compute"; one shared "comm"
// channel serializes collectives in issue order. Tasks are added iteration by iteration.
// `config` must pass check_ssgd_config (a config from input that does not is bad input; one
// built by code that does not is a bug).
Dag build_ssgd_dag(const SsgdConfig& config);

// The largest S-SGD DAG dagsgd simulates, in workers' tasks (workers x (2L+3) x iterations; the
// collectives, at most one per layer and iteration, come on top). The 131,072-GPU ResNet-50
// prediction (3 iterations) holds 138 million, a quarter of it, and takes 0.53 GiB and 5 s of
// CPU time (docs/performance.md), so a prediction at the limit stays near 2 GiB and 20 s.
inline constexpr std::int64_t kMaxSimulatedTasks = std::int64_t{1} << 29;
// The task count of an S-SGD DAG of this shape (groups <= layers), or an error saying why it is
// too large to simulate.
Expected<std::int64_t> ssgd_task_count(std::int64_t workers, std::int64_t layers,
                                       std::int64_t groups, std::int64_t iterations);

// The DAG build_ssgd_dag(config) builds, without building it: every worker runs the same chain
// of tasks (its durations scaled by its slowdown), so the DAG is stored as one template of
// 2L+3 tasks per distinct worker plus the collectives, and its edges are implied. Task ids and
// every task's fields are those of build_ssgd_dag(config), so results of either index alike;
// sim::Engine runs it directly in memory that grows with the workers, not with the tasks
// (docs/performance.md, "The compact S-SGD DAG"). Requires at least one layer and groups with
// distinct first layers (make_groups' are).
class SsgdDag {
 public:
  explicit SsgdDag(SsgdConfig config);

  // A worker's tasks in one iteration, by position: io, h2d, f[0..L-1], b[L-1..0], update.
  static constexpr int kIo = 0;
  static constexpr int kH2D = 1;
  static constexpr int kFirstForward = 2;
  int first_backward() const { return kFirstForward + layers_; }  // b[L-1]
  int update_position() const { return 2 * layers_ + 2; }
  int worker_tasks() const { return 2 * layers_ + 3; }
  // The layer of the backward task at `position`.
  int backward_layer(int position) const { return 2 * layers_ + 1 - position; }

  const SsgdConfig& config() const { return config_; }
  int workers() const { return config_.workers; }
  int iterations() const { return config_.iterations; }
  int layers() const { return layers_; }
  int group_count() const { return static_cast<int>(config_.groups.size()); }
  std::size_t iteration_tasks() const { return iteration_tasks_; }
  std::size_t task_count() const {
    return iteration_tasks_ * static_cast<std::size_t>(iterations());
  }
  std::size_t edge_count() const;

  TaskId task_id(int iteration, int worker, int position) const {
    return static_cast<TaskId>(static_cast<std::size_t>(iteration) * iteration_tasks_ +
                               static_cast<std::size_t>(worker) * worker_tasks_ +
                               static_cast<std::size_t>(position));
  }
  TaskId comm_id(int iteration, int group) const {
    return static_cast<TaskId>(static_cast<std::size_t>(iteration) * iteration_tasks_ +
                               comm_offset_ + static_cast<std::size_t>(group));
  }
  // Where task `id` sits: its iteration, and its worker and position, or (-1, group) for a
  // collective.
  struct Place {
    int iteration = 0;
    int worker = 0;
    int position = 0;
  };
  Place place(TaskId id) const;

  // The durations of `worker`'s tasks by position (its slowdown applied as build_ssgd_dag
  // does), and whether all workers share one template.
  const Nanos* durations_of(int worker) const {
    const std::size_t t =
        uniform() ? 0
                  : static_cast<std::size_t>(worker_template_[static_cast<std::size_t>(worker)]);
    return durations_.data() + t * worker_tasks_;
  }
  Nanos duration(int worker, int position) const {
    return durations_of(worker)[static_cast<std::size_t>(position)];
  }
  bool uniform() const { return worker_template_.empty(); }
  // The group a backward task at `position` triggers, or -1.
  int triggered_group(int position) const {
    return trigger_of_position_[static_cast<std::size_t>(position)];
  }

  Task task(TaskId id) const;
  std::string describe(TaskId id) const;
  // The same DAG built explicitly (build_ssgd_dag(config())).
  Dag expand() const { return build_ssgd_dag(config_); }

 private:
  SsgdConfig config_;
  int layers_ = 0;
  std::size_t worker_tasks_ = 0;
  std::size_t comm_offset_ = 0;      // workers * worker_tasks
  std::size_t iteration_tasks_ = 0;  // comm_offset + groups
  // Durations of each distinct worker template, worker_tasks apiece; which template each worker
  // uses (empty: all use the first).
  std::vector<Nanos> durations_;
  std::vector<std::int32_t> worker_template_;
  std::vector<std::int32_t> trigger_of_position_;
};

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
