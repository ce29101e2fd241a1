// Routing inside one node type, shared by the node-type loader (default NIC choice, reachability
// checks) and ClusterTopology (routes, ring order).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/topology.h"

namespace dagsgd::model::topo {

inline constexpr double kBytesPerGbyte = 1e9;

// A device or node name as messages quote it.
inline std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

// Per device of `node`: the indices of its outgoing links, in link order.
std::vector<std::vector<int>> out_links(const NodeType& node);

// The links from device `src` to device `dst` of `node`: the fewest hops, ties broken by the
// widest bottleneck, then, walking back from dst, by the lowest-index previous device. Only
// transit devices (not GPUs, not NICs) may lie in between. nullopt when there is no such path;
// empty when src == dst.
std::optional<std::vector<int>> local_route(const NodeType& node,
                                            const std::vector<std::vector<int>>& out, int src,
                                            int dst);

// local_route from `src` to each of `targets`, sharing one search.
std::vector<std::optional<std::vector<int>>> local_routes(const NodeType& node,
                                                          const std::vector<std::vector<int>>& out,
                                                          int src, const std::vector<int>& targets);

// Narrowest bandwidth along `route` (links of `node`); 0 for an empty route.
double bottleneck(const std::vector<TopoLink>& links, const std::vector<int>& route);

}  // namespace dagsgd::model::topo

namespace dagsgd::model {

// What build() fixes besides devices and links, for route() and the printers.
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

}  // namespace dagsgd::model
