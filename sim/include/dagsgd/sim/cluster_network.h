// Cluster networks: how nodes are joined (single switch, two-level fat-tree with
// oversubscription, rail-optimised) and at what NIC speed, from the CLI's --cluster-network and an
// inter-node fabric. ClusterTopology::build (cluster_topology.h) lays out its switches and links.
#pragma once

#include <cstdint>
#include <string>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/units.h"

namespace dagsgd::sim {

enum class NetworkKind : std::uint8_t {
  kSingleSwitch,   // every NIC on one non-blocking switch
  kFatTree,        // two levels: leaves of `nodes_per_leaf` nodes, spines, uplinks oversubscribed
  kRailOptimized,  // NIC k of every node on leaf (rail) k; rails joined by spines
};
const char* network_kind_name(NetworkKind k);  // "single-switch", "fat-tree", "rail-optimized"

// How nodes are joined. The NIC links' speed and latency come from the inter-node fabric.
struct ClusterNetwork {
  NetworkKind kind = NetworkKind::kSingleSwitch;
  double nic_bandwidth = 0;          // bytes/s per NIC port, one direction
  model::Nanos nic_latency = 0;      // per message, NIC to switch
  model::Bytes nic_burst_bytes = 0;  // each NIC port's shaper burst, both directions (0: none)
  double oversubscription = 1;  // fat-tree and rail: downlink / uplink capacity of a leaf (>= 1)
  int nodes_per_leaf = 0;       // fat-tree: nodes under one leaf (0: all on one leaf)
  std::string fabric;           // the inter-node fabric's catalog name, for descriptions
};

// "single-switch", "fat-tree:OVERSUB[:NODES_PER_LEAF]", "rail[:OVERSUB]" (the CLI's
// --cluster-network): kind, oversubscription and leaf size; the NIC speed is set by
// set_network_fabric.
model::Expected<ClusterNetwork> parse_network_spec(const std::string& spec);
// NIC ports at the fabric's achievable bandwidth and its per-message latency. An intra-node
// fabric (scope "intra") is an error.
model::Expected<void> set_network_fabric(ClusterNetwork& network, const model::FabricSpec& fabric);

}  // namespace dagsgd::sim
