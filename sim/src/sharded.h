// Sharded data parallelism in predict's DAG (docs/communication.md, "Sharded data
// parallelism"): gradient groups reduce-scattered, parameters all-gathered after the step
// (ZeRO-1/2) or before each unit's forward and backward (ZeRO-3, FSDP), the step on the shard.
#pragma once

#include <cstdint>

#include "dagsgd/model/collective_flows.h"
#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/sharding.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/sim/cluster_topology.h"

namespace dagsgd::sim::detail {

// Prices a sharded job's collectives by the table's ring rows (the algorithm NCCL runs for
// reduce-scatter and all-gather) in the tier of one simulation: the formulas on `topology`, or,
// with `flows`, the transfers alone on `cluster` at `bandwidth_scale`.
struct ShardPricer {
  model::Topology topology;
  const model::CollectiveFlows* flows = nullptr;
  const ClusterTopology* cluster = nullptr;
  double bandwidth_scale = 1;
  int element_bytes = 4;
  bool free = false;  // communication costs nothing (the comm-free reference run)
  // One `op` of `elements` parameters or gradients; a time out of range comes back as
  // kMaxDuration (the DAG's check then refuses it).
  model::Nanos time(model::CollectiveOp op, std::int64_t elements) const;
  // The flow plan of one `op` (flows must be set).
  model::Expected<model::FlowPlan> plan(model::CollectiveOp op, std::int64_t elements) const;
};

// What sharding puts into one worker's iteration besides the reduce-scatters (the DAG's
// gradient groups): the waits for parameter all-gathers folded into forward and backward
// (ZeRO-3, FSDP), the all-gather folded into the update (ZeRO-1/2), and every all-gather's time.
struct ShardCost {
  model::Nanos forward_wait = 0;
  model::Nanos backward_wait = 0;
  model::Nanos update_gather = 0;
  model::Nanos gathers = 0;  // all-gathers in flight, exposed or not
  int gathers_per_iteration = 0;
  std::int64_t gathered_elements = 0;  // ZeRO-3/FSDP: parameters of the two largest units
};

// ZeRO-3 / FSDP: folds into `c`'s forward and backward the waits for each unit's parameter
// all-gathers (its gradient groups are the units) and sets `cost`'s gathers and waits.
void add_gather_waits(model::SsgdConfig& c, const ShardPricer& pricer, ShardCost& cost);

// Makes `c`'s gradient groups (reduce-scattered; with parameters sharded they are the units
// FSDP wraps) and applies `sharding` to its layers and update. `c` has its layers, update and
// workers (> 1) set.
ShardCost apply_sharding(model::Sharding sharding, model::SsgdConfig& c,
                         const model::OverlapPolicy& overlap, const ShardPricer& pricer);

}  // namespace dagsgd::sim::detail
