// Node types: one server as a vendor describes it, a graph of devices (GPUs, PCIe switches, CPU
// sockets, NICs, NVSwitches) and directed links with a bandwidth and a latency each; read from
// datasets/topologies/ or a user file, checked, listed. Building a cluster of them and routing
// through it is cluster_topology.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/units.h"

namespace dagsgd::sim {

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
  int from = 0;                  // device index
  int to = 0;                    // device index
  double bandwidth = 0;          // bytes/s in this direction, what a transfer can sustain
  model::Nanos latency = 0;      // per message, this hop
  std::string kind;              // "nvlink", "pcie", "upi", "ethernet", "infiniband", ...
  std::string type;              // the node file's link type ("nvlink2", "pcie3-x16"); network
                                 // links: the fabric's name, or "uplink" between switch levels
  int count = 1;                 // parallel physical links bonded into this one (NV2: 2)
  model::Bytes burst_bytes = 0;  // a shaper's allowance after idling (FabricSpec::burst_bytes)
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

// Node types: the bundled ones (datasets/topologies/<name>.json) or a user file of the same
// schema (docs/topology.md). Errors name the file and the place.
model::Expected<NodeType> load_node_type(const std::string& name_or_path);
model::Expected<NodeType> parse_node_type_json(const std::string& text, const std::string& where);
model::NameRegistry bundled_node_types();
// One line per bundled node type, its name and description (`dagsgd topology list`); an error
// when there are none or one does not load.
model::Expected<std::string> list_node_types();
// The invariants every NodeType must keep (indices in range, both directions of each link,
// positive finite bandwidths, every GPU reaching every other GPU and its NIC);
// ClusterTopology::build() and the loader check them, so hand-made node types get the same
// messages.
model::Expected<void> validate_node_type(const NodeType& node);

// A node type with the simple model the analytical tier assumes: `gpus` GPUs on one switch-like
// hub, each with a link of `intra_bandwidth` each way (latency: half of `intra_latency` per hop,
// so GPU to GPU is `intra_latency`), and `nics` NICs on the hub with links as fast as the hub
// (the NIC port itself is the network's), GPU g using NIC g % nics. With it the flow tier and
// the analytical tier agree exactly on plain fabrics (no contention).
NodeType uniform_node_type(int gpus, double intra_bandwidth, model::Nanos intra_latency,
                           int nics = 1);

}  // namespace dagsgd::sim
