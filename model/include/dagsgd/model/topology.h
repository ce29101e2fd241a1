// Cluster topologies: a graph of devices (GPUs, PCIe switches, CPU sockets, NICs, NVSwitches,
// network switches) and directed links with a bandwidth and a latency each, composed from a node
// type (one server, from vendor guides) and a cluster network (single switch, two-level fat-tree
// with oversubscription, rail-optimised); routes between any two GPUs. The flow-level network
// tier (sim/) shares these links among concurrent transfers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

enum class DeviceKind : std::uint8_t { kGpu, kPcieSwitch, kCpu, kNic, kNvSwitch, kNetSwitch };
const char* device_kind_name(DeviceKind k);  // "gpu", "pcie_switch", "cpu", "nic", ...

// GPUs and NICs are endpoints: a route starts or ends at one and never passes through one
// (NVLink and PCIe do not forward through a GPU; a GPU pair without NVLink goes over PCIe).
// Every other kind is a transit device.
inline bool is_endpoint(DeviceKind k) { return k == DeviceKind::kGpu || k == DeviceKind::kNic; }

struct Device {
  DeviceKind kind = DeviceKind::kGpu;
  std::string name;  // unique in its node ("gpu3", "plx0", "cpu1", "nic2"); cluster-wide
                     // names are prefixed with the node ("n4.gpu3") or are switches ("leaf2")
  int node = -1;     // node index in a cluster (-1: a network switch); 0 in a node type
};

// One direction of a physical link. Node types list both directions of each cable (a loader
// may accept "duplex": true and add the reverse).
struct TopoLink {
  int from = 0;           // device index
  int to = 0;             // device index
  double bandwidth = 0;   // bytes/s in this direction, what a transfer can sustain
  Nanos latency = 0;      // per message, this hop
  std::string kind;       // "nvlink", "pcie", "upi", "ethernet", "infiniband", ...
  std::string type;       // the node file's link type ("nvlink2", "pcie3-x16"); network
                          // links: the fabric's name, or "uplink" between switch levels
  int count = 1;          // parallel physical links bonded into this one (NV2: 2)
  Bytes burst_bytes = 0;  // a shaper's allowance after idling (FabricSpec::burst_bytes)
};

// One server as a vendor describes it.
struct NodeType {
  std::string name;  // "dgx1-v100"
  std::string description;
  std::string source;           // where the layout and link speeds come from
  std::vector<Device> devices;  // node index 0
  std::vector<TopoLink> links;  // both directions
  std::vector<int> gpus;        // device index of local GPU g, g = 0..G-1
  std::vector<int> nics;        // device index of local NIC k
  std::vector<int> gpu_nic;     // per local GPU: index into `nics` of the NIC it uses (NCCL's
                                // nearest NIC by PCIe distance); -1 when the node has none
  std::string nic_fabric;       // default inter-node fabric of the NICs ("ib-edr"); may be empty
  int gpus_per_node() const { return static_cast<int>(gpus.size()); }
  int nics_per_node() const { return static_cast<int>(nics.size()); }
};

enum class NetworkKind : std::uint8_t {
  kSingleSwitch,   // every NIC on one non-blocking switch
  kFatTree,        // two levels: leaves of `nodes_per_leaf` nodes, spines, uplinks oversubscribed
  kRailOptimized,  // NIC k of every node on leaf (rail) k; rails joined by spines
};
const char* network_kind_name(NetworkKind k);  // "single-switch", "fat-tree", "rail-optimized"

// How nodes are joined. The NIC links' speed and latency come from the inter-node fabric.
struct ClusterNetwork {
  NetworkKind kind = NetworkKind::kSingleSwitch;
  double nic_bandwidth = 0;     // bytes/s per NIC port, one direction
  Nanos nic_latency = 0;        // per message, NIC to switch
  Bytes nic_burst_bytes = 0;    // each NIC port's shaper burst, both directions (0: none)
  double oversubscription = 1;  // fat-tree and rail: downlink / uplink capacity of a leaf (>= 1)
  int nodes_per_leaf = 0;       // fat-tree: nodes under one leaf (0: all on one leaf)
  std::string fabric;           // the inter-node fabric's catalog name, for descriptions
};

// "single-switch", "fat-tree:OVERSUB[:NODES_PER_LEAF]", "rail[:OVERSUB]" (the CLI's --network):
// kind, oversubscription and leaf size; the NIC speed is set by set_network_fabric.
Expected<ClusterNetwork> parse_network_spec(const std::string& spec);
// NIC ports at the fabric's achievable bandwidth and its per-message latency. An intra-node
// fabric (scope "intra") is an error.
Expected<void> set_network_fabric(ClusterNetwork& network, const FabricSpec& fabric);

// A built cluster: `nodes` copies of a node type joined by a network. GPU ranks are numbered
// node by node: rank = node * gpus_per_node + local GPU.
class ClusterTopology {
 public:
  static Expected<ClusterTopology> build(const NodeType& node, int nodes,
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
  Nanos route_latency(int a, int b) const;
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

// Node types: the bundled ones (datasets/topologies/<name>.json) or a user file of the same
// schema (docs/topology.md). Errors name the file and the place.
Expected<NodeType> load_node_type(const std::string& name_or_path);
Expected<NodeType> parse_node_type_json(const std::string& text, const std::string& where);
NameRegistry bundled_node_types();
// One line per bundled node type, its name and description (`dagsgd topology list`); an error
// when there are none or one does not load.
Expected<std::string> list_node_types();
// The invariants every NodeType must keep (indices in range, both directions of each link,
// positive finite bandwidths, every GPU reaching every other GPU and its NIC); build() and the
// loader check them, so hand-made node types get the same messages.
Expected<void> validate_node_type(const NodeType& node);

// A node type with the simple model the analytical tier assumes: `gpus` GPUs on one switch-like
// hub, each with a link of `intra_bandwidth` each way (latency: half of `intra_latency` per hop,
// so GPU to GPU is `intra_latency`), and `nics` NICs on the hub with links as fast as the hub
// (the NIC port itself is the network's), GPU g using NIC g % nics. With it the flow tier and
// the analytical tier agree exactly on plain fabrics (no contention).
NodeType uniform_node_type(int gpus, double intra_bandwidth, Nanos intra_latency, int nics = 1);

}  // namespace dagsgd::model
