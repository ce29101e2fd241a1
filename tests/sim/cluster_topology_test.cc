// Cluster topologies: the bundled node types load and route as the real machines do, networks
// are built as specified, and routes are deterministic and cheap enough for 1,024-GPU clusters.
#include "dagsgd/sim/cluster_topology.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "dagsgd/model/hardware.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/sim/cluster_network.h"
#include "dagsgd/sim/cluster_request.h"
#include "dagsgd/sim/node_type.h"

namespace dagsgd::sim {
namespace {

using model::HardwareCatalog;

const std::vector<std::string> kBundled = {
    "cpu-1s",        "dgx-a100",     "dgx-h100",           "dgx1-v100",
    "k80-4board-2s", "pcie-4gpu-2s", "pcie-8gpu-2s-switch"};

NodeType load(const std::string& name) {
  auto n = load_node_type(name);
  EXPECT_TRUE(n.ok()) << (n.ok() ? "" : n.error().message);
  return n.ok() ? *n : NodeType{};
}

// The network of the node type's own fabric, as `dagsgd topology show` builds it.
ClusterNetwork network_for(const NodeType& node, const std::string& spec = "single-switch") {
  auto net = parse_network_spec(spec);
  EXPECT_TRUE(net.ok()) << spec;
  auto catalog = HardwareCatalog::load_default();
  EXPECT_TRUE(catalog.ok());
  auto fabric = catalog->fabric(node.nic_fabric);
  EXPECT_TRUE(fabric.ok()) << node.name << ": " << node.nic_fabric;
  EXPECT_TRUE(set_network_fabric(*net, *fabric).ok());
  return *net;
}

ClusterTopology build(const NodeType& node, int nodes, const ClusterNetwork& net) {
  auto t = ClusterTopology::build(node, nodes, net);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return std::move(*t);
}

// Device names along route(a, b).
std::vector<std::string> path(const ClusterTopology& t, int a, int b) {
  std::vector<std::string> names;
  const auto& r = t.route(a, b);
  if (r.empty()) return names;
  names.push_back(t.devices()[t.links()[r.front()].from].name);
  for (int l : r) names.push_back(t.devices()[t.links()[l].to].name);
  return names;
}

std::vector<std::string> names(std::initializer_list<const char*> list) {
  return std::vector<std::string>(list.begin(), list.end());
}

TEST(Topology, EveryBundledNodeTypeLoadsAndRoutes) {
  EXPECT_EQ(bundled_node_types().names(), kBundled);
  for (const auto& name : kBundled) {
    SCOPED_TRACE(name);
    const NodeType node = load(name);
    EXPECT_EQ(node.name, name);
    EXPECT_FALSE(node.description.empty());
    EXPECT_FALSE(node.source.empty());
    ASSERT_FALSE(node.nic_fabric.empty());
    EXPECT_FALSE(node.nics.empty());
    const ClusterTopology t = build(node, 2, network_for(node));
    const int g = t.gpus_per_node();
    for (int a = 0; a < t.gpu_count(); ++a) {
      for (int b = 0; b < t.gpu_count(); ++b) {
        const auto& r = t.route(a, b);
        if (a == b) {
          EXPECT_TRUE(r.empty());
          continue;
        }
        ASSERT_FALSE(r.empty()) << a << " -> " << b;
        EXPECT_EQ(t.links()[r.front()].from, t.gpu_device(a));
        EXPECT_EQ(t.links()[r.back()].to, t.gpu_device(b));
        // No GPU in between; between nodes, the two NICs.
        int nics = 0;
        for (std::size_t i = 1; i < r.size(); ++i) {
          EXPECT_EQ(t.links()[r[i - 1]].to, t.links()[r[i]].from);
          const DeviceKind via = t.devices()[t.links()[r[i]].from].kind;
          EXPECT_NE(via, DeviceKind::kGpu);
          nics += via == DeviceKind::kNic;
        }
        int network = 0;
        for (int l : r) network += t.is_network_link(l);
        EXPECT_EQ(network, a / g == b / g ? 0 : 2);
        EXPECT_EQ(nics, network);
        EXPECT_GT(t.route_bandwidth(a, b), 0);
      }
    }
    ASSERT_EQ(static_cast<int>(t.intra_ring().size()), g);
    EXPECT_EQ(t.intra_ring().front(), 0);
    EXPECT_EQ(std::set<int>(t.intra_ring().begin(), t.intra_ring().end()).size(),
              static_cast<std::size_t>(g));
    EXPECT_FALSE(t.describe().empty());
    EXPECT_EQ(t.to_dot().rfind("graph ", 0), 0u);
  }
}

TEST(Topology, BundledLinkRatesAreWhatTransfersSustain) {
  const NodeType dgx1 = load("dgx1-v100");
  const ClusterTopology t = build(dgx1, 1, {});
  // NCCL's per-link figures: NVLink2 20 GB/s, PCIe Gen3 x16 12 GB/s, Broadwell QPI 6 GB/s.
  EXPECT_NEAR(t.route_bandwidth(0, 1), 20e9, 1e7);  // NV1
  EXPECT_NEAR(t.route_bandwidth(0, 3), 40e9, 1e7);  // NV2
  EXPECT_NEAR(t.route_bandwidth(0, 5), 6e9, 1e7);   // over QPI
  const ClusterTopology a100 = build(load("dgx-a100"), 1, {});
  EXPECT_NEAR(a100.route_bandwidth(0, 7), 12 * 20e9, 1e8);  // 12 NVLink3 into the NVSwitches
  const ClusterTopology h100 = build(load("dgx-h100"), 1, {});
  EXPECT_NEAR(h100.route_bandwidth(0, 7), 18 * 20.6e9, 1e8);
  EXPECT_EQ(h100.route_latency(0, 7), 600);  // 0.3 us to the NVSwitch and 0.3 us out
}

TEST(Topology, Dgx1RoutesFollowTheCubeMesh) {
  const ClusterTopology t = build(load("dgx1-v100"), 1, {});
  // GPU 0 and 1: one NVLink.
  ASSERT_EQ(t.route(0, 1).size(), 1u);
  EXPECT_EQ(t.links()[t.route(0, 1)[0]].kind, "nvlink");
  EXPECT_EQ(t.links()[t.route(0, 1)[0]].count, 1);
  // GPU 0 and 4: two bonded NVLinks across the sockets' halves of the mesh.
  ASSERT_EQ(t.route(0, 4).size(), 1u);
  EXPECT_EQ(t.links()[t.route(0, 4)[0]].count, 2);
  // GPU 0 and 5 share no NVLink: PCIe switch, both sockets over QPI, the other PCIe switch.
  EXPECT_EQ(path(t, 0, 5),
            names({"n0.gpu0", "n0.plx0", "n0.cpu0", "n0.cpu1", "n0.plx2", "n0.gpu5"}));
  EXPECT_EQ(path(t, 5, 0),
            names({"n0.gpu5", "n0.plx2", "n0.cpu1", "n0.cpu0", "n0.plx0", "n0.gpu0"}));
  // Every pair has NVLink or this PCIe/QPI route: 16 of the 28 pairs have NVLink.
  int nvlink_pairs = 0;
  for (int a = 0; a < 8; ++a) {
    for (int b = a + 1; b < 8; ++b) nvlink_pairs += t.route(a, b).size() == 1;
  }
  EXPECT_EQ(nvlink_pairs, 16);
}

TEST(Topology, Dgx1RingUsesOnlyNvlinkHops) {
  const ClusterTopology t = build(load("dgx1-v100"), 1, {});
  // The bonded (NV2) links form one 8-cycle; the ring follows it.
  EXPECT_EQ(t.intra_ring(), (std::vector<int>{0, 3, 2, 1, 5, 6, 7, 4}));
  const auto& ring = t.intra_ring();
  for (std::size_t i = 0; i < ring.size(); ++i) {
    const auto& r = t.route(ring[i], ring[(i + 1) % ring.size()]);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(t.links()[r[0]].kind, "nvlink");
    EXPECT_EQ(t.links()[r[0]].count, 2);
  }
}

// Across nodes the ring runs from NIC to NIC through each node. A DGX-1 whose GPUs all use
// nic0 (one HCA, as in clusters that cable only one): the intra-node ring cut between GPUs 4 and
// 0 would leave the node from GPU 4 across the QPI link; cut between GPUs 0 and 3 both legs stay
// on CPU 0's PCIe tree and every hop of the chain is NVLink. With a NIC per PCIe switch (the
// bundled DGX-1) every cut is alike and the ring stays as it is.
TEST(Topology, RingsAcrossNodesLeaveAndEnterThroughTheNic) {
  NodeType one_hca = load("dgx1-v100");
  one_hca.gpu_nic.assign(8, 0);
  const ClusterTopology t = build(one_hca, 2, network_for(one_hca));
  EXPECT_EQ(t.node_chain(), (std::vector<int>{3, 2, 1, 5, 6, 7, 4, 0}));
  EXPECT_EQ(t.intra_ring(), (std::vector<int>{0, 3, 2, 1, 5, 6, 7, 4}));
  const std::vector<int> order = t.collective_order(16);
  ASSERT_EQ(order.size(), 16u);
  EXPECT_EQ(order[0], 3);
  EXPECT_EQ(order[8], 8 + 3);
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (int l : t.route(order[i], order[(i + 1) % order.size()])) {
      EXPECT_NE(t.links()[l].kind, "qpi") << order[i] << " -> " << order[(i + 1) % order.size()];
    }
  }
  // One node's collective still rings inside it.
  EXPECT_EQ(t.collective_order(8), t.intra_ring());
  const ClusterTopology four_hcas = build(load("dgx1-v100"), 2, network_for(load("dgx1-v100")));
  EXPECT_EQ(four_hcas.node_chain(), four_hcas.intra_ring());
}

TEST(Topology, PcieServerRoutesClimbOnlyAsFarAsNeeded) {
  const ClusterTopology t = build(load("pcie-8gpu-2s-switch"), 1, {});
  // Two GPUs on one switch stay below it.
  EXPECT_EQ(path(t, 0, 1), names({"n0.gpu0", "n0.plx0", "n0.gpu1"}));
  // Across switches of one socket: through the CPU root complex, not the other socket.
  EXPECT_EQ(path(t, 0, 2), names({"n0.gpu0", "n0.plx0", "n0.cpu0", "n0.plx1", "n0.gpu2"}));
  // Across sockets: the inter-socket link.
  const auto across = path(t, 1, 6);
  EXPECT_EQ(across, names({"n0.gpu1", "n0.plx0", "n0.cpu0", "n0.cpu1", "n0.plx3", "n0.gpu6"}));
  bool upi = false;
  for (int l : t.route(1, 6)) upi = upi || t.links()[l].kind == "upi";
  EXPECT_TRUE(upi);
  EXPECT_NEAR(t.route_bandwidth(1, 6), 10e9, 1e7);  // Skylake UPI as NCCL rates it
  // The root-port server: GPUs of one socket meet at the CPU.
  const ClusterTopology four = build(load("pcie-4gpu-2s"), 1, {});
  EXPECT_EQ(path(four, 0, 1), names({"n0.gpu0", "n0.cpu0", "n0.gpu1"}));
  EXPECT_EQ(path(four, 1, 2), names({"n0.gpu1", "n0.cpu0", "n0.cpu1", "n0.gpu2"}));
  // K80: the two GPUs of a board meet at its on-board switch.
  const ClusterTopology k80 = build(load("k80-4board-2s"), 1, {});
  EXPECT_EQ(path(k80, 2, 3), names({"n0.gpu2", "n0.plx1", "n0.gpu3"}));
}

TEST(Topology, InterNodeRoutesGoThroughTheAssignedNics) {
  const NodeType dgx1 = load("dgx1-v100");
  EXPECT_EQ(dgx1.gpu_nic, (std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3}));
  const ClusterTopology t = build(dgx1, 2, network_for(dgx1));
  EXPECT_EQ(path(t, 2, 8 + 5),
            names({"n0.gpu2", "n0.plx1", "n0.nic1", "switch", "n1.nic2", "n1.plx2", "n1.gpu5"}));
  const auto& r = t.route(2, 13);
  // NIC port out carries the fabric's per-message latency; ib-edr 0.6 us, 12 GB/s.
  EXPECT_TRUE(t.is_network_link(r[2]));
  EXPECT_TRUE(t.is_network_link(r[3]));
  EXPECT_EQ(t.links()[r[2]].latency, 600);
  EXPECT_DOUBLE_EQ(t.links()[r[2]].bandwidth, 96e9 / 8);
  EXPECT_EQ(t.route_latency(2, 13), 500 + 600 + 500);  // two GPU-attached PCIe links + NIC
  // DGX A100 and H100: GPU g uses NIC g.
  for (const char* name : {"dgx-a100", "dgx-h100"}) {
    const NodeType node = load(name);
    const ClusterTopology c = build(node, 2, network_for(node));
    for (int g = 0; g < 8; ++g) {
      const auto p = path(c, g, 8 + g);
      EXPECT_NE(std::find(p.begin(), p.end(), "n0.nic" + std::to_string(g)), p.end()) << name;
      EXPECT_NE(std::find(p.begin(), p.end(), "n1.nic" + std::to_string(g)), p.end()) << name;
    }
  }
}

double uplink_bandwidth(const ClusterTopology& t) {
  for (std::size_t l = 0; l < t.links().size(); ++l) {
    if (t.links()[l].type == "uplink") return t.links()[l].bandwidth;
  }
  return 0;
}

TEST(Topology, FatTreeLeafUplinksAreDownlinksOverTheOversubscription) {
  const NodeType dgx1 = load("dgx1-v100");
  for (double ratio : {1.0, 2.0, 4.0}) {
    ClusterNetwork net = network_for(dgx1, "fat-tree:" + std::to_string(ratio) + ":4");
    const ClusterTopology t = build(dgx1, 16, net);
    // 4 nodes x 4 NICs of 12 GB/s under each leaf.
    EXPECT_DOUBLE_EQ(uplink_bandwidth(t), 4 * 4 * net.nic_bandwidth / ratio) << ratio;
    int leaves = 0;
    int spines = 0;
    for (const Device& d : t.devices()) {
      leaves += d.name.rfind("leaf", 0) == 0;
      spines += d.name == "spine";
    }
    EXPECT_EQ(leaves, 4);
    EXPECT_EQ(spines, 1);
  }
  const ClusterTopology t = build(dgx1, 16, network_for(dgx1, "fat-tree:2:4"));
  // Within a leaf (nodes 0..3) no uplink; across leaves, one up and one down.
  auto uplinks = [&](int a, int b) {
    int n = 0;
    for (int l : t.route(a, b)) n += t.links()[l].type == "uplink";
    return n;
  };
  EXPECT_EQ(uplinks(0, 3 * 8), 0);
  EXPECT_EQ(uplinks(0, 4 * 8), 2);
  EXPECT_EQ(path(t, 0, 15 * 8 + 7).back(), "n15.gpu7");
  // Nodes that fit one leaf need no spine.
  const ClusterTopology small = build(dgx1, 3, network_for(dgx1, "fat-tree:2:4"));
  EXPECT_EQ(uplink_bandwidth(small), 0);
}

TEST(Topology, RailOptimizedKeepsEachNicOnItsRail) {
  const NodeType a100 = load("dgx-a100");
  const ClusterTopology t = build(a100, 4, network_for(a100, "rail:2"));
  // GPU 0 of node 0 to GPU 0 of node 1: NIC 0 to NIC 0, on rail 0 alone.
  const auto same = path(t, 0, 8);
  EXPECT_NE(std::find(same.begin(), same.end(), "rail0"), same.end());
  EXPECT_EQ(std::find(same.begin(), same.end(), "spine"), same.end());
  // GPU 0 to GPU 1 of another node: rail 0, the spine, rail 1.
  const auto cross = path(t, 0, 9);
  EXPECT_NE(std::find(cross.begin(), cross.end(), "spine"), cross.end());
  EXPECT_NE(std::find(cross.begin(), cross.end(), "rail1"), cross.end());
  // A rail's uplink: its 4 node ports over the oversubscription.
  EXPECT_DOUBLE_EQ(uplink_bandwidth(t), 4 * t.network().nic_bandwidth / 2);
}

TEST(Topology, UniformNodeTypeMatchesTheAnalyticalModel) {
  const double bw = 10e9;
  const NodeType u = uniform_node_type(4, bw, 1001, 1);
  ASSERT_TRUE(validate_node_type(u).ok());
  ClusterNetwork net;
  net.nic_bandwidth = 1.25e9;
  net.nic_latency = 5000;
  const ClusterTopology t = build(u, 3, net);
  // Inside a node: GPU, hub, GPU at the intra bandwidth and exactly the intra latency.
  EXPECT_EQ(t.route(0, 1).size(), 2u);
  EXPECT_DOUBLE_EQ(t.route_bandwidth(0, 1), bw);
  EXPECT_EQ(t.route_latency(0, 1), 1001);
  // Between nodes: a's hub link, hub to NIC, the NIC port, the other NIC, b's hub link.
  EXPECT_EQ(path(t, 1, 4 + 2),
            names({"n0.gpu1", "n0.hub", "n0.nic0", "switch", "n1.nic0", "n1.hub", "n1.gpu2"}));
  EXPECT_DOUBLE_EQ(t.route_bandwidth(1, 6), net.nic_bandwidth);
  EXPECT_EQ(t.route_latency(1, 6), 1001 + 5000);
  // All four GPUs of node 0 sending to node 1 share only the NIC ports: every other shared
  // link carries what all GPUs of a node together can send.
  std::vector<int> uses(t.links().size(), 0);
  for (int g = 0; g < 4; ++g) {
    for (int l : t.route(g, 4 + g)) ++uses[l];
  }
  for (std::size_t l = 0; l < uses.size(); ++l) {
    if (uses[l] < 2) continue;
    if (t.is_network_link(static_cast<int>(l))) continue;
    EXPECT_GE(t.links()[l].bandwidth, 4 * bw) << l;
  }
  // Two NICs: GPU g uses NIC g % 2.
  const NodeType two = uniform_node_type(4, bw, 1000, 2);
  EXPECT_EQ(two.gpu_nic, (std::vector<int>{0, 1, 0, 1}));
  EXPECT_EQ(build(two, 1, {}).intra_ring(), (std::vector<int>{0, 1, 2, 3}));
}

TEST(Topology, BuildsAreDeterministic) {
  const NodeType dgx1 = load("dgx1-v100");
  const ClusterNetwork net = network_for(dgx1, "fat-tree:2:2");
  const ClusterTopology a = build(dgx1, 8, net);
  const ClusterTopology b = build(dgx1, 8, net);
  ASSERT_EQ(a.links().size(), b.links().size());
  for (std::size_t l = 0; l < a.links().size(); ++l) {
    EXPECT_EQ(a.links()[l].from, b.links()[l].from);
    EXPECT_EQ(a.links()[l].to, b.links()[l].to);
    EXPECT_EQ(a.links()[l].bandwidth, b.links()[l].bandwidth);
  }
  // Routes asked for in a different order come out the same.
  for (int x = a.gpu_count() - 1; x >= 0; --x) {
    for (int y = 0; y < a.gpu_count(); ++y) (void)b.route(x, y);
  }
  for (int x = 0; x < a.gpu_count(); ++x) {
    for (int y = 0; y < a.gpu_count(); ++y) EXPECT_EQ(a.route(x, y), b.route(x, y));
  }
  EXPECT_EQ(a.intra_ring(), b.intra_ring());
  EXPECT_EQ(a.to_json(), b.to_json());
  // Copies share the routes already computed.
  const ClusterTopology c = a;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(&c.route(3, 60), &a.route(3, 60));
}

TEST(Topology, A1024GpuClusterAnswersRingRoutes) {
  const NodeType dgx1 = load("dgx1-v100");
  const ClusterTopology t = build(dgx1, 128, network_for(dgx1, "fat-tree:2:8"));
  ASSERT_EQ(t.gpu_count(), 1024);
  for (int r = 0; r < t.gpu_count(); ++r) {
    const int next = (r + 1) % t.gpu_count();
    const auto& route = t.route(r, next);
    ASSERT_FALSE(route.empty());
    EXPECT_EQ(t.links()[route.back()].to, t.gpu_device(next));
  }
  EXPECT_THROW((void)t.route(0, 1024), std::out_of_range);
}

TEST(Topology, RingBeyondEightGpusFindsTheNvlinkCycle) {
  // Ten GPUs on one PCIe switch, plus NVLink along the cycle 0-5-1-6-2-7-3-8-4-9-0.
  NodeType n;
  n.name = "ring10";
  const std::vector<int> cycle = {0, 5, 1, 6, 2, 7, 3, 8, 4, 9};
  for (int g = 0; g < 10; ++g) {
    n.devices.push_back({DeviceKind::kGpu, "gpu" + std::to_string(g), 0});
    n.gpus.push_back(g);
    n.gpu_nic.push_back(-1);
  }
  n.devices.push_back({DeviceKind::kPcieSwitch, "sw", 0});
  for (int g = 0; g < 10; ++g) {
    n.links.push_back({g, 10, 12e9, 500, "pcie", "pcie3", 1});
    n.links.push_back({10, g, 12e9, 500, "pcie", "pcie3", 1});
  }
  for (std::size_t i = 0; i < cycle.size(); ++i) {
    const int a = cycle[i];
    const int b = cycle[(i + 1) % cycle.size()];
    n.links.push_back({a, b, 20e9, 500, "nvlink", "nvlink2", 1});
    n.links.push_back({b, a, 20e9, 500, "nvlink", "nvlink2", 1});
  }
  const ClusterTopology t = build(n, 1, {});
  const auto& ring = t.intra_ring();
  for (std::size_t i = 0; i < ring.size(); ++i) {
    EXPECT_EQ(t.route_bandwidth(ring[i], ring[(i + 1) % ring.size()]), 20e9) << i;
  }
}

TEST(Topology, TiesGoToTheWiderThenTheLowerDevice) {
  // gpu0 and gpu1 meet at two switches, each two hops away.
  auto node_with = [](double via_sw0, double via_sw1) {
    NodeType n;
    n.name = "twin";
    n.devices = {{DeviceKind::kGpu, "gpu0", 0},
                 {DeviceKind::kGpu, "gpu1", 0},
                 {DeviceKind::kPcieSwitch, "sw0", 0},
                 {DeviceKind::kPcieSwitch, "sw1", 0}};
    n.gpus = {0, 1};
    n.gpu_nic = {-1, -1};
    for (int g = 0; g < 2; ++g) {
      for (int sw = 2; sw < 4; ++sw) {
        const double bw = sw == 2 ? via_sw0 : via_sw1;
        n.links.push_back({g, sw, bw, 0, "pcie", "p", 1});
        n.links.push_back({sw, g, bw, 0, "pcie", "p", 1});
      }
    }
    return n;
  };
  EXPECT_EQ(path(build(node_with(12e9, 12e9), 1, {}), 0, 1),
            names({"n0.gpu0", "n0.sw0", "n0.gpu1"}));
  EXPECT_EQ(path(build(node_with(12e9, 24e9), 1, {}), 0, 1),
            names({"n0.gpu0", "n0.sw1", "n0.gpu1"}));
}

TEST(Topology, OversizedNodeTypesAreRefused) {
  auto e = ClusterTopology::build(uniform_node_type(1100, 1e9, 0, 1), 1, {});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("too large"), std::string::npos) << e.error().message;
  // 300 GPUs is still answered, ring included.
  EXPECT_EQ(build(uniform_node_type(300, 1e9, 0, 1), 1, {}).intra_ring().size(), 300u);
}

// ---- Networks and build errors ------------------------------------------------------------

TEST(TopologyNetworks, SpecsParse) {
  auto s = parse_network_spec("single-switch");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, NetworkKind::kSingleSwitch);
  auto f = parse_network_spec("fat-tree:2.5:16");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->kind, NetworkKind::kFatTree);
  EXPECT_DOUBLE_EQ(f->oversubscription, 2.5);
  EXPECT_EQ(f->nodes_per_leaf, 16);
  auto r = parse_network_spec("rail");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, NetworkKind::kRailOptimized);
  EXPECT_DOUBLE_EQ(r->oversubscription, 1);
  EXPECT_DOUBLE_EQ(parse_network_spec("rail:3")->oversubscription, 3);
  EXPECT_DOUBLE_EQ(parse_network_spec("fat-tree:1e1")->oversubscription, 10);
  // Each field says its range and what came.
  EXPECT_EQ(parse_network_spec("fat-tree:1e9").error().message,
            "network 'fat-tree:1e9': OVERSUB must be a number from 1 to 1000000 (downlink / "
            "uplink capacity), got '1e9'");
  EXPECT_EQ(parse_network_spec("fat-tree:2:1.5").error().message,
            "network 'fat-tree:2:1.5': NODES_PER_LEAF must be a whole number from 1 to 1000000, "
            "got '1.5'");
  for (const char* bad :
       {"torus", "fat-tree", "fat-tree:0.5", "fat-tree:2:0", "fat-tree:2:1.5", "fat-tree:nan",
        "rail:2:4", "single-switch:2", "fat-tree:-2", "", "fat-tree:inf", "fat-tree:2:2e6"}) {
    auto e = parse_network_spec(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_NE(e.error().message.find(std::string("network '") + bad + "'"), std::string::npos)
        << e.error().message;
  }
}

TEST(TopologyNetworks, BadClustersAreErrors) {
  const NodeType dgx1 = load("dgx1-v100");
  ClusterNetwork net = network_for(dgx1);
  EXPECT_FALSE(ClusterTopology::build(dgx1, 0, net).ok());
  ClusterNetwork no_speed = net;
  no_speed.nic_bandwidth = 0;
  auto e = ClusterTopology::build(dgx1, 2, no_speed);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("NIC bandwidth"), std::string::npos);
  EXPECT_TRUE(ClusterTopology::build(dgx1, 1, no_speed).ok());  // one node needs no network
  const NodeType nic_less = uniform_node_type(2, 1e9, 0, 0);
  auto n = ClusterTopology::build(nic_less, 2, net);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("has no NIC"), std::string::npos);
  NodeType broken = dgx1;
  broken.links.pop_back();  // one direction of the QPI link
  auto b = ClusterTopology::build(broken, 1, net);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("node type 'dgx1-v100': link"), std::string::npos)
      << b.error().message;
  HardwareCatalog catalog = *HardwareCatalog::load_default();
  ClusterNetwork intra;
  auto s = set_network_fabric(intra, *catalog.fabric("nvlink2"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("intra-node"), std::string::npos);
}

TEST(Topology, ClusterByNameTakesTheNodeTypesNicFabricUnlessGiven) {
  ClusterRequest r;
  r.node_type = "dgx1-v100";
  r.nodes = 2;
  r.network = "fat-tree:2:1";
  auto own = build_cluster(r);
  ASSERT_TRUE(own.ok()) << own.error().message;
  EXPECT_EQ(own->gpu_count(), 16);
  EXPECT_EQ(own->network().fabric, load("dgx1-v100").nic_fabric);
  r.inter = "10gbe";
  auto given = build_cluster(r);
  ASSERT_TRUE(given.ok()) << given.error().message;
  EXPECT_EQ(given->network().fabric, "10gbe");
  r.inter = "warp-drive";
  auto unknown = build_cluster(r);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("warp-drive"), std::string::npos);
  // A node type without a nic_fabric needs the fabric named for a cluster of several nodes.
  auto text = model::read_file(model::data_path("topologies/dgx1-v100.json"));
  ASSERT_TRUE(text.ok());
  const std::string file = std::filesystem::temp_directory_path() / "dagsgd-no-nic-fabric.json";
  std::string body = *text;  // less its line "nic_fabric": "...",
  const std::size_t at = body.find("\"nic_fabric\"");
  ASSERT_NE(at, std::string::npos);
  body.erase(at, body.find('\n', at) + 1 - at);
  std::ofstream(file) << body;
  r = ClusterRequest{file, 2};
  auto missing = build_cluster(r);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("names no nic_fabric"), std::string::npos)
      << missing.error().message;
  r.nodes = 1;
  EXPECT_TRUE(build_cluster(r).ok());
}

}  // namespace
}  // namespace dagsgd::sim
