// Cluster networks (cluster_network.h): the CLI's --cluster-network spec and the NIC speed an
// inter-node fabric gives.
#include "dagsgd/sim/cluster_network.h"

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "dagsgd/model/number_range.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;
using model::FabricSpec;
using model::NumberRange;
using model::ok;
using model::parse_number;
using model::whole_number_range;

const char* network_kind_name(NetworkKind k) {
  static constexpr const char* kNames[] = {"single-switch", "fat-tree", "rail-optimized"};
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "?";
}

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

}  // namespace dagsgd::sim
