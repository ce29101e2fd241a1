// A cluster by name (cluster_request.h).
#include "dagsgd/sim/cluster_request.h"

#include "dagsgd/model/hardware.h"
#include "dagsgd/sim/cluster_network.h"
#include "dagsgd/sim/node_type.h"

namespace dagsgd::sim {

model::Expected<ClusterTopology> build_cluster(const ClusterRequest& r) {
  auto node = load_node_type(r.node_type);
  if (!node) return node.error();
  auto network = parse_network_spec(r.network);
  if (!network) return network.error();
  const std::string fabric = r.inter.empty() ? node->nic_fabric : r.inter;
  if (r.nodes > 1 && fabric.empty()) {
    return model::Error{"node type '" + node->name +
                        "' names no nic_fabric: give the fabric of its NICs"};
  }
  if (r.nodes > 1 || !r.inter.empty()) {
    auto spec = model::find_fabric(fabric, r.fabric_files);
    if (!spec) return spec.error();
    DAGSGD_TRY(set_network_fabric(*network, *spec));
  }
  return ClusterTopology::build(*node, r.nodes, *network);
}

}  // namespace dagsgd::sim
