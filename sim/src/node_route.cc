// Routing inside one node type (node_route.h): widest shortest paths through transit devices.
#include "node_route.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace dagsgd::sim::topo {

std::vector<std::vector<int>> out_links(const NodeType& node) {
  std::vector<std::vector<int>> out(node.devices.size());
  for (std::size_t l = 0; l < node.links.size(); ++l) {
    out[node.links[l].from].push_back(static_cast<int>(l));
  }
  return out;
}

double bottleneck(const std::vector<TopoLink>& links, const std::vector<int>& route) {
  if (route.empty()) return 0;
  double b = std::numeric_limits<double>::infinity();
  for (int l : route) b = std::min(b, links[l].bandwidth);
  return b;
}

std::vector<std::optional<std::vector<int>>> local_routes(const NodeType& node,
                                                          const std::vector<std::vector<int>>& out,
                                                          int src,
                                                          const std::vector<int>& targets) {
  const auto n = node.devices.size();
  // Breadth-first layers from src. An endpoint may end a route but is never expanded, so the
  // layers serve every target at once.
  auto expands = [&](int u) { return u == src || !is_endpoint(node.devices[u].kind); };
  std::vector<int> dist(n, -1);
  std::vector<int> order;
  std::deque<int> queue{src};
  dist[src] = 0;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    order.push_back(u);
    if (!expands(u)) continue;
    for (int l : out[u]) {
      const int v = node.links[l].to;
      if (dist[v] >= 0) continue;
      dist[v] = dist[u] + 1;
      queue.push_back(v);
    }
  }
  // Layer by layer, the widest bottleneck to each device over its shortest paths, and the link
  // that brings it: from the lowest-index previous device among those that achieve it. Every
  // device's chosen path is at least as wide as any path through it needs, so following the
  // links back from a target gives a widest shortest path to it.
  std::vector<double> best(n, -1);
  std::vector<int> via(n, -1);
  best[src] = std::numeric_limits<double>::infinity();
  for (int u : order) {  // increasing distance, so each device's predecessors come first
    if (!expands(u)) continue;
    for (int l : out[u]) {
      const int v = node.links[l].to;
      if (dist[v] != dist[u] + 1) continue;
      const double w = std::min(best[u], node.links[l].bandwidth);
      if (w > best[v] || (w == best[v] && u < node.links[via[v]].from)) {
        best[v] = w;
        via[v] = l;
      }
    }
  }
  std::vector<std::optional<std::vector<int>>> routes;
  routes.reserve(targets.size());
  for (int dst : targets) {
    if (dist[dst] < 0) {
      routes.emplace_back(std::nullopt);
      continue;
    }
    std::vector<int> route(dist[dst]);
    for (int v = dst, i = dist[dst] - 1; v != src; --i) {
      route[i] = via[v];
      v = node.links[via[v]].from;
    }
    routes.emplace_back(std::move(route));
  }
  return routes;
}

std::optional<std::vector<int>> local_route(const NodeType& node,
                                            const std::vector<std::vector<int>>& out, int src,
                                            int dst) {
  return std::move(local_routes(node, out, src, {dst}).front());
}

}  // namespace dagsgd::sim::topo
