// What ClusterTopology::build fixes besides devices and links, for route() and the printers.
#pragma once

#include <cstddef>
#include <vector>

#include "dagsgd/sim/cluster_topology.h"

namespace dagsgd::sim {

struct ClusterTopology::Plan {
  int node_devices = 0;
  int node_links = 0;
  int endpoints = 0;  // local GPUs, then local NICs
  // Node-local routes between endpoints, as local link indices: [from * endpoints + to].
  std::vector<std::vector<int>> local;
  std::vector<int> nic_up, nic_down;    // per node * nics + k: NIC -> switch, switch -> NIC
  std::vector<int> leaf_of_node;        // fat-tree: each node's leaf
  std::vector<int> leaf_up, leaf_down;  // per leaf (fat-tree) or rail: to and from the spine

  const std::vector<int>& local_route(int from_endpoint, int to_endpoint) const {
    return local[static_cast<std::size_t>(from_endpoint) * endpoints + to_endpoint];
  }
};

}  // namespace dagsgd::sim
