// A cluster by name, as `dagsgd topology show` takes it, and the cluster built from it.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/sim/cluster_topology.h"

namespace dagsgd::sim {

// A node type (a bundled name or a file), how many nodes, how they are joined
// (parse_network_spec) and the fabric of the NIC ports (a catalog name or one of `fabric_files`;
// "": the node type's nic_fabric, which a cluster of more than one node needs).
struct ClusterRequest {
  std::string node_type;
  int nodes = 1;
  std::string network = "single-switch";
  std::string inter;
  std::vector<std::string> fabric_files;
};

// The node type loaded, the network parsed and given its fabric, the cluster built
// (ClusterTopology::build). Errors name the node type, the network or the fabric.
model::Expected<ClusterTopology> build_cluster(const ClusterRequest& request);

}  // namespace dagsgd::sim
