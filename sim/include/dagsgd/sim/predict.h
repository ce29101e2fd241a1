// Prediction without a trace: simulate every worker of an S-SGD job and explain the result.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/sharding.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/model/units.h"
#include "dagsgd/sim/analysis.h"
#include "dagsgd/sim/cluster_topology.h"
#include "dagsgd/sim/flow_network.h"

namespace dagsgd::sim {

// Elastic averaging SGD: workers train locally and average with a center variable every `tau`
// iterations (moving rate `alpha` changes the math, not the traffic).
struct EasgdConfig {
  int tau = 1;
  double alpha = 0.5;
};

struct PredictRequest {
  std::vector<model::LayerTime> layers;  // one worker, one batch
  int batch = 1;                         // per worker
  model::Nanos io = 0;
  model::Nanos h2d = 0;
  model::Nanos update = 0;
  bool prefetch = true;
  model::Topology topology;
  model::ExchangeConfig exchange;
  model::OverlapPolicy overlap;
  std::optional<EasgdConfig> easgd;
  int iterations = 3;          // simulated; the last is reported
  bool keep_timeline = false;  // fill PredictResult::timeline
  // The flow-level tier: collectives as transfers on this cluster's links (its GPU ranks are
  // the workers), sharing them; nullptr: the analytical tier prices each collective alone.
  // `topology` still prices the fixed parts (startup latencies, reduction).
  std::shared_ptr<const ClusterTopology> cluster;
  // Stragglers (docs/gpu-effects.md): the coefficient of variation of each rank's iteration
  // compute. Every iteration waits for the slowest rank, so forward and backward take the
  // expected maximum of the workers' independent normal draws; 0: none (CPU ranks, or off).
  double noise_cv = 0;
  // Framework copies (docs/gpu-effects.md): GPU memory bytes per gradient element copied into
  // the buckets during backward and back after the collectives, at `memory_bandwidth` (bytes/s)
  // on the compute stream; 0: none (one GPU, CPU ranks, or off).
  double copy_in_bytes = 0;
  double copy_back_bytes = 0;
  double memory_bandwidth = 0;
  // Interference (docs/gpu-effects.md): forward and backward run this many times slower for
  // the time a collective is in flight beside them (the simulation is run again with the
  // slowed compute); 1: none (one GPU, CPU ranks, or off).
  double compute_slowdown = 1;
  // Sharded data parallelism (docs/communication.md): gradient groups reduce-scattered,
  // parameters all-gathered (after the step, or per unit before forward and backward), the
  // optimizer step on the shard. Not with EASGD or top-k.
  model::Sharding sharding = model::Sharding::kNone;
  // Memory per GPU: what forward keeps for backward (bytes), and the GPU's capacity (bytes; 0:
  // unknown, not checked). A job whose memory exceeds the capacity is an Error.
  double activation_bytes = 0;
  double gpu_memory = 0;
};

// One task of the reported iteration, for drawing timelines; times from the iteration's start
// (prefetched input of the next iteration may start before it ends).
struct TimelineSpan {
  int worker = 0;  // -1: a collective across all workers
  model::TaskKind kind = model::TaskKind::kForward;
  int layer = -1;  // layer index, or gradient group index for comm
  model::Nanos start = 0;
  model::Nanos duration = 0;
};

struct PhaseShare {
  std::string phase;  // io, h2d, forward, backward, comm, update, wait
  model::Nanos time = 0;
};

// What the job pays around the wire for one effect (docs/gpu-effects.md): the time it adds to a
// worker's iteration compute, and how it was priced.
struct EffectCost {
  std::string effect;  // stragglers, copies, interference
  model::Nanos time = 0;
  std::string detail;
};

struct PredictResult {
  int workers = 1;
  model::Nanos iteration = 0;
  model::Nanos single_gpu_iteration = 0;
  double throughput = 0;  // samples/s over all workers
  double speedup = 0;     // N * t(1) / t(N)
  double efficiency = 0;  // speedup / N
  Breakdown breakdown;
  std::vector<PhaseShare> critical_path;  // composition, largest first
  std::size_t critical_path_tasks = 0;
  std::string bound;                     // communication-bound, compute-bound, ...
  std::string bottleneck;                // one sentence
  model::Nanos if_comm_free = 0;         // iteration time with free communication
  model::Nanos if_double_bandwidth = 0;  // with twice the bandwidth on every link
  std::vector<model::GradientGroup> groups;
  std::string algorithm;  // the algorithm of the largest group
  std::size_t tasks = 0;
  std::uint64_t events = 0;
  std::vector<TimelineSpan> timeline;      // the reported iteration, when keep_timeline
  std::string network_model = "analytic";  // "flow" with a cluster
  std::vector<LinkUse> busiest_links;      // flow tier: the busiest links, busiest first
  std::vector<EffectCost> effects;         // each effect that is on, in a fixed order
  std::string sharding = "none";           // model::sharding_name of the request's level
  int gathers_per_iteration = 0;           // parameter all-gathers of one iteration
  model::GpuMemory memory;                 // per GPU (model states as the level divides them)
  double gpu_memory = 0;                   // the GPU's capacity in bytes; 0: unknown
};

// Builds and simulates the DAG with every worker present (no symmetry shortcut).
model::Expected<PredictResult> predict(const PredictRequest& request);

}  // namespace dagsgd::sim
