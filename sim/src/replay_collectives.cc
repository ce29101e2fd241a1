// Traced collectives priced from their recorded arguments (replay_collectives.h).
#include "replay_collectives.h"

#include <algorithm>
#include <map>
#include <set>

namespace dagsgd::sim::detail {

using trace::CollectiveKind;

std::optional<model::CollectiveOp> traced_op(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllreduce:
      return model::CollectiveOp::kAllreduce;
    case CollectiveKind::kBroadcast:
      return model::CollectiveOp::kBroadcast;
    case CollectiveKind::kAllgather:
      return model::CollectiveOp::kAllgather;
    case CollectiveKind::kReduceScatter:
      return model::CollectiveOp::kReduceScatter;
    case CollectiveKind::kReduce:
      return model::CollectiveOp::kReduce;
    case CollectiveKind::kAlltoall:
      return model::CollectiveOp::kAlltoall;
    case CollectiveKind::kBarrier:
    case CollectiveKind::kNone:
      return std::nullopt;
  }
  return std::nullopt;
}

double traced_size(const trace::TraceCollective& c) {
  return static_cast<double>(std::max<std::int64_t>({c.bytes, c.out_bytes, 0}));
}

bool placed_group(const trace::TraceCollective& c) {
  if (c.group_ranks.size() != static_cast<std::size_t>(c.ranks) || c.ranks < 2) return false;
  std::vector<int> sorted = c.group_ranks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != static_cast<int>(i)) return true;
  }
  return false;
}

model::Topology group_topology(const model::Topology& topo, const trace::TraceCollective& c) {
  model::Topology t = topo;
  const int p = c.ranks;
  const int per_node = std::max(1, topo.gpus_per_node);
  if (placed_group(c)) {
    std::map<int, int> on_node;
    for (int r : c.group_ranks) on_node[r / per_node]++;
    const int nodes = static_cast<int>(on_node.size());
    const bool even = std::all_of(on_node.begin(), on_node.end(),
                                  [&](const auto& n) { return n.second == p / nodes; });
    t.nodes = even ? nodes : p;
    t.gpus_per_node = even ? p / nodes : 1;
    return t;
  }
  if (p != topo.workers()) {
    t.nodes = std::max(1, p / per_node);
    t.gpus_per_node = std::max(1, p / t.nodes);
  }
  return t;
}

model::Expected<std::vector<int>> group_order(const ClusterTopology& cluster,
                                              const trace::TraceCollective& c) {
  if (cluster.gpu_count() < c.ranks) {
    return model::Error{"the cluster has " + std::to_string(cluster.gpu_count()) +
                        " GPUs, fewer than the " + std::to_string(c.ranks) +
                        " ranks of a collective"};
  }
  if (!placed_group(c)) return cluster.collective_order(c.ranks);
  std::vector<int> order = c.group_ranks;
  std::sort(order.begin(), order.end());
  if (order.back() >= cluster.gpu_count()) {
    return model::Error{"a " + c.name + " of ranks up to " + std::to_string(order.back()) +
                        " on a cluster of " + std::to_string(cluster.gpu_count()) + " GPUs"};
  }
  return order;
}

model::Expected<ScaledGroup> scale_group(const model::Topology& traced,
                                         const model::Topology& target,
                                         const trace::TraceCollective& c) {
  const int traced_world = traced.workers();
  if (c.ranks < 2) return ScaledGroup{GroupScale::kKept, c.ranks, c.group_ranks};
  if (c.ranks >= traced_world) return ScaledGroup{GroupScale::kWorld, target.workers(), {}};
  // The group's traced ranks: those the trace names, else the first c.ranks.
  std::vector<int> members = c.group_ranks;
  if (members.size() != static_cast<std::size_t>(c.ranks)) {
    members.resize(static_cast<std::size_t>(c.ranks));
    for (int i = 0; i < c.ranks; ++i) members[static_cast<std::size_t>(i)] = i;
  }
  const int per_node = std::max(1, traced.gpus_per_node);
  std::set<int> nodes;
  std::set<int> places;  // ranks' places inside their node
  for (int r : members) {
    nodes.insert(r / per_node);
    places.insert(r % per_node);
  }
  const int max_place = *places.rbegin();
  auto no_place = [&](const std::string& why) {
    return model::Error{"a traced " + (c.name.empty() ? "collective" : c.name) + " of " +
                        std::to_string(c.ranks) + " ranks " + why + " on " +
                        std::to_string(target.nodes) + " node(s) of " +
                        std::to_string(target.gpus_per_node) + " GPUs"};
  };
  if (nodes.size() == 1) {
    ScaledGroup g{GroupScale::kNodeLocal, c.ranks, {}};
    const int node = *nodes.begin();
    if (max_place >= target.gpus_per_node || node >= target.nodes) {
      return no_place("on one traced node has no place on one node");
    }
    for (int r : members) g.group_ranks.push_back(node * target.gpus_per_node + r % per_node);
    return g;
  }
  if (places.size() == 1 && static_cast<int>(nodes.size()) == traced.nodes) {
    ScaledGroup g{GroupScale::kReplica, target.nodes, {}};
    if (max_place >= target.gpus_per_node || target.nodes < traced.nodes) {
      return no_place("with one rank on each of the " + std::to_string(traced.nodes) +
                      " traced nodes has no place");
    }
    for (int n = 0; n < target.nodes; ++n) {
      g.group_ranks.push_back(n * target.gpus_per_node + max_place);
    }
    return g;
  }
  return ScaledGroup{GroupScale::kKept, c.ranks, c.group_ranks};
}

model::Expected<std::string> op_algorithm(const model::Topology& topo, model::CollectiveOp op,
                                          const std::string& requested, double bytes) {
  const std::vector<std::string> names = model::collective_op_algorithms(op);
  if (std::find(names.begin(), names.end(), requested) != names.end()) return requested;
  std::string best;
  model::Nanos best_time = 0;
  for (const auto& n : names) {
    auto t = model::collective_time(topo, op, n, bytes);
    if (!t) return t.error();
    if (best.empty() || *t < best_time) {
      best = n;
      best_time = *t;
    }
  }
  return best;
}

std::string traced_name(const trace::TraceDag& td, const trace::TraceCollective& c) {
  if (!c.name.empty()) return c.name;
  // An NCCL kernel that names no collective (the p2p kernels of an all-to-all): its kernel name.
  if (c.task != model::kNoTask) {
    const std::string& kernel = td.task_name(c.task);
    if (!kernel.empty()) return kernel.substr(0, kernel.find('('));
  }
  return "unnamed collective";
}

std::string unpriced_reason(const trace::TraceDag& td, const trace::TraceCollective& c) {
  const std::string name = traced_name(td, c);
  if (!traced_op(c.kind)) return name + ": no plan in the model";
  const bool sized = c.kind == CollectiveKind::kAllreduce ? c.bytes > 0 : traced_size(c) > 0;
  if (!sized) return name + ": no recorded size";
  if (c.ranks < 2) return name + ": one rank";
  return "";
}

}  // namespace dagsgd::sim::detail
