// Cluster topologies (cluster_topology.h): building a cluster from a node type and a network,
// and routes composed from node-local and network segments.
#include "dagsgd/sim/cluster_topology.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cluster_plan.h"
#include "cluster_ring.h"
#include "node_route.h"

namespace dagsgd::sim {

using model::Bytes;
using model::Error;
using model::Expected;
using model::Nanos;

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
  t.intra_ring_ = topo::ring_order(gpus, width, hops);
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
    t.node_chain_ = topo::chain_through_nics(t.intra_ring_, width, hops, leg_out, leg_in);
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

}  // namespace dagsgd::sim
