// A built cluster: copies of a node type (node_type.h) joined by a cluster network
// (cluster_network.h), its devices and directed links, the routes between any two GPUs and the
// ring order a collective library uses. The flow-level network tier (flow_network.h) shares
// these links among concurrent transfers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/units.h"
#include "dagsgd/sim/cluster_network.h"
#include "dagsgd/sim/node_type.h"

namespace dagsgd::sim {

// A built cluster: `nodes` copies of a node type joined by a network. GPU ranks are numbered
// node by node: rank = node * gpus_per_node + local GPU.
class ClusterTopology {
 public:
  static model::Expected<ClusterTopology> build(const NodeType& node, int nodes,
                                                const ClusterNetwork& network);

  int nodes() const { return nodes_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int gpu_count() const { return nodes_ * gpus_per_node_; }
  int gpu_device(int rank) const;  // device index of GPU `rank`
  int node_of(int rank) const { return rank / gpus_per_node_; }
  // A link of the cluster network (NIC port, switch to switch), as opposed to a link inside a
  // node: its two ends are not devices of one node. Every route between two nodes crosses
  // exactly one NIC port out (NIC -> switch) and one in (switch -> NIC).
  bool is_network_link(int link) const;
  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<TopoLink>& links() const { return links_; }
  const NodeType& node_type() const { return node_type_; }
  const ClusterNetwork& network() const { return network_; }

  // The directed links a transfer from GPU rank `a` to GPU rank `b` crosses, in order: inside a
  // node the path with the fewest hops (ties: the widest bottleneck, then the lowest device
  // indices, choosing each previous device walking back from b), so two GPUs on one NVLink use it
  // and two behind different PCIe switches cross the CPU; between nodes through a's NIC
  // (NodeType::gpu_nic), the network, and b's NIC. Empty for a == b. Deterministic; computed once
  // per pair and kept.
  const std::vector<int>& route(int a, int b) const;
  // Sum of the latencies along route(a, b).
  model::Nanos route_latency(int a, int b) const;
  // The narrowest link bandwidth along route(a, b) (bytes/s); 0 for a == b.
  double route_bandwidth(int a, int b) const;
  // The order of the local GPUs in the ring a collective library builds inside one node: the
  // Hamiltonian cycle whose narrowest hop is widest (ties: fewest hops in total, then the
  // lexicographically smallest), e.g. around a DGX-1's NVLink cube-mesh; identity when every
  // order is alike. Starts with local GPU 0.
  const std::vector<int>& intra_ring() const { return intra_ring_; }
  // The order of a node's GPUs in a ring across nodes: intra_ring() cut at the hop (and walked
  // in the direction) that lets the ring leave the node from its last GPU through that GPU's
  // NIC and enter at its first GPU from its NIC best: the narrowest hop of the chain and of both
  // NIC legs widest, then the fewest links, then the uncut order. Equal to intra_ring() on one
  // node and wherever every cut is alike (a NIC per PCIe switch, uniform nodes).
  const std::vector<int>& node_chain() const { return node_chain_; }
  // The ranks of a collective over the first `workers` GPUs in the order a library rings them:
  // node by node, each node's GPUs in node_chain() order (one whole node: intra_ring() order;
  // fewer than a node: those of its first GPUs, in intra_ring() order).
  std::vector<int> collective_order(int workers) const;

  // Human-readable summary and Graphviz (dot) rendering; to_json: the same as one JSON object
  // (docs/topology.md, "dagsgd topology show").
  std::string describe() const;
  std::string to_dot() const;
  std::string to_json() const;

 private:
  NodeType node_type_;
  ClusterNetwork network_;
  int nodes_ = 0;
  int gpus_per_node_ = 0;
  std::vector<Device> devices_;
  std::vector<TopoLink> links_;
  std::vector<std::vector<int>> out_links_;  // per device: its outgoing link indices
  std::vector<int> gpu_devices_;             // per rank
  std::vector<int> intra_ring_;
  std::vector<int> node_chain_;
  struct Plan;  // node-local routes and the network's link tables, fixed at build
  std::shared_ptr<const Plan> plan_;
  struct RouteCache;
  std::shared_ptr<RouteCache> routes_;  // filled lazily; shared by copies
};

}  // namespace dagsgd::sim
