// Sharded data parallelism in predict's DAG: the plans of ZeRO-1/2 and ZeRO-3/FSDP
// (docs/communication.md, "Sharded data parallelism").
#include "sharded.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "dagsgd/sim/flow_network.h"

namespace dagsgd::sim::detail {

using model::CollectiveOp;
using model::Nanos;

namespace {

// NCCL runs reduce-scatter and all-gather as rings (its only algorithm for both on the bundled
// topologies: src/device/reduce_scatter.h, all_gather.h).
constexpr const char* kShardAlgorithm = "ring";

}  // namespace

model::Expected<model::FlowPlan> ShardPricer::plan(CollectiveOp op, std::int64_t elements) const {
  return flows->plan_collective(op, kShardAlgorithm, static_cast<double>(elements) * element_bytes);
}

Nanos ShardPricer::time(CollectiveOp op, std::int64_t elements) const {
  if (free || elements <= 0) return 0;
  if (flows != nullptr && cluster != nullptr) {
    auto p = plan(op, elements);
    if (!p) return model::kMaxDuration;
    const double t = isolated_time_ns(*cluster, *p, bandwidth_scale);
    return t < static_cast<double>(model::kMaxDuration) ? std::llround(t) : model::kMaxDuration;
  }
  auto t = model::collective_time(topology, op, kShardAlgorithm,
                                  static_cast<double>(elements) * element_bytes);
  return t ? *t : model::kMaxDuration;
}

// Each unit (a gradient group) gathers its parameters before its forward and again before its
// backward, one unit ahead (model::gather_waits). Segments of layers start at each unit's first
// layer; a leading parameter-free segment gathers nothing.
void add_gather_waits(model::SsgdConfig& c, const ShardPricer& pricer, ShardCost& cost) {
  cost.forward_wait = cost.backward_wait = cost.gathers = 0;
  cost.gathers_per_iteration = 0;
  cost.gathered_elements = 0;
  std::vector<model::GradientGroup> units = c.groups;
  std::sort(units.begin(), units.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<int> starts;
  std::vector<Nanos> gather;
  if (units.empty() || units.front().first > 0) {
    starts.push_back(0);
    gather.push_back(0);
  }
  std::vector<std::int64_t> sizes;
  for (const auto& u : units) {
    starts.push_back(u.first);
    gather.push_back(pricer.time(CollectiveOp::kAllgather, u.elements));
    cost.gathers += 2 * gather.back();
    cost.gathers_per_iteration += 2;
    sizes.push_back(u.elements);
  }
  std::sort(sizes.rbegin(), sizes.rend());
  for (std::size_t i = 0; i < sizes.size() && i < 2; ++i) cost.gathered_elements += sizes[i];
  const int layers = static_cast<int>(c.layers.size());
  std::vector<Nanos> forward(starts.size(), 0);
  std::vector<Nanos> backward(starts.size(), 0);
  for (std::size_t s = 0; s < starts.size(); ++s) {
    const int end = s + 1 < starts.size() ? starts[s + 1] : layers;
    for (int l = starts[s]; l < end; ++l) {
      forward[s] += c.layers[static_cast<std::size_t>(l)].forward;
      backward[s] += c.layers[static_cast<std::size_t>(l)].backward;
    }
  }
  const model::GatherWaits w = model::gather_waits(forward, backward, gather);
  for (std::size_t s = 0; s < starts.size(); ++s) {
    // Forward waits before the segment's first layer; backward before its last layer's
    // backward, the first of the segment to run.
    const int end = s + 1 < starts.size() ? starts[s + 1] : layers;
    c.layers[static_cast<std::size_t>(starts[s])].forward += w.forward[s];
    c.layers[static_cast<std::size_t>(end - 1)].backward += w.backward[s];
    cost.forward_wait += w.forward[s];
    cost.backward_wait += w.backward[s];
  }
}

ShardCost apply_sharding(model::Sharding sharding, model::SsgdConfig& c,
                         const model::OverlapPolicy& overlap, const ShardPricer& pricer) {
  ShardCost cost;
  c.groups = model::make_groups(c.layers, overlap, [&pricer](std::int64_t e) {
    return pricer.time(CollectiveOp::kReduceScatter, e);
  });
  // Each worker steps the optimizer on its 1/N of the parameters.
  c.update = (c.update + c.workers - 1) / c.workers;
  if (model::shards_parameters(sharding)) {
    add_gather_waits(c, pricer, cost);
    return cost;
  }
  // ZeRO-1/2: the updated shards are all-gathered at the end of the step, before the next
  // forward (DeepSpeed stage_1_and_2.py step(): all_gather_dp_groups).
  std::int64_t params = 0;
  for (const auto& l : c.layers) params += l.param_elements;
  cost.update_gather = pricer.time(CollectiveOp::kAllgather, params);
  cost.gathers = cost.update_gather;
  cost.gathers_per_iteration = 1;
  c.update += cost.update_gather;
  return cost;
}

}  // namespace dagsgd::sim::detail
