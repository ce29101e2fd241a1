// What `dagsgd topology show` prints: a cluster topology as text, Graphviz (dot) or JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster_plan.h"
#include "dagsgd/sim/cluster_topology.h"
#include "node_route.h"

namespace dagsgd::sim {
namespace {

using model::Nanos;
using model::to_micros;

using OJson = nlohmann::ordered_json;
using topo::kBytesPerGbyte;

// Three significant digits (whole numbers from 1000): rates and latencies are not known better.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 1000 ? "%.0f" : "%.3g", v);
  return buf;
}
OJson json_num(double v) { return OJson::parse(num(v)); }
std::string gbs(double bytes_per_s) { return num(bytes_per_s / kBytesPerGbyte) + " GB/s"; }
std::string us(Nanos ns) { return num(to_micros(ns)) + " us"; }

std::string path_text(const std::vector<std::string>& devices) {
  std::string s;
  for (const auto& d : devices) s += (s.empty() ? "" : " > ") + d;
  return s;
}

// Two ranks whose route is worth showing as an example of the network: rank 0 to the first GPU
// of node 1, and to the last GPU of the last node.
std::vector<std::pair<int, int>> example_pairs(const ClusterTopology& t) {
  std::vector<std::pair<int, int>> pairs;
  if (t.nodes() < 2) return pairs;
  pairs.emplace_back(0, t.gpus_per_node());
  if (t.nodes() > 2) pairs.emplace_back(0, t.gpu_count() - 1);
  return pairs;
}

const char* dot_shape(DeviceKind k) {
  switch (k) {
    case DeviceKind::kGpu:
      return "box";
    case DeviceKind::kPcieSwitch:
      return "diamond";
    case DeviceKind::kCpu:
      return "ellipse";
    case DeviceKind::kNic:
      return "hexagon";
    case DeviceKind::kNvSwitch:
      return "octagon";
    case DeviceKind::kNetSwitch:
      return "doubleoctagon";
  }
  return "box";
}

// One entry per cable: the link from the lower device index, with its reverse when there is one.
struct Cable {
  int forward = -1;
  int backward = -1;
};
std::vector<Cable> cables(const std::vector<TopoLink>& links) {
  std::vector<Cable> out;
  std::vector<std::vector<std::pair<int, int>>> by_from;
  for (std::size_t l = 0; l < links.size(); ++l) {
    const auto from = static_cast<std::size_t>(links[l].from);
    if (by_from.size() <= from) by_from.resize(from + 1);
    by_from[from].emplace_back(links[l].to, static_cast<int>(l));
  }
  auto find = [&](int from, int to) {
    if (static_cast<std::size_t>(from) >= by_from.size()) return -1;
    for (const auto& [t, l] : by_from[from]) {
      if (t == to) return l;
    }
    return -1;
  };
  for (std::size_t l = 0; l < links.size(); ++l) {
    const TopoLink& k = links[l];
    const int back = find(k.to, k.from);
    if (back >= 0 && k.from > k.to) continue;  // listed from the other end
    out.push_back({static_cast<int>(l), back});
  }
  return out;
}

// Rows printed as left-aligned columns, two spaces apart, indented by two.
class Table {
 public:
  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  void print(std::ostringstream& o) const {
    std::vector<std::size_t> width;
    for (const auto& r : rows_) {
      if (width.size() < r.size()) width.resize(r.size(), 0);
      for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    }
    for (const auto& r : rows_) {
      std::string line = " ";
      for (std::size_t c = 0; c < r.size(); ++c) {
        line += " " + r[c];
        if (c + 1 < r.size()) line += std::string(width[c] - r[c].size() + 1, ' ');
      }
      o << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string link_label(const TopoLink& l) {
  return l.type + (l.count > 1 ? " x" + std::to_string(l.count) : "");
}

}  // namespace

std::string ClusterTopology::describe() const {
  const NodeType& n = node_type_;
  std::ostringstream o;
  auto local_names = [&](int a, int b) {
    std::vector<std::string> names;
    const auto& r = route(a, b);
    if (!r.empty()) names.push_back(n.devices[links_[r.front()].from].name);
    for (int l : r) names.push_back(n.devices[links_[l].to].name);
    return names;
  };
  o << "node type " << n.name << ": " << n.description << "\n";
  o << "source: " << n.source << "\n";
  if (!n.nic_fabric.empty()) o << "default inter-node fabric: " << n.nic_fabric << "\n";
  o << "\ndevices (" << n.devices.size() << ")\n";
  Table devices;
  for (const Device& d : n.devices) devices.row({d.name, device_kind_name(d.kind)});
  devices.print(o);
  o << "\nlinks (per direction: what a transfer sustains; latency per hop)\n";
  Table links;
  for (const Cable& c : cables(n.links)) {
    const TopoLink& f = n.links[c.forward];
    const bool same = c.backward >= 0 && n.links[c.backward].bandwidth == f.bandwidth &&
                      n.links[c.backward].latency == f.latency;
    links.row({n.devices[f.from].name, same ? "<->" : "->", n.devices[f.to].name, link_label(f),
               gbs(f.bandwidth), us(f.latency)});
    if (c.backward >= 0 && !same) {
      const TopoLink& b = n.links[c.backward];
      links.row({n.devices[b.from].name, "->", n.devices[b.to].name, link_label(b),
                 gbs(b.bandwidth), us(b.latency)});
    }
  }
  links.print(o);
  const int gpus = gpus_per_node_;
  if (!n.nics.empty()) {
    o << "\nNIC of each GPU (path, bottleneck)\n";
    const auto& p = *plan_;
    Table nics;
    for (int g = 0; g < gpus; ++g) {
      const auto& r = p.local_route(g, gpus + n.gpu_nic[g]);
      std::vector<std::string> names{n.devices[n.gpus[g]].name};
      for (int l : r) names.push_back(n.devices[n.links[l].to].name);
      double b = 0;
      for (int l : r) b = (b == 0 ? n.links[l].bandwidth : std::min(b, n.links[l].bandwidth));
      nics.row({n.devices[n.gpus[g]].name, "->", n.devices[n.nics[n.gpu_nic[g]]].name,
                path_text(names), gbs(b)});
    }
    nics.print(o);
  }
  std::vector<std::string> ring;
  for (int g : intra_ring_) ring.push_back(n.devices[n.gpus[g]].name);
  double narrowest = 0;
  for (std::size_t i = 0; gpus > 1 && i < intra_ring_.size(); ++i) {
    const double w = route_bandwidth(intra_ring_[i], intra_ring_[(i + 1) % intra_ring_.size()]);
    narrowest = i == 0 ? w : std::min(narrowest, w);
  }
  o << "\nintra-node ring: " << path_text(ring);
  if (gpus > 1) o << "  (narrowest hop " << gbs(narrowest) << ")";
  o << "\n";
  if (gpus > 1) {
    o << "\nroutes between GPUs (bottleneck, latency, path)\n";
    Table routes;
    for (int a = 0; a < gpus; ++a) {
      for (int b = a + 1; b < gpus; ++b) {
        routes.row({n.devices[n.gpus[a]].name, "->", n.devices[n.gpus[b]].name,
                    gbs(route_bandwidth(a, b)), us(route_latency(a, b)),
                    path_text(local_names(a, b))});
      }
    }
    routes.print(o);
  }
  if (nodes_ > 1) {
    const ClusterNetwork& net = network_;
    o << "\ncluster: " << nodes_ << " nodes, " << gpu_count() << " GPUs, " << devices_.size()
      << " devices, " << links_.size() << " links\n";
    o << "network: " << network_kind_name(net.kind);
    if (net.kind != NetworkKind::kSingleSwitch) {
      o << ", oversubscription " << num(net.oversubscription);
    }
    if (net.kind == NetworkKind::kFatTree) {
      o << ", " << (net.nodes_per_leaf > 0 ? std::to_string(net.nodes_per_leaf) : "all")
        << " nodes per leaf";
    }
    o << "; NIC ports " << (net.fabric.empty() ? "" : net.fabric + " ") << gbs(net.nic_bandwidth)
      << ", " << us(net.nic_latency);
    if (net.nic_burst_bytes > 0) o << ", shaper burst " << net.nic_burst_bytes << " B";
    o << "\n";
    int switches = 0;
    for (const Device& d : devices_) switches += d.kind == DeviceKind::kNetSwitch;
    o << "switches: " << switches;
    if (!plan_->leaf_up.empty()) {
      o << " (uplink of each " << (net.kind == NetworkKind::kFatTree ? "leaf" : "rail") << " "
        << gbs(links_[plan_->leaf_up.front()].bandwidth) << ")";
    }
    o << "\n";
    for (const auto& [a, b] : example_pairs(*this)) {
      std::vector<std::string> names;
      const auto& r = route(a, b);
      names.push_back(devices_[links_[r.front()].from].name);
      for (int l : r) names.push_back(devices_[links_[l].to].name);
      o << "route rank " << a << " -> rank " << b << ": " << path_text(names) << "  "
        << gbs(route_bandwidth(a, b)) << "  " << us(route_latency(a, b)) << "\n";
    }
  }
  return o.str();
}

std::string ClusterTopology::to_dot() const {
  std::ostringstream o;
  o << "graph \"" << node_type_.name << "\" {\n  node [fontsize=10];\n  edge [fontsize=8];\n";
  auto node_line = [&](int d, const std::string& indent) {
    const Device& dev = devices_[d];
    o << indent << "\"" << dev.name << "\" [shape=" << dot_shape(dev.kind) << "];\n";
  };
  const int per_node = static_cast<int>(node_type_.devices.size());
  for (int n = 0; n < nodes_; ++n) {
    o << "  subgraph \"cluster_n" << n << "\" {\n    label=\"node " << n << "\";\n";
    for (int d = n * per_node; d < (n + 1) * per_node; ++d) node_line(d, "    ");
    o << "  }\n";
  }
  for (std::size_t d = static_cast<std::size_t>(nodes_) * per_node; d < devices_.size(); ++d) {
    node_line(static_cast<int>(d), "  ");
  }
  for (const Cable& c : cables(links_)) {
    const TopoLink& f = links_[c.forward];
    std::string label = link_label(f) + "\\n" + gbs(f.bandwidth);
    if (c.backward >= 0 && links_[c.backward].bandwidth != f.bandwidth) {
      label += " / " + gbs(links_[c.backward].bandwidth);
    }
    o << "  \"" << devices_[f.from].name << "\" -- \"" << devices_[f.to].name << "\" [label=\""
      << label << "\"" << (c.backward < 0 ? ", dir=forward" : "") << "];\n";
  }
  o << "}\n";
  return o.str();
}

std::string ClusterTopology::to_json() const {
  const NodeType& n = node_type_;
  const int gpus = gpus_per_node_;
  auto names = [&](const std::vector<int>& r) {
    OJson list = OJson::array();
    if (!r.empty()) list.push_back(devices_[links_[r.front()].from].name);
    for (int l : r) list.push_back(devices_[links_[l].to].name);
    return list;
  };
  auto route_json = [&](int a, int b) {
    OJson j;
    j["from_rank"] = a;
    j["to_rank"] = b;
    j["path"] = names(route(a, b));
    j["bottleneck_gbytes_per_s"] = json_num(route_bandwidth(a, b) / kBytesPerGbyte);
    j["latency_us"] = json_num(to_micros(route_latency(a, b)));
    return j;
  };
  OJson node;
  node["name"] = n.name;
  node["description"] = n.description;
  node["source"] = n.source;
  node["nic_fabric"] = n.nic_fabric;
  node["gpus_per_node"] = gpus;
  node["nics_per_node"] = n.nics_per_node();
  OJson devices = OJson::array();
  for (const Device& d : n.devices) {
    devices.push_back({{"name", d.name}, {"kind", device_kind_name(d.kind)}});
  }
  node["devices"] = std::move(devices);
  OJson links = OJson::array();
  for (const TopoLink& l : n.links) {
    OJson j;
    j["from"] = n.devices[l.from].name;
    j["to"] = n.devices[l.to].name;
    j["kind"] = l.kind;
    j["type"] = l.type;
    j["count"] = l.count;
    j["gbytes_per_s"] = json_num(l.bandwidth / kBytesPerGbyte);
    j["latency_us"] = json_num(to_micros(l.latency));
    links.push_back(std::move(j));
  }
  node["links"] = std::move(links);
  OJson gpu_nic = OJson::array();
  for (int g = 0; g < gpus; ++g) {
    gpu_nic.push_back(n.gpu_nic[g] < 0 ? OJson(nullptr)
                                       : OJson(n.devices[n.nics[n.gpu_nic[g]]].name));
  }
  node["gpu_nic"] = std::move(gpu_nic);
  OJson ring = OJson::array();
  for (int g : intra_ring_) ring.push_back(n.devices[n.gpus[g]].name);
  node["intra_ring"] = std::move(ring);
  OJson routes = OJson::array();
  for (int a = 0; a < gpus; ++a) {
    for (int b = 0; b < gpus; ++b) {
      if (a != b) routes.push_back(route_json(a, b));
    }
  }
  node["routes"] = std::move(routes);
  OJson out;
  out["node_type"] = std::move(node);
  OJson cluster;
  cluster["nodes"] = nodes_;
  cluster["gpus"] = gpu_count();
  cluster["devices"] = devices_.size();
  cluster["links"] = links_.size();
  if (nodes_ > 1) {
    OJson net;
    net["kind"] = network_kind_name(network_.kind);
    net["fabric"] = network_.fabric;
    net["nic_gbytes_per_s"] = json_num(network_.nic_bandwidth / kBytesPerGbyte);
    net["nic_latency_us"] = json_num(to_micros(network_.nic_latency));
    if (network_.nic_burst_bytes > 0) net["nic_burst_bytes"] = network_.nic_burst_bytes;
    net["oversubscription"] = json_num(network_.oversubscription);
    net["nodes_per_leaf"] = network_.nodes_per_leaf;
    OJson switches = OJson::array();
    for (const Device& d : devices_) {
      if (d.kind == DeviceKind::kNetSwitch) switches.push_back(d.name);
    }
    net["switches"] = std::move(switches);
    if (!plan_->leaf_up.empty()) {
      net["uplink_gbytes_per_s"] =
          json_num(links_[plan_->leaf_up.front()].bandwidth / kBytesPerGbyte);
    }
    cluster["network"] = std::move(net);
    OJson examples = OJson::array();
    for (const auto& [a, b] : example_pairs(*this)) examples.push_back(route_json(a, b));
    cluster["example_routes"] = std::move(examples);
  }
  out["cluster"] = std::move(cluster);
  return out.dump(2) + "\n";
}

}  // namespace dagsgd::sim
