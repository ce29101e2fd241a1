// Fuzz target: cluster node-type files (--node, datasets/topologies), then a two-node cluster
// built from each one that loads, its routes and its intra-node ring. Whatever the bytes: an
// Error, or routes over existing links with positive bandwidths.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/sim/cluster_topology.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd::sim;
  auto node = parse_node_type_json(dagsgd::fuzz::text_of(data, size), "fuzz");
  if (!node.ok()) return 0;
  FUZZ_REQUIRE(validate_node_type(*node).ok());
  auto network = parse_network_spec("fat-tree:2:1");
  FUZZ_REQUIRE(network.ok());
  network->nic_bandwidth = 12.5e9;
  network->nic_latency = 1000;
  auto cluster = ClusterTopology::build(*node, 2, *network);
  if (!cluster.ok()) return 0;
  const int gpus = cluster->gpu_count();
  FUZZ_REQUIRE(gpus == 2 * node->gpus_per_node());
  if (gpus < 2) return 0;
  for (int b : {1, gpus / 2, gpus - 1}) {
    for (int link : cluster->route(0, b)) {
      FUZZ_REQUIRE(link >= 0 && static_cast<std::size_t>(link) < cluster->links().size());
      FUZZ_REQUIRE(cluster->links()[static_cast<std::size_t>(link)].bandwidth > 0);
    }
    FUZZ_REQUIRE(cluster->route_latency(0, b) >= 0);
  }
  FUZZ_REQUIRE(static_cast<int>(cluster->intra_ring().size()) == node->gpus_per_node());
  return 0;
}
