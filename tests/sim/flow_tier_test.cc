// The flow-level tier against hand-computed cases: exact agreement with the analytical formulas
// where nothing is shared beyond what they assume, and the sharing they miss (a ring through a
// shared root complex, GPUs behind one NIC, incast, two collectives in flight).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

#include "common/sweep_fixtures.h"
#include "dagsgd/model/collective_flows.h"
#include "dagsgd/sim/flow_network.h"
#include "dagsgd/sim/predict.h"

namespace dagsgd::sim {
namespace {

using model::FlowPlan;

const model::FabricSpec& fabric(const std::string& name) {
  static std::map<std::string, model::FabricSpec> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto f = testing::bundled_catalogs().hardware.fabric(name);
    EXPECT_TRUE(f.ok()) << name;
    it = cache.emplace(name, *f).first;
  }
  return it->second;
}

// The plain cluster both tiers describe: `nodes` x `g` GPUs, intra and inter fabrics.
struct Plain {
  model::Topology topo;
  std::shared_ptr<const ClusterTopology> cluster;
};

Plain plain(int nodes, int g, const std::string& intra = "pcie3",
            const std::string& inter = "10gbe") {
  Plain p;
  p.topo.nodes = nodes;
  p.topo.gpus_per_node = g;
  p.topo.intra = model::LinkCost::from_fabric(fabric(intra));
  p.topo.inter = model::LinkCost::from_fabric(fabric(inter));
  auto net = parse_network_spec("single-switch");
  EXPECT_TRUE(net.ok());
  EXPECT_TRUE(set_network_fabric(*net, fabric(inter)).ok());
  auto c = ClusterTopology::build(
      uniform_node_type(g, fabric(intra).achievable_bandwidth, fabric(intra).latency), nodes, *net);
  EXPECT_TRUE(c.ok()) << c.error().message;
  p.cluster = std::make_shared<ClusterTopology>(std::move(*c));
  return p;
}

std::vector<int> in_order(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

model::CollectiveFlows flows(const Plain& p, const std::string& algorithm, double topk = 0) {
  model::ExchangeConfig config;
  config.algorithm = algorithm;
  config.topk = topk;
  auto f = model::CollectiveFlows::make(p.topo, config, in_order(p.topo.workers()));
  EXPECT_TRUE(f.ok()) << f.error().message;
  return std::move(*f);
}

// One GPU per node, or one node: every link carries what the formula assumes, so both tiers
// give the same time to the nanosecond.
TEST(FlowTier, AgreesWithTheFormulasWithoutSharing) {
  struct Case {
    int nodes;
    int g;
    std::string algorithm;
  };
  // Every row of the table of algorithms (collective_algorithms.cc), on one node, across
  // nodes and on a rank count that is not a power of two; hierarchical ones on full nodes too.
  std::vector<Case> cases = {{4, 4, "hier"}, {2, 4, "hier"}};
  for (const auto& name : model::comm_algorithm_names()) {
    if (name == "auto") continue;
    for (const auto& [nodes, g] : {std::pair{8, 1}, std::pair{6, 1}, std::pair{1, 8}}) {
      cases.push_back({nodes, g, name});
    }
  }
  for (const auto& c : cases) {
    const Plain p = plain(c.nodes, c.g);
    const auto f = flows(p, c.algorithm);
    for (std::int64_t elements : {1'000LL, 250'000LL, 25'000'000LL}) {
      const FlowPlan plan = f.plan(elements).value();
      const double t = isolated_time_ns(*p.cluster, plan);
      EXPECT_NEAR(t, static_cast<double>(plan.analytical), 1.0)
          << c.algorithm << " on " << c.nodes << " x " << c.g << ", " << elements << " elements";
    }
  }
  // Every other collective's rows too.
  for (model::CollectiveOp op :
       {model::CollectiveOp::kReduceScatter, model::CollectiveOp::kAllgather,
        model::CollectiveOp::kAlltoall, model::CollectiveOp::kBroadcast,
        model::CollectiveOp::kReduce, model::CollectiveOp::kSendRecv}) {
    for (const auto& name : model::collective_op_algorithms(op)) {
      for (const auto& [nodes, g] : {std::pair{8, 1}, std::pair{6, 1}, std::pair{1, 8}}) {
        const Plain p = plain(nodes, g);
        const auto f = flows(p, "ring");
        for (double bytes : {4e3, 1e6, 1e8}) {
          auto plan = f.plan_collective(op, name, bytes);
          ASSERT_TRUE(plan.ok()) << plan.error().message;
          EXPECT_NEAR(isolated_time_ns(*p.cluster, *plan), static_cast<double>(plan->analytical),
                      1.0)
              << model::collective_op_name(op) << " " << name << " on " << nodes << " x " << g
              << ", " << bytes << " bytes";
        }
      }
    }
  }
  // Top-k's allgather too.
  const Plain p = plain(8, 1);
  const FlowPlan sparse = flows(p, "ring", 0.01).plan(10'000'000).value();
  EXPECT_EQ(sparse.pattern->algorithm, "allgather");
  EXPECT_NEAR(isolated_time_ns(*p.cluster, sparse), static_cast<double>(sparse.analytical), 1.0);
}

// Each row of the table counts, without building them, the transfers its pattern holds: the
// count the flow tier checks against its limit.
TEST(FlowTier, EveryRowCountsTheTransfersItBuilds) {
  const std::vector<std::pair<int, int>> shapes = {{1, 2}, {1, 5}, {2, 3}, {3, 4}, {5, 1},
                                                   {7, 1}, {4, 4}, {6, 2}, {1, 8}, {13, 1}};
  for (model::CollectiveOp op :
       {model::CollectiveOp::kAllreduce, model::CollectiveOp::kReduceScatter,
        model::CollectiveOp::kAllgather, model::CollectiveOp::kAlltoall,
        model::CollectiveOp::kBroadcast, model::CollectiveOp::kReduce,
        model::CollectiveOp::kSendRecv}) {
    for (const auto& name : model::collective_op_algorithms(op)) {
      for (const auto& [nodes, g] : shapes) {
        const Plain p = plain(nodes, g);
        auto plan = flows(p, "ring").plan_collective(op, name, 1e6);
        ASSERT_TRUE(plan.ok()) << plan.error().message;
        std::size_t built = 0;
        for (const auto& phase : plan->pattern->phases) built += phase.size();
        auto count = model::flow_transfer_count(p.topo, op, name);
        ASSERT_TRUE(count.ok()) << count.error().message;
        EXPECT_EQ(*count, static_cast<double>(built))
            << model::collective_op_name(op) << " " << name << " on " << nodes << " x " << g;
      }
    }
  }
}

// A pattern over the limit is refused before it is built, naming the collective, the algorithm,
// the GPUs and the way out; every pair of 8,192 GPUs is 67 million transfers a phase.
TEST(FlowTier, RefusesAPatternBeyondItsLimit) {
  model::Topology topo;
  topo.nodes = 1024;
  topo.gpus_per_node = 8;
  topo.intra = model::LinkCost::from_fabric(fabric("nvlink3"));
  topo.inter = model::LinkCost::from_fabric(fabric("ib-ndr"));
  const auto count = [&](model::CollectiveOp op, const char* name) {
    auto n = model::flow_transfer_count(topo, op, name);
    EXPECT_TRUE(n.ok());
    return n.ok() ? *n : 0;
  };
  EXPECT_EQ(count(model::CollectiveOp::kAllreduce, "ps"), 2.0 * 8192 * 8191);
  EXPECT_EQ(count(model::CollectiveOp::kAlltoall, "pairwise"), 8192.0 * 8191);
  EXPECT_EQ(count(model::CollectiveOp::kAllreduce, "ring"), 2.0 * 8192);
  model::ExchangeConfig config;
  config.algorithm = "ps";
  auto f = model::CollectiveFlows::make(topo, config, in_order(8192));
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto ps = f->plan(25'000'000);
  ASSERT_FALSE(ps.ok());
  for (const char* part : {"flow tier", "1.34e+08 transfers", "allreduce by ps", "8192 GPUs",
                           "33554432", "--network-model analytic, no --topology"}) {
    EXPECT_NE(ps.error().message.find(part), std::string::npos) << ps.error().message;
  }
  auto alltoall = f->plan_collective(model::CollectiveOp::kAlltoall, "pairwise", 1e6);
  ASSERT_FALSE(alltoall.ok());
  EXPECT_NE(alltoall.error().message.find("alltoall by pairwise"), std::string::npos)
      << alltoall.error().message;
  // The ring over the same GPUs is far below it; 4,096 GPUs of a colocated parameter server just
  // fit.
  EXPECT_TRUE(f->plan_collective(model::CollectiveOp::kAllreduce, "ring", 1e6).ok());
  topo.nodes = 512;
  EXPECT_LE(count(model::CollectiveOp::kAllreduce, "ps"), model::kMaxFlowTransfers);
}

// Four GPUs of a node behind one NIC: a parameter-server exchange across nodes sends every
// GPU's shards through it, which the formula (one link per worker) does not see.
TEST(FlowTier, GpusBehindOneNicShareIt) {
  const Plain p = plain(2, 4);
  const FlowPlan plan = flows(p, "ps").plan(10'000'000).value();
  const double t = isolated_time_ns(*p.cluster, plan);
  // Each GPU sends 1/8 of 40 MB to each of the 4 GPUs of the other node: 16 transfers of 5 MB
  // leave through one NIC, per phase, against the formula's 7/8 x 40 MB on a worker's link.
  const double nic = fabric("10gbe").achievable_bandwidth * 1e-9;  // bytes/ns
  const double beta = 1 / nic;
  const double per_phase_formula = 7.0 / 8.0 * 40e6 * beta;
  const double per_phase_flow = 16 * 5e6 / nic;
  EXPECT_NEAR(t - static_cast<double>(plan.analytical), 2 * (per_phase_flow - per_phase_formula),
              2.0);
  EXPECT_GT(t, 1.8 * static_cast<double>(plan.analytical));
}

// A ring over eight GPUs on two sockets of a PCIe server crosses the inter-socket link twice
// (once each way per direction of the ring): its transfers move at half that link's rate when it
// is the narrowest.
TEST(FlowTier, ARingThroughTheSocketLinkCrossesItTwice) {
  auto node = load_node_type("pcie-8gpu-2s-switch");
  ASSERT_TRUE(node.ok()) << node.error().message;
  auto net = parse_network_spec("single-switch");
  ASSERT_TRUE(set_network_fabric(*net, fabric("10gbe")).ok());
  auto c = ClusterTopology::build(*node, 1, *net);
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto cluster = std::make_shared<ClusterTopology>(std::move(*c));
  model::Topology topo;
  topo.nodes = 1;
  topo.gpus_per_node = 8;
  topo.intra = model::LinkCost::from_fabric(fabric("pcie3"));
  topo.inter = topo.intra;
  std::vector<int> order;
  for (int g : cluster->intra_ring()) order.push_back(g);
  auto f = model::CollectiveFlows::make(topo, model::ExchangeConfig{"ring"}, order);
  ASSERT_TRUE(f.ok());
  const FlowPlan plan = f->plan(25'000'000).value();
  ASSERT_EQ(plan.pattern->phases.size(), 2u);
  // The narrowest link a ring transfer crosses, counted as often as transfers cross it.
  double slowest = 1e300;
  std::map<int, int> uses;
  for (const auto& t : plan.pattern->phases[0]) {
    for (int l : cluster->route(t.src, t.dst)) ++uses[l];
  }
  int socket_uses = 0;
  for (const auto& [l, n] : uses) {
    const auto& link = cluster->links()[static_cast<std::size_t>(l)];
    const auto& from = cluster->devices()[static_cast<std::size_t>(link.from)];
    const auto& to = cluster->devices()[static_cast<std::size_t>(link.to)];
    if (from.kind == DeviceKind::kCpu && to.kind == DeviceKind::kCpu) {
      socket_uses = std::max(socket_uses, n);
    }
    slowest = std::min(slowest, link.bandwidth * 1e-9 / n);
  }
  EXPECT_EQ(socket_uses, 1) << "one transfer each way per ring direction";
  const double bytes = plan.amounts[0].bytes;
  const double t = isolated_time_ns(*cluster, plan);
  EXPECT_NEAR(t, plan.amounts[0].fixed + plan.amounts[1].fixed + 2 * bytes / slowest, 2.0);
  EXPECT_GT(t, 1.15 * static_cast<double>(plan.analytical))
      << "the socket link (10 GB/s) is narrower than a GPU's PCIe link (12 GB/s)";
}

// Engine and network together: a DAG whose tasks are collectives.
SimResult run(model::Dag& dag, FlowNetwork& net) {
  dag.finalize();
  auto r = simulate(dag, &net);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return *r;
}

FlowPlan one_phase(std::vector<model::Transfer> transfers, double bytes, double fixed = 0) {
  auto pattern = std::make_shared<model::FlowPattern>();
  pattern->algorithm = "custom";
  pattern->phases = {std::move(transfers)};
  FlowPlan plan;
  plan.pattern = pattern;
  plan.amounts = {{fixed, bytes}};
  return plan;
}

// A collective on `res`, a resource several may hold at once: only the links slow it down.
model::TaskId add_collective(model::Dag& dag, model::ResourceId res) {
  model::Task t;
  t.kind = model::TaskKind::kComm;
  t.worker = -1;
  t.resource = res;
  return dag.add_task(t);
}

// A shaped inter-node fabric (FabricSpec::burst_bytes): every NIC port, both directions, has a
// bucket of 1 MB. One collective of three phases from node 0 to node 1: 3 MB with full buckets
// (1 MB passes at once, 2 MB at the rate, which leaves nothing to refill), then 0.5 MB of idle
// time (fixed part) refills 0.5 MB, so of the next 3 MB 2.5 MB wait; the last 1 MB follows at once
// and finds the buckets empty. Unshaped: 7 MB at the rate plus the idle time.
TEST(FlowTier, AShapedLinkPassesItsBurstAtOnceAndRefillsAtItsRate) {
  model::FabricSpec shaped = fabric("10gbe");
  shaped.burst_bytes = 1'000'000;
  const double nic = shaped.achievable_bandwidth * 1e-9;
  auto net_spec = parse_network_spec("single-switch");
  ASSERT_TRUE(net_spec.ok());
  ASSERT_TRUE(set_network_fabric(*net_spec, shaped).ok());
  EXPECT_EQ(net_spec->nic_burst_bytes, 1'000'000);
  auto c = ClusterTopology::build(uniform_node_type(1, fabric("pcie3").achievable_bandwidth, 0), 2,
                                  *net_spec);
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto cluster = std::make_shared<ClusterTopology>(std::move(*c));
  int shaped_links = 0;
  for (const auto& l : cluster->links()) shaped_links += l.burst_bytes == 1'000'000;
  EXPECT_EQ(shaped_links, 4) << "each NIC port, both directions";
  auto pattern = std::make_shared<model::FlowPattern>();
  pattern->algorithm = "custom";
  pattern->phases = {{{0, 1}}, {{0, 1}}, {{0, 1}}};
  FlowPlan plan;
  plan.pattern = pattern;
  const double idle = 0.5e6 / nic;
  plan.amounts = {{0, 3e6}, {idle, 3e6}, {0, 1e6}};
  for (bool with_burst : {true, false}) {
    model::Dag dag;
    auto res = dag.add_resource("collectives", 8);
    const auto a = add_collective(dag, res);
    std::shared_ptr<const ClusterTopology> on = cluster;
    if (!with_burst) {
      auto plain_spec = *net_spec;
      plain_spec.nic_burst_bytes = 0;
      auto unshaped = ClusterTopology::build(
          uniform_node_type(1, fabric("pcie3").achievable_bandwidth, 0), 2, plain_spec);
      ASSERT_TRUE(unshaped.ok());
      on = std::make_shared<ClusterTopology>(std::move(*unshaped));
    }
    FlowNetwork net(on);
    net.assign(a, plan);
    const SimResult r = run(dag, net);
    const double expected = with_burst ? (2e6 + 0.5e6 + 2.5e6 + 1e6) / nic : 7.5e6 / nic;
    EXPECT_NEAR(static_cast<double>(r.finish[0]), expected, 2.0) << with_burst;
  }
}

// Two collectives in flight on the same links take twice as long as one alone; after the first
// ends the second has the links to itself.
TEST(FlowTier, TwoCollectivesInFlightShareTheLinks) {
  const Plain p = plain(2, 1);
  const double nic = fabric("10gbe").achievable_bandwidth * 1e-9;
  model::Dag dag;
  auto res = dag.add_resource("collectives", 8);
  const auto a = add_collective(dag, res);
  const auto b = add_collective(dag, res);
  FlowNetwork net(p.cluster);
  net.assign(a, one_phase({{0, 1}}, 10e6));
  net.assign(b, one_phase({{0, 1}}, 20e6));
  const SimResult r = run(dag, net);
  // Both at half rate until a's 10 MB are through (20 MB moved), then b alone for its rest.
  const double a_end = 20e6 / nic;
  const double b_end = a_end + 10e6 / nic;
  EXPECT_NEAR(static_cast<double>(r.finish[0]), a_end, 1.0);
  EXPECT_NEAR(static_cast<double>(r.finish[1]), b_end, 1.0);
  const auto loads = net.loads(0, b_end);
  double most = 0;
  for (const auto& l : loads) most = std::max(most, l.bytes);
  EXPECT_NEAR(most, 30e6, 1e3) << "the NIC port carried both";
}

// One transfer at a time per pair of ranks (a stack whose library.peer_transfers is "serial"):
// on 3 nodes, a (0 -> 1), b (1 -> 0) and c (2 -> 0) start together with 10 MB each. In parallel
// a has node 0's uplink alone while b and c share its downlink (both end at 20 MB / NIC). Serial,
// b waits for a (the pair 0-1, whatever the direction), c has the downlink alone: a and c end at
// 10 MB / NIC, b 10 MB later.
TEST(FlowTier, SerialPeersMoveOneTransferAtATimeBetweenTwoRanks) {
  const Plain p = plain(3, 1);
  const double nic = fabric("10gbe").achievable_bandwidth * 1e-9;
  for (bool serial : {false, true}) {
    model::Dag dag;
    auto res = dag.add_resource("collectives", 8);
    FlowNetwork net(p.cluster);
    net.set_serial_peers(serial);
    net.assign(add_collective(dag, res), one_phase({{0, 1}}, 10e6));
    net.assign(add_collective(dag, res), one_phase({{1, 0}}, 10e6));
    net.assign(add_collective(dag, res), one_phase({{2, 0}}, 10e6));
    const SimResult r = run(dag, net);
    const double one = 10e6 / nic;
    EXPECT_NEAR(static_cast<double>(r.finish[0]), one, 1.0) << serial;
    EXPECT_NEAR(static_cast<double>(r.finish[1]), 2 * one, 1.0) << serial;
    EXPECT_NEAR(static_cast<double>(r.finish[2]), serial ? one : 2 * one, 1.0) << serial;
  }
  // Two phases each (a reduce 1 -> 0, then a broadcast 0 -> 1, as libnbc's binomial tree on 2
  // ranks): serial, the phases alternate between the two collectives in the order they became
  // ready: a's reduce, b's reduce, a's broadcast, b's broadcast.
  auto two_phases = [](double bytes) {
    auto pattern = std::make_shared<model::FlowPattern>();
    pattern->algorithm = "binomial";
    pattern->phases = {{{1, 0}}, {{0, 1}}};
    FlowPlan plan;
    plan.pattern = pattern;
    plan.amounts = {{0, bytes}, {0, bytes}};
    return plan;
  };
  model::Dag dag;
  auto res = dag.add_resource("collectives", 8);
  FlowNetwork net(p.cluster);
  net.set_serial_peers(true);
  net.assign(add_collective(dag, res), two_phases(10e6));
  net.assign(add_collective(dag, res), two_phases(10e6));
  const SimResult r = run(dag, net);
  EXPECT_NEAR(static_cast<double>(r.finish[0]), 3 * 10e6 / nic, 1.0);
  EXPECT_NEAR(static_cast<double>(r.finish[1]), 4 * 10e6 / nic, 1.0);
}

// A measured curve slower than the links (sim::fit_plan_to): what the links do not explain is
// the library's own time, a fixed part before each phase's transfers in proportion to their bytes,
// and the transfers keep the NIC's rate. Two such 2-rank collectives (reduce 1 -> 0, broadcast
// 0 -> 1, 10 MB each, measured at twice their time on the wire: one = 10 MB / NIC) under serial
// peers: a fixed [0, 1], reduce [1, 2], fixed [2, 3], broadcast [3, 4]; b's reduce waits for the
// pair until 2, [2, 3], then fixed [3, 4], broadcast [4, 5]. Slowed to one rate instead (half the
// NIC) each transfer would hold the pair for 2 and they would end at 6 and 8.
TEST(FlowTier, AMeasuredCurveSlowerThanTheLinksLeavesThePairFreeMeanwhile) {
  const Plain p = plain(2, 1);
  const double nic = fabric("10gbe").achievable_bandwidth * 1e-9;
  const double one = 10e6 / nic;
  auto fitted = [&] {
    auto pattern = std::make_shared<model::FlowPattern>();
    pattern->algorithm = "binomial";
    pattern->phases = {{{1, 0}}, {{0, 1}}};
    FlowPlan plan;
    plan.pattern = pattern;
    plan.amounts = {{0, 10e6}, {0, 10e6}};
    fit_plan_to(plan, *p.cluster, 4 * one);
    EXPECT_NEAR(plan.amounts[0].fixed, one, 1e-6);
    EXPECT_NEAR(plan.amounts[1].fixed, one, 1e-6);
    EXPECT_EQ(plan.amounts[0].bytes, 10e6);
    EXPECT_NEAR(isolated_time_ns(*p.cluster, plan), 4 * one, 1e-3);
    return plan;
  };
  model::Dag dag;
  auto res = dag.add_resource("collectives", 8);
  FlowNetwork net(p.cluster);
  net.set_serial_peers(true);
  net.assign(add_collective(dag, res), fitted());
  net.assign(add_collective(dag, res), fitted());
  const SimResult r = run(dag, net);
  EXPECT_NEAR(static_cast<double>(r.finish[0]), 4 * one, 1.0);
  EXPECT_NEAR(static_cast<double>(r.finish[1]), 5 * one, 1.0);
  // Faster than that: the fixed parts shrink, the transfers stay.
  FlowPlan fast = fitted();
  fit_plan_to(fast, *p.cluster, 3 * one);
  EXPECT_NEAR(isolated_time_ns(*p.cluster, fast), 3 * one, 1e-3);
  EXPECT_EQ(fast.amounts[0].bytes, 10e6);
  // Faster than the transfers alone (a stream overlapping one call's broadcast with the next
  // one's reduction): no fixed parts, and each transfer carries half, so the plan takes `one`.
  fit_plan_to(fast, *p.cluster, one);
  EXPECT_NEAR(isolated_time_ns(*p.cluster, fast), one, 1e-3);
  EXPECT_EQ(fast.amounts[0].fixed, 0);
  EXPECT_NEAR(fast.amounts[0].bytes, 5e6, 1e-3);
  EXPECT_NEAR(fast.amounts[1].bytes, 5e6, 1e-3);
}

// `n` collectives of 10 MB over the NIC at once, each transfer capped at a third of the NIC;
// their finishing times.
std::vector<double> capped_collectives(const Plain& p, double nic, int n) {
  model::Dag dag;
  auto res = dag.add_resource("collectives", 8);
  FlowNetwork net(p.cluster);
  for (int i = 0; i < n; ++i) {
    FlowPlan plan = one_phase({{0, 1}}, 10e6);
    plan.amounts[0].rate_cap = nic / 3;
    EXPECT_NEAR(isolated_time_ns(*p.cluster, plan), 30e6 / nic, 1.0);  // held to the cap
    net.assign(add_collective(dag, res), std::move(plan));
  }
  const SimResult r = run(dag, net);
  return {r.finish.begin(), r.finish.begin() + n};
}

// A stack's per-transfer limit (a third of the NIC, e.g. one TCP connection's rate): one
// collective alone is held to it, and two in flight together each still get it, because the
// NIC has room for both; four share the NIC below their caps.
TEST(FlowTier, AStacksPerTransferCapLeavesTheWireToOthers) {
  const Plain p = plain(2, 1);
  const double nic = fabric("10gbe").achievable_bandwidth * 1e-9;
  for (double t : capped_collectives(p, nic, 2)) EXPECT_NEAR(t, 30e6 / nic, 1.0);
  for (double t : capped_collectives(p, nic, 4)) EXPECT_NEAR(t, 40e6 / nic, 1.0);
}

// Three GPUs push into one: the receiver's link is shared three ways (incast).
TEST(FlowTier, IncastSharesTheReceiversLink) {
  const Plain p = plain(4, 1);
  const double nic = fabric("10gbe").achievable_bandwidth * 1e-9;
  model::Dag dag;
  auto res = dag.add_resource("collectives", 8);
  FlowNetwork net(p.cluster);
  for (int src = 1; src <= 3; ++src) {
    net.assign(add_collective(dag, res), one_phase({{src, 0}}, 9e6, 1000));
  }
  const SimResult r = run(dag, net);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(static_cast<double>(r.finish[static_cast<std::size_t>(i)]), 1000 + 27e6 / nic, 1.0);
  }
}

// The compact S-SGD DAG under the flow tier: the same timer calls, so every task and every
// link's load equal the explicit DAG's, with straggling workers and each overlap policy.
TEST(FlowTier, CompactSsgdDagEqualsExplicitDag) {
  const Plain p = plain(2, 3);
  const model::CollectiveFlows f = flows(p, "ring");
  for (auto kind : {model::OverlapPolicy::Kind::kNone, model::OverlapPolicy::Kind::kWfbp,
                    model::OverlapPolicy::Kind::kMgwfbp}) {
    model::SsgdConfig c;
    for (int l = 0; l < 9; ++l) {
      c.layers.push_back({20000 + 1000 * l, 40000 + 3000 * l, l == 4 ? 0 : 200000 * (l + 1)});
    }
    c.workers = 6;
    c.iterations = 3;
    c.h2d = 5000;
    c.update = 3000;
    c.slowdown = {1, 1, 1.3, 1, 1, 1};
    c.groups = model::make_groups(c.layers, model::OverlapPolicy{kind},
                                  [&](std::int64_t e) { return f.plan(e)->analytical; });
    const model::SsgdDag compact(c);
    const model::Dag dag = compact.expand();
    FlowNetwork net_full(p.cluster);
    FlowNetwork net_compact(p.cluster);
    for (int it = 0; it < c.iterations; ++it) {
      for (int g = 0; g < compact.group_count(); ++g) {
        const auto& group = c.groups[static_cast<std::size_t>(g)];
        net_full.assign(compact.comm_id(it, g), f.plan(group.elements).value());
        net_compact.assign(compact.comm_id(it, g), f.plan(group.elements).value());
      }
    }
    auto want = simulate(dag, &net_full);
    ASSERT_TRUE(want.ok()) << want.error().message;
    Engine engine;
    SsgdSimResult got;
    ASSERT_TRUE(engine.run(compact, got, &net_compact, 0).ok());
    EXPECT_EQ(got.events(), want->events);
    for (std::size_t i = 0; i < dag.task_count(); ++i) {
      const auto id = static_cast<model::TaskId>(i);
      ASSERT_EQ(got.start(id), want->start[i]) << dag.describe(id);
      ASSERT_EQ(got.finish(id), want->finish[i]) << dag.describe(id);
      ASSERT_EQ(got.gate(id), want->gate[i]) << dag.describe(id);
    }
    const auto a = net_full.loads(0, static_cast<double>(want->makespan));
    const auto b = net_compact.loads(0, static_cast<double>(want->makespan));
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t l = 0; l < a.size(); ++l) {
      EXPECT_EQ(a[l].bytes, b[l].bytes);
      EXPECT_EQ(a[l].busy_ns, b[l].busy_ns);
    }
  }
}

// A whole prediction: on the plain cluster the flow tier gives the analytical prediction.
TEST(FlowTier, PredictAgreesOnAPlainCluster) {
  auto w = NetworkWorkload::resolve({"resnet50"}, testing::bundled_catalogs());
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (const char* overlap : {"none", "wfbp", "mgwfbp"}) {
    ExchangeSpec e;
    e.overlap = overlap;
    HardwareSpec h{4, 4, "pcie3", "10gbe"};
    auto analytic = resolve_scenario(h, e, testing::bundled_catalogs());
    h.network_model = "flow";
    auto flow = resolve_scenario(h, e, testing::bundled_catalogs());
    ASSERT_TRUE(analytic.ok() && flow.ok());
    ASSERT_TRUE(flow->hardware.cluster != nullptr);
    auto a = (*w)->evaluate(*analytic, false);
    auto f = (*w)->evaluate(*flow, false);
    ASSERT_TRUE(a.ok() && f.ok());
    EXPECT_NEAR(static_cast<double>(f->iteration), static_cast<double>(a->iteration), 200.0)
        << overlap;
    EXPECT_EQ(f->network_model, "flow");
    ASSERT_FALSE(f->busiest_links.empty());
    EXPECT_NE(f->busiest_links.front().link.find("nic"), std::string::npos)
        << "the NIC port bounds a flat ring across nodes: " << f->busiest_links.front().link;
  }
}

}  // namespace
}  // namespace dagsgd::sim
