// The ring orders ClusterTopology::build fixes inside a node: the intra-node ring and its cut
// into a chain that leaves and enters the node through NICs.
#pragma once

#include <utility>
#include <vector>

namespace dagsgd::sim::topo {

// The order of the local GPUs around a ring (ClusterTopology::intra_ring), from the bottleneck
// bandwidth `width[a][b]` and the link count `hops[a][b]` of the node-local route between GPUs.
std::vector<int> ring_order(int gpus, const std::vector<std::vector<double>>& width,
                            const std::vector<std::vector<int>>& hops);

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
                                    const std::vector<std::pair<double, int>>& leg_in);

}  // namespace dagsgd::sim::topo
