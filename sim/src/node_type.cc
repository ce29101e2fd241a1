// Node types (node_type.h): device kind names, the invariants every node type keeps, and the
// uniform node the analytical tier assumes.
#include "dagsgd/sim/node_type.h"

#include <cmath>
#include <cstddef>
#include <deque>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "node_route.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;
using model::Nanos;
using model::ok;

const char* device_kind_name(DeviceKind k) {
  static constexpr const char* kNames[] = {"gpu", "pcie_switch", "cpu",
                                           "nic", "nvswitch",    "net_switch"};
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "?";
}

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

}  // namespace dagsgd::sim
