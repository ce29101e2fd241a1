// Routing inside one node type, shared by the node-type loader (default NIC choice) and
// ClusterTopology (routes, ring order); and the quoting and units their messages share.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dagsgd/sim/node_type.h"

namespace dagsgd::sim::topo {

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

}  // namespace dagsgd::sim::topo
