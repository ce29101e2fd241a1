// Cluster topologies (topology.h): node-local routing, node-type invariants, building a cluster
// from a node type and a network, routes composed from node-local and network segments, and
// the ring order inside a node.
#include "dagsgd/model/topology.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "dagsgd/model/number_range.h"
#include "topology_route.h"

namespace dagsgd::model {

const char* device_kind_name(DeviceKind k) {
  static constexpr const char* kNames[] = {"gpu", "pcie_switch", "cpu",
                                           "nic", "nvswitch",    "net_switch"};
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "?";
}

const char* network_kind_name(NetworkKind k) {
  static constexpr const char* kNames[] = {"single-switch", "fat-tree", "rail-optimized"};
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "?";
}

namespace topo {

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

}  // namespace topo

namespace {

using topo::in_quotes;

constexpr std::size_t kMaxNodeDevices = 1024;
constexpr std::size_t kMaxNodeLinks = 16384;

// Endpoints reachable from device `src` through transit devices (as local_route walks).
std::vector<char> reachable(const NodeType& node, const std::vector<std::vector<int>>& out,
                            int src) {
  std::vector<char> seen(node.devices.size(), 0);
  std::deque<int> queue{src};
  seen[src] = 1;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    if (u != src && is_endpoint(node.devices[u].kind)) continue;
    for (int l : out[u]) {
      const int v = node.links[l].to;
      if (!seen[v]) {
        seen[v] = 1;
        queue.push_back(v);
      }
    }
  }
  return seen;
}

Expected<void> check_index_list(const NodeType& node, const std::vector<int>& list, DeviceKind kind,
                                const char* what) {
  const int n = static_cast<int>(node.devices.size());
  std::vector<char> listed(node.devices.size(), 0);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const int d = list[i];
    if (d < 0 || d >= n || node.devices[d].kind != kind) {
      return Error{std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(d) +
                   " is not a device of kind " + device_kind_name(kind)};
    }
    if (listed[d])
      return Error{std::string(what) + " lists device " + in_quotes(node.devices[d].name) +
                   " twice"};
    listed[d] = 1;
  }
  for (int d = 0; d < n; ++d) {
    if (node.devices[d].kind == kind && !listed[d]) {
      return Error{"device " + in_quotes(node.devices[d].name) + " is a " + device_kind_name(kind) +
                   " but is not in " + what};
    }
  }
  return ok();
}

}  // namespace

Expected<void> validate_node_type(const NodeType& node) {
  // Routes are computed for every pair of GPUs and NICs of a node type: bounded sizes keep
  // that, and the ring search, to well under a second.
  if (node.devices.size() > kMaxNodeDevices || node.links.size() > kMaxNodeLinks) {
    return Error{"too large: " + std::to_string(node.devices.size()) + " devices and " +
                 std::to_string(node.links.size()) + " links (at most " +
                 std::to_string(kMaxNodeDevices) + " and " + std::to_string(kMaxNodeLinks) + ")"};
  }
  const int n = static_cast<int>(node.devices.size());
  std::map<std::string, int> names;
  for (int d = 0; d < n; ++d) {
    const Device& dev = node.devices[d];
    if (dev.name.empty()) return Error{"device " + std::to_string(d) + " has no name"};
    if (!names.emplace(dev.name, d).second)
      return Error{"two devices named " + in_quotes(dev.name)};
    if (dev.kind == DeviceKind::kNetSwitch) {
      return Error{"device " + in_quotes(dev.name) +
                   ": a node has no network switches (the cluster network adds them)"};
    }
  }
  if (node.gpus.empty()) return Error{"no GPU devices"};
  DAGSGD_TRY(check_index_list(node, node.gpus, DeviceKind::kGpu, "gpus"));
  DAGSGD_TRY(check_index_list(node, node.nics, DeviceKind::kNic, "nics"));
  std::map<std::pair<int, int>, int> by_ends;
  for (std::size_t l = 0; l < node.links.size(); ++l) {
    const TopoLink& k = node.links[l];
    const std::string where = "link " + std::to_string(l);
    if (k.from < 0 || k.from >= n || k.to < 0 || k.to >= n) {
      return Error{where + ": device index out of range"};
    }
    const std::string ends = where + " (" + in_quotes(node.devices[k.from].name) + " -> " +
                             in_quotes(node.devices[k.to].name) + ")";
    if (k.from == k.to) return Error{ends + ": a link from a device to itself"};
    if (!std::isfinite(k.bandwidth) || k.bandwidth <= 0) {
      return Error{ends + ": bandwidth must be finite and > 0"};
    }
    if (k.latency < 0) return Error{ends + ": latency must be >= 0"};
    if (k.count < 1) return Error{ends + ": count must be >= 1"};
    if (!by_ends.emplace(std::make_pair(k.from, k.to), static_cast<int>(l)).second) {
      return Error{ends + ": a second link between the same devices (bond them with a count)"};
    }
  }
  for (const auto& [ends, l] : by_ends) {
    if (!by_ends.count({ends.second, ends.first})) {
      return Error{"link " + std::to_string(l) + " (" + in_quotes(node.devices[ends.first].name) +
                   " -> " + in_quotes(node.devices[ends.second].name) + "): no link back from " +
                   in_quotes(node.devices[ends.second].name) + " to " +
                   in_quotes(node.devices[ends.first].name)};
    }
  }
  if (node.gpu_nic.size() != node.gpus.size()) {
    return Error{"gpu_nic has " + std::to_string(node.gpu_nic.size()) + " entries for " +
                 std::to_string(node.gpus.size()) + " GPUs"};
  }
  const auto out = topo::out_links(node);
  for (std::size_t g = 0; g < node.gpus.size(); ++g) {
    const int nic = node.gpu_nic[g];
    const std::string gpu = in_quotes(node.devices[node.gpus[g]].name);
    if (node.nics.empty() ? nic != -1 : (nic < 0 || nic >= node.nics_per_node())) {
      return Error{"gpu_nic[" + std::to_string(g) + "] = " + std::to_string(nic) +
                   " is out of range: the node has " + std::to_string(node.nics.size()) + " NICs"};
    }
    const auto seen = reachable(node, out, node.gpus[g]);
    for (int other : node.gpus) {
      if (!seen[other]) {
        return Error{"GPU " + gpu + " has no path to GPU " + in_quotes(node.devices[other].name) +
                     " (a route may pass through switches and CPUs, not through a GPU or NIC)"};
      }
    }
    if (nic >= 0 && !seen[node.nics[nic]]) {
      return Error{"GPU " + gpu + " has no path to its NIC " +
                   in_quotes(node.devices[node.nics[nic]].name)};
    }
  }
  return ok();
}

// ---- Networks -----------------------------------------------------------------------------

namespace {

constexpr const char* kNetworkSyntax =
    "expected single-switch, fat-tree:OVERSUB[:NODES_PER_LEAF] or rail[:OVERSUB]";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

}  // namespace

Expected<ClusterNetwork> parse_network_spec(const std::string& spec) {
  const auto parts = split(spec, ':');
  const std::string context = "network '" + spec + "'";
  ClusterNetwork net;
  const std::string& kind = parts[0];
  std::size_t max_parts = 1;
  if (kind == "single-switch") {
    net.kind = NetworkKind::kSingleSwitch;
  } else if (kind == "fat-tree") {
    net.kind = NetworkKind::kFatTree;
    max_parts = 3;
    if (parts.size() < 2) return Error{context + ": fat-tree needs OVERSUB; " + kNetworkSyntax};
  } else if (kind == "rail" || kind == "rail-optimized") {
    net.kind = NetworkKind::kRailOptimized;
    max_parts = 2;
  } else {
    return Error{context + ": unknown network kind '" + kind + "'; " + kNetworkSyntax};
  }
  if (parts.size() > max_parts) return Error{context + ": too many fields; " + kNetworkSyntax};
  if (parts.size() >= 2) {
    const NumberRange range{.min = 1,
                            .max = 1e6,
                            .expected = "a number from 1 to 1000000 (downlink / uplink capacity)"};
    auto r = parse_number(parts[1], range);
    if (!r) return Error{context + ": OVERSUB " + r.error().message};
    net.oversubscription = *r;
  }
  if (parts.size() == 3) {
    auto k = parse_number(parts[2], whole_number_range(1, 1000000));
    if (!k) return Error{context + ": NODES_PER_LEAF " + k.error().message};
    net.nodes_per_leaf = static_cast<int>(*k);
  }
  return net;
}

Expected<void> set_network_fabric(ClusterNetwork& network, const FabricSpec& fabric) {
  if (fabric.scope == "intra") {
    return Error{"fabric '" + fabric.name +
                 "' is an intra-node fabric; NICs need an inter-node one (scope inter or both)"};
  }
  network.nic_bandwidth = link_capacity(fabric);
  network.nic_latency = fabric.latency;
  network.nic_burst_bytes = fabric.burst_bytes;
  network.fabric = fabric.name;
  return ok();
}

// ---- ClusterTopology ----------------------------------------------------------------------

struct ClusterTopology::RouteCache {
  std::mutex mutex;
  std::unordered_map<std::uint64_t, std::vector<int>> routes;  // key: a * gpu_count + b
};

namespace {

// Link kind of a network link, from the fabric's catalog name.
std::string network_link_kind(const std::string& fabric) {
  if (fabric.rfind("ib", 0) == 0) return "infiniband";
  if (fabric.find("gbe") != std::string::npos) return "ethernet";
  return "network";
}

// Order of the local GPUs around a ring: see ClusterTopology::intra_ring.
struct RingScore {
  double narrowest = 0;
  int hops = 0;
  bool better_than(const RingScore& o) const {
    return narrowest > o.narrowest || (narrowest == o.narrowest && hops < o.hops);
  }
};

constexpr int kExhaustiveRingGpus = 8;
constexpr int kRingImprovementPasses = 50;
// Ring orders scored in the improvement passes (each costs O(GPUs)): bounds large nodes.
constexpr long long kRingScoreBudget = 50'000'000;

std::vector<int> ring_order(int gpus, const std::vector<std::vector<double>>& width,
                            const std::vector<std::vector<int>>& hops) {
  std::vector<int> order(gpus);
  std::iota(order.begin(), order.end(), 0);
  if (gpus <= 2) return order;
  auto score = [&](const std::vector<int>& o) {
    RingScore s{std::numeric_limits<double>::infinity(), 0};
    for (int i = 0; i < gpus; ++i) {
      const int a = o[i];
      const int b = o[(i + 1) % gpus];
      s.narrowest = std::min(s.narrowest, width[a][b]);
      s.hops += hops[a][b];
    }
    return s;
  };
  if (gpus <= kExhaustiveRingGpus) {
    // Lexicographic enumeration with GPU 0 first: the first best order is the smallest one.
    std::vector<int> best = order;
    RingScore best_score = score(order);
    while (std::next_permutation(order.begin() + 1, order.end())) {
      const RingScore s = score(order);
      if (s.better_than(best_score)) {
        best = order;
        best_score = s;
      }
    }
    return best;
  }
  // Beyond 8 GPUs: greedy widest-next from GPU 0, then segment reversals while they help.
  std::vector<int> greedy{0};
  std::vector<char> used(gpus, 0);
  used[0] = 1;
  for (int step = 1; step < gpus; ++step) {
    const int cur = greedy.back();
    int pick = -1;
    for (int c = 0; c < gpus; ++c) {
      if (used[c]) continue;
      if (pick < 0 || width[cur][c] > width[cur][pick] ||
          (width[cur][c] == width[cur][pick] && hops[cur][c] < hops[cur][pick])) {
        pick = c;
      }
    }
    used[pick] = 1;
    greedy.push_back(pick);
  }
  std::vector<int> best = score(greedy).better_than(score(order)) ? greedy : order;
  RingScore best_score = score(best);
  long long budget = kRingScoreBudget / gpus;
  for (int pass = 0; pass < kRingImprovementPasses && budget > 0; ++pass) {
    bool improved = false;
    for (int i = 1; i < gpus - 1 && budget > 0; ++i) {
      for (int j = i + 1; j < gpus && budget > 0; ++j, --budget) {
        std::vector<int> candidate = best;
        std::reverse(candidate.begin() + i, candidate.begin() + j + 1);
        const RingScore s = score(candidate);
        if (s.better_than(best_score)) {
          best = std::move(candidate);
          best_score = s;
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

// The order of a node's GPUs in a ring that crosses nodes: `ring` (a cycle) cut at one of its
// hops, walked either way, so that the ring leaves the node from the last GPU through that GPU's
// NIC and enters the next node's first GPU from its NIC. The best cut makes the narrowest hop
// of the chain and of its two NIC legs widest (ties: the fewest links), as NCCL searches its
// rings from NIC to NIC; among equals, the first of: the uncut order, then cuts one position
// further, each forward before reversed. `leg_out[g]`/`leg_in[g]`: width and links of the
// routes GPU g -> its NIC and its NIC -> GPU g.
std::vector<int> chain_through_nics(const std::vector<int>& ring,
                                    const std::vector<std::vector<double>>& width,
                                    const std::vector<std::vector<int>>& hops,
                                    const std::vector<std::pair<double, int>>& leg_out,
                                    const std::vector<std::pair<double, int>>& leg_in) {
  const int g = static_cast<int>(ring.size());
  if (g < 2) return ring;
  auto score = [&](const std::vector<int>& chain) {
    RingScore s{std::min(leg_out[chain.back()].first, leg_in[chain.front()].first),
                leg_out[chain.back()].second + leg_in[chain.front()].second};
    for (int i = 0; i + 1 < g; ++i) {
      s.narrowest = std::min(s.narrowest, width[chain[i]][chain[i + 1]]);
      s.hops += hops[chain[i]][chain[i + 1]];
    }
    return s;
  };
  std::vector<int> best = ring;
  RingScore best_score = score(ring);
  std::vector<int> chain(g);
  for (int r = 0; r < g; ++r) {
    for (int reversed = 0; reversed < 2; ++reversed) {
      for (int i = 0; i < g; ++i) {
        chain[i] = reversed ? ring[((r - 1 - i) % g + g) % g] : ring[(r + i) % g];
      }
      const RingScore s = score(chain);
      if (s.better_than(best_score)) {
        best = chain;
        best_score = s;
      }
    }
  }
  return best;
}

// Sizes far beyond any real cluster would overflow the int indices.
// Devices plus links of a whole cluster: about 100 bytes each, so at most ~1 GB (a 100,000-GPU
// cluster of DGX H100 nodes is 1.7 M).
constexpr long long kMaxClusterElements = 1LL << 23;

}  // namespace

Expected<ClusterTopology> ClusterTopology::build(const NodeType& node, int nodes,
                                                 const ClusterNetwork& network) {
  const std::string context = "node type '" + node.name + "'";
  auto valid = validate_node_type(node);
  if (!valid) return with_context(context, valid.error());
  if (nodes < 1) return Error{"cluster: nodes must be >= 1, got " + std::to_string(nodes)};
  const int nics = node.nics_per_node();
  const auto per_node =
      static_cast<long long>(node.devices.size() + node.links.size()) + 3LL * nics;
  if (static_cast<long long>(nodes) * per_node > kMaxClusterElements) {
    return Error{"cluster: " + std::to_string(nodes) + " nodes is too large"};
  }
  if (nodes > 1) {
    if (nics == 0) {
      return Error{context + ": has no NIC, so " + std::to_string(nodes) +
                   " nodes cannot be joined"};
    }
    if (!std::isfinite(network.nic_bandwidth) || network.nic_bandwidth <= 0) {
      return Error{
          "cluster network: NIC bandwidth must be finite and > 0 (name an inter-node "
          "fabric)"};
    }
    if (network.nic_latency < 0) return Error{"cluster network: NIC latency must be >= 0"};
    if (network.nic_burst_bytes < 0) return Error{"cluster network: NIC burst must be >= 0"};
    if (!std::isfinite(network.oversubscription) || network.oversubscription < 1) {
      return Error{"cluster network: oversubscription must be finite and >= 1"};
    }
    if (network.nodes_per_leaf < 0) return Error{"cluster network: nodes_per_leaf must be >= 0"};
  }

  ClusterTopology t;
  t.node_type_ = node;
  t.network_ = network;
  t.nodes_ = nodes;
  t.gpus_per_node_ = node.gpus_per_node();
  auto plan = std::make_shared<Plan>();
  plan->node_devices = static_cast<int>(node.devices.size());
  plan->node_links = static_cast<int>(node.links.size());

  // Node-local routes between every pair of endpoints, once for the node type.
  const int gpus = t.gpus_per_node_;
  plan->endpoints = gpus + nics;
  auto endpoint_device = [&](int e) { return e < gpus ? node.gpus[e] : node.nics[e - gpus]; };
  const auto out = topo::out_links(node);
  plan->local.resize(static_cast<std::size_t>(plan->endpoints) * plan->endpoints);
  std::vector<int> all_endpoints(plan->endpoints);
  for (int e = 0; e < plan->endpoints; ++e) all_endpoints[e] = endpoint_device(e);
  const std::vector<int> gpu_devices(node.gpus.begin(), node.gpus.end());
  for (int a = 0; a < plan->endpoints; ++a) {
    // From a GPU to every GPU and NIC; from a NIC to the GPUs (NIC pairs need no route). GPU
    // pairs and each GPU's NIC were validated; a GPU out of reach of another NIC gets none.
    auto routes =
        topo::local_routes(node, out, endpoint_device(a), a < gpus ? all_endpoints : gpu_devices);
    for (std::size_t b = 0; b < routes.size(); ++b) {
      if (routes[b]) plan->local[static_cast<std::size_t>(a) * plan->endpoints + b] = *routes[b];
    }
  }

  // Devices and links: the node copies, then the network.
  t.devices_.reserve(static_cast<std::size_t>(nodes) * node.devices.size());
  t.links_.reserve(static_cast<std::size_t>(nodes) * node.links.size());
  for (int n = 0; n < nodes; ++n) {
    const std::string prefix = "n" + std::to_string(n) + ".";
    for (const Device& d : node.devices) t.devices_.push_back({d.kind, prefix + d.name, n});
    const int base = n * plan->node_devices;
    for (TopoLink l : node.links) {
      l.from += base;
      l.to += base;
      t.links_.push_back(std::move(l));
    }
    for (int g : node.gpus) t.gpu_devices_.push_back(base + g);
  }
  if (nodes > 1) {
    const std::string kind = network_link_kind(network.fabric);
    auto add_switch = [&](const std::string& name) {
      t.devices_.push_back({DeviceKind::kNetSwitch, name, -1});
      return static_cast<int>(t.devices_.size()) - 1;
    };
    auto add_link = [&](int from, int to, double bw, Nanos latency, const std::string& type,
                        Bytes burst = 0) {
      t.links_.push_back({from, to, bw, latency, kind, type, 1, burst});
      return static_cast<int>(t.links_.size()) - 1;
    };
    // The fabric's per-message latency is charged once, on the sending NIC's port.
    auto add_port = [&](int n, int k, int sw) {
      const int nic = n * plan->node_devices + node.nics[k];
      const std::string type = network.fabric.empty() ? "nic" : network.fabric;
      // A shaped port (tc on each host's link, both directions) has a bucket on each.
      const Bytes burst = network.nic_burst_bytes;
      plan->nic_up.push_back(
          add_link(nic, sw, network.nic_bandwidth, network.nic_latency, type, burst));
      plan->nic_down.push_back(add_link(sw, nic, network.nic_bandwidth, 0, type, burst));
    };
    // Leaf (or rail) uplinks to one logical spine: the uplinks of a leaf act as one pipe, as
    // with ideal ECMP, of the leaf's downlink capacity over the oversubscription.
    auto add_spine = [&](const std::vector<int>& leaves, double downlink) {
      if (leaves.size() < 2) return;
      const int spine = add_switch("spine");
      const double up = downlink / network.oversubscription;
      for (int leaf : leaves) {
        plan->leaf_up.push_back(add_link(leaf, spine, up, 0, "uplink"));
        plan->leaf_down.push_back(add_link(spine, leaf, up, 0, "uplink"));
      }
    };
    switch (network.kind) {
      case NetworkKind::kSingleSwitch: {
        const int sw = add_switch("switch");
        for (int n = 0; n < nodes; ++n) {
          for (int k = 0; k < nics; ++k) add_port(n, k, sw);
        }
        break;
      }
      case NetworkKind::kFatTree: {
        const int per_leaf = network.nodes_per_leaf == 0 || network.nodes_per_leaf > nodes
                                 ? nodes
                                 : network.nodes_per_leaf;
        const int leaves = (nodes + per_leaf - 1) / per_leaf;
        std::vector<int> leaf_devices(leaves);
        for (int i = 0; i < leaves; ++i) leaf_devices[i] = add_switch("leaf" + std::to_string(i));
        plan->leaf_of_node.reserve(nodes);
        for (int n = 0; n < nodes; ++n) {
          plan->leaf_of_node.push_back(n / per_leaf);
          for (int k = 0; k < nics; ++k) add_port(n, k, leaf_devices[n / per_leaf]);
        }
        // A partly filled last leaf has the uplinks of a full one.
        add_spine(leaf_devices, static_cast<double>(per_leaf) * nics * network.nic_bandwidth);
        break;
      }
      case NetworkKind::kRailOptimized: {
        std::vector<int> rails(nics);
        for (int k = 0; k < nics; ++k) rails[k] = add_switch("rail" + std::to_string(k));
        for (int n = 0; n < nodes; ++n) {
          for (int k = 0; k < nics; ++k) add_port(n, k, rails[k]);
        }
        add_spine(rails, static_cast<double>(nodes) * network.nic_bandwidth);
        break;
      }
    }
  }
  t.out_links_.assign(t.devices_.size(), {});
  for (std::size_t l = 0; l < t.links_.size(); ++l) {
    t.out_links_[t.links_[l].from].push_back(static_cast<int>(l));
  }

  // The intra-node ring from the node-local GPU routes.
  std::vector<std::vector<double>> width(gpus, std::vector<double>(gpus, 0));
  std::vector<std::vector<int>> hops(gpus, std::vector<int>(gpus, 0));
  for (int a = 0; a < gpus; ++a) {
    for (int b = 0; b < gpus; ++b) {
      const auto& r = plan->local_route(a, b);
      width[a][b] = topo::bottleneck(node.links, r);
      hops[a][b] = static_cast<int>(r.size());
    }
  }
  t.intra_ring_ = ring_order(gpus, width, hops);
  t.node_chain_ = t.intra_ring_;
  if (nodes > 1) {
    std::vector<std::pair<double, int>> leg_out(gpus);
    std::vector<std::pair<double, int>> leg_in(gpus);
    for (int a = 0; a < gpus; ++a) {
      const int nic = gpus + node.gpu_nic[a];
      const auto& out_route = plan->local_route(a, nic);
      const auto& in_route = plan->local_route(nic, a);
      leg_out[a] = {topo::bottleneck(node.links, out_route), static_cast<int>(out_route.size())};
      leg_in[a] = {topo::bottleneck(node.links, in_route), static_cast<int>(in_route.size())};
    }
    t.node_chain_ = chain_through_nics(t.intra_ring_, width, hops, leg_out, leg_in);
  }
  t.plan_ = std::move(plan);
  t.routes_ = std::make_shared<RouteCache>();
  return t;
}

int ClusterTopology::gpu_device(int rank) const {
  if (rank < 0 || rank >= gpu_count()) {
    throw std::out_of_range("ClusterTopology: rank " + std::to_string(rank) + " out of range");
  }
  return gpu_devices_[rank];
}

bool ClusterTopology::is_network_link(int link) const {
  const TopoLink& l = links_.at(link);
  const int a = devices_[l.from].node;
  return a < 0 || a != devices_[l.to].node;
}

const std::vector<int>& ClusterTopology::route(int a, int b) const {
  static const std::vector<int> kEmpty;
  gpu_device(a);  // range checks
  gpu_device(b);
  if (a == b) return kEmpty;
  const std::uint64_t key =
      static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(gpu_count()) + b;
  std::lock_guard<std::mutex> lock(routes_->mutex);
  auto it = routes_->routes.find(key);
  if (it != routes_->routes.end()) return it->second;

  const Plan& p = *plan_;
  const int na = node_of(a);
  const int nb = node_of(b);
  const int la = a % gpus_per_node_;
  const int lb = b % gpus_per_node_;
  std::vector<int> r;
  auto append_local = [&](int node, int from_endpoint, int to_endpoint) {
    const int base = node * p.node_links;
    for (int l : p.local_route(from_endpoint, to_endpoint)) r.push_back(base + l);
  };
  if (na == nb) {
    append_local(na, la, lb);
  } else {
    const int nics = node_type_.nics_per_node();
    const int ka = node_type_.gpu_nic[la];
    const int kb = node_type_.gpu_nic[lb];
    append_local(na, la, gpus_per_node_ + ka);
    r.push_back(p.nic_up[static_cast<std::size_t>(na) * nics + ka]);
    int from_leaf = -1;
    int to_leaf = -1;
    if (network_.kind == NetworkKind::kFatTree) {
      from_leaf = p.leaf_of_node[na];
      to_leaf = p.leaf_of_node[nb];
    } else if (network_.kind == NetworkKind::kRailOptimized) {
      from_leaf = ka;
      to_leaf = kb;
    }
    if (from_leaf != to_leaf) {
      r.push_back(p.leaf_up[from_leaf]);
      r.push_back(p.leaf_down[to_leaf]);
    }
    r.push_back(p.nic_down[static_cast<std::size_t>(nb) * nics + kb]);
    append_local(nb, gpus_per_node_ + kb, lb);
  }
  return routes_->routes.emplace(key, std::move(r)).first->second;
}

Nanos ClusterTopology::route_latency(int a, int b) const {
  Nanos sum = 0;
  for (int l : route(a, b)) sum += links_[l].latency;
  return sum;
}

double ClusterTopology::route_bandwidth(int a, int b) const {
  return topo::bottleneck(links_, route(a, b));
}

// ---- The analytical tier's node ------------------------------------------------------------

NodeType uniform_node_type(int gpus, double intra_bandwidth, Nanos intra_latency, int nics) {
  if (gpus < 1 || nics < 0 || !std::isfinite(intra_bandwidth) || intra_bandwidth <= 0 ||
      intra_latency < 0) {
    throw std::invalid_argument(
        "uniform_node_type: needs gpus >= 1, nics >= 0, a finite "
        "bandwidth > 0 and a latency >= 0");
  }
  NodeType n;
  n.name = "uniform";
  n.description = std::to_string(gpus) + " GPUs on one hub, one link each; " +
                  std::to_string(nics) + " NIC(s) on the hub";
  n.source = "synthetic: the analytical tier's model of a node (one link per GPU per scope)";
  const Nanos to_hub = intra_latency / 2;
  const Nanos from_hub = intra_latency - to_hub;
  const int hub = gpus;
  for (int g = 0; g < gpus; ++g) {
    n.devices.push_back({DeviceKind::kGpu, "gpu" + std::to_string(g), 0});
    n.gpus.push_back(g);
  }
  n.devices.push_back({DeviceKind::kPcieSwitch, "hub", 0});
  for (int g = 0; g < gpus; ++g) {
    n.links.push_back({g, hub, intra_bandwidth, to_hub, "uniform", "uniform", 1});
    n.links.push_back({hub, g, intra_bandwidth, from_hub, "uniform", "uniform", 1});
  }
  // NIC links carry what all GPUs together can send, so only the NIC port itself is shared.
  const double hub_capacity = intra_bandwidth * gpus;
  for (int k = 0; k < nics; ++k) {
    const int nic = static_cast<int>(n.devices.size());
    n.devices.push_back({DeviceKind::kNic, "nic" + std::to_string(k), 0});
    n.nics.push_back(nic);
    n.links.push_back({nic, hub, hub_capacity, 0, "uniform", "hub", 1});
    n.links.push_back({hub, nic, hub_capacity, 0, "uniform", "hub", 1});
  }
  for (int g = 0; g < gpus; ++g) n.gpu_nic.push_back(nics > 0 ? g % nics : -1);
  return n;
}

std::vector<int> ClusterTopology::collective_order(int workers) const {
  const int g = gpus_per_node_;
  std::vector<int> order;
  if (workers < g) {
    for (int local : intra_ring_) {
      if (local < workers) order.push_back(local);
    }
    return order;
  }
  // One node's collective rings inside it; across nodes each node is a chain from NIC to NIC.
  const std::vector<int>& local_order = workers > g ? node_chain_ : intra_ring_;
  for (int n = 0; n < workers / g; ++n) {
    for (int local : local_order) order.push_back(n * g + local);
  }
  return order;
}

}  // namespace dagsgd::model
