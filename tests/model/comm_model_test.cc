// The collective cost formulas against values computed by hand (arithmetic in the comments).
#include "dagsgd/model/comm_model.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dagsgd::model {
namespace {

// alpha 10 us, beta 1 ns/byte (1 GB/s), gamma 0.5 ns/byte.
LinkCost link() {
  LinkCost l;
  l.alpha_ns = 10'000;
  l.beta_ns_per_byte = 1;
  l.gamma_ns_per_byte = 0.5;
  return l;
}

// p workers on one node (intra link) or one per node (inter link), same costs on both.
Topology flat(int p, bool one_node = true) {
  Topology t;
  t.nodes = one_node ? 1 : p;
  t.gpus_per_node = one_node ? p : 1;
  t.intra = link();
  t.inter = link();
  return t;
}

constexpr std::int64_t kMegabyte = 250'000;  // fp32 elements in M = 1e6 bytes

Nanos cost(const Topology& t, const std::string& algorithm, std::int64_t elements,
           Precision precision = Precision::kFp32, double topk = 0, int ps_servers = 0) {
  ExchangeConfig c;
  c.algorithm = algorithm;
  c.precision = precision;
  c.topk = topk;
  c.ps_servers = ps_servers;
  auto m = make_comm_model(t, c);
  EXPECT_TRUE(m.ok()) << m.error().message;
  return (*m)->exchange_time(elements);
}

// The flat formulas on p workers of one node, M = 1e6 bytes of fp32 gradients, each case with
// its arithmetic.
struct ByHand {
  const char* algorithm;
  int p;
  Nanos want;
};

TEST(CommModel, FlatFormulasByHand) {
  const ByHand cases[] = {
      // ring 2(p-1)α + 2(p-1)/p·Mβ + (p-1)/p·Mγ, p=4:
      // 6·10000 + 1.5·1e6·1 + 0.75·1e6·0.5 = 60000 + 1500000 + 375000
      {"ring", 4, 1'935'000},
      // double binary tree 2dα + 2Mβ + Mγ, d = ceil(lg 4) = 2: 40000 + 2000000 + 500000
      {"tree", 4, 2'540'000},
      // p=5: d = 3: 60000 + 2000000 + 500000
      {"tree", 5, 2'560'000},
      // recursive doubling lg p·(α + Mβ + Mγ), p=4: 2·(10000 + 1000000 + 500000)
      {"recursive_doubling", 4, 3'020'000},
      // p=3 (p'=2): fold-in 1510000 + one step 1510000 + fold-out (10000 + 1000000)
      {"recursive_doubling", 3, 4'030'000},
      // Rabenseifner 2·lg p·α + 2(p-1)/p·Mβ + (p-1)/p·Mγ, p=4: 40000 + 1500000 + 375000
      {"rabenseifner", 4, 1'915'000},
      // p=6 (p'=4): fold-in 1510000 + core 1915000 + fold-out 1010000
      {"rabenseifner", 6, 4'435'000},
      // colocated parameter-server shards move the ring's volume
      {"ps", 4, 1'935'000},
      // alltoall-sum-allgather: the ring's 2(p-1)α + 2(p-1)/p·Mβ + (p-1)/p·Mγ
      {"asa", 4, 1'935'000},
      // libnbc reduce-scatter then all-gather: binomial reduce d·(α + Mβ + Mγ), d = 2:
      // 2·1510000; the scatter and the linear all-gather (p-1)α + (p-1)/p·Mβ each: 2·(30000 +
      // 750000)
      {"rsag", 4, 4'580'000},
  };
  for (const ByHand& c : cases) {
    EXPECT_EQ(cost(flat(c.p), c.algorithm, kMegabyte), c.want) << c.algorithm << " p=" << c.p;
  }
}

TEST(CommModel, DedicatedParameterServersByHand) {
  // 2 dedicated servers, p=4: messages max(2,4)=4 per direction, the server link carries
  // p·M/s = 2e6 per direction, a server sums (p-1)·M/s = 1.5e6 bytes:
  // 2·4·10000 + 2·2e6·1 + 1.5e6·0.5 = 80000 + 4000000 + 750000 = 4830000
  EXPECT_EQ(cost(flat(4), "ps", kMegabyte, Precision::kFp32, 0, 2), 4'830'000);
}

TEST(CommModel, HierarchicalByHand) {
  Topology t;
  t.nodes = 2;
  t.gpus_per_node = 2;
  t.intra.alpha_ns = 1'000;
  t.intra.beta_ns_per_byte = 0.1;
  t.intra.gamma_ns_per_byte = 0.5;
  t.inter = link();
  // intra reduce-scatter (g=2): 1·1000 + 0.5·1e6·0.1 + 0.5·1e6·0.5 = 1000 + 50000 + 250000
  // inter ring (n=2) of M through the NIC: 2·10000 + 1·1e6·1 + 0.5·(1e6/2)·0.5
  //   = 20000 + 1000000 + 125000
  // intra allgather: 1000 + 50000
  // total 301000 + 1145000 + 51000 = 1497000
  EXPECT_EQ(cost(t, "hier", kMegabyte), 1'497'000);
  // One GPU per node: a ring over the nodes on the inter link.
  EXPECT_EQ(cost(flat(4, false), "hier", kMegabyte), 1'935'000);
}

TEST(CommModel, FlatAlgorithmsUseTheInterLinkAcrossNodes) {
  Topology t;
  t.nodes = 2;
  t.gpus_per_node = 2;
  t.intra.beta_ns_per_byte = 0.001;  // nearly free: the bottleneck must be the inter link
  t.inter = link();
  EXPECT_EQ(cost(t, "ring", kMegabyte), 1'935'000);
  // On one node the intra link prices it: 6·0 + 1.5·1e6·0.001 = 1500
  Topology one = t;
  one.nodes = 1;
  one.gpus_per_node = 4;
  EXPECT_EQ(cost(one, "ring", kMegabyte), 1'500);
}

TEST(CommModel, EagerRendezvousStepPerMessage) {
  Topology t = flat(4);
  t.intra.eager_limit = 100'000;
  t.intra.rendezvous_ns = 5'000;
  // M=1e6: ring messages are M/p = 250000 > 100000, 6 of them pay +5000: 1935000 + 30000
  EXPECT_EQ(cost(t, "ring", kMegabyte), 1'965'000);
  // M=4e5: messages are exactly 100000 (eager): 60000 + 1.5·4e5 + 0.75·4e5·0.5
  //   = 60000 + 600000 + 150000 = 810000
  EXPECT_EQ(cost(t, "ring", 100'000), 810'000);
}

TEST(CommModel, SingleWorkerCostsNothing) {
  for (const auto& a : comm_algorithm_names()) {
    EXPECT_EQ(cost(flat(1), a, kMegabyte), 0) << a;
    EXPECT_EQ(cost(flat(1), a, kMegabyte, Precision::kFp32, 0, 2), 0) << a;
  }
  EXPECT_EQ(cost(flat(1), "ring", kMegabyte, Precision::kFp32, 0.01), 0);
  ExchangeConfig c;
  auto m = make_comm_model(flat(1), c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->startup_latency(), 0);
}

TEST(CommModel, ZeroElementsCostNothing) { EXPECT_EQ(cost(flat(4), "ring", 0), 0); }

TEST(CommModel, MonotoneInSize) {
  // 6 and 8 workers (one not a power of two), with a rendezvous step, so "auto" switches from
  // tree to ring in range.
  for (int p : {6, 8})
    for (const auto& a : comm_algorithm_names()) {
      Topology t = flat(p, false);
      t.inter.eager_limit = 4096;
      t.inter.rendezvous_ns = 20'000;
      Nanos prev = 0;
      for (std::int64_t e = 1; e <= (1 << 22); e = e * 3 / 2 + 1) {
        const Nanos now = cost(t, a, e);
        EXPECT_GE(now, prev) << a << " at " << e << " elements";
        prev = now;
      }
    }
}

TEST(CommModel, MonotoneInWorkersForRing) {
  Nanos prev = 0;
  for (int p = 1; p <= 64; ++p) {
    const Nanos now = cost(flat(p, false), "ring", kMegabyte);
    EXPECT_GE(now, prev) << p;
    prev = now;
  }
}

TEST(CommModel, Fp16HalvesTheBytes) {
  Topology t = flat(4);
  t.intra.alpha_ns = 0;
  // Without startup the ring is linear in bytes: 1.5e6 + 375000 = 1875000 for fp32,
  // half of it for the same elements in fp16.
  EXPECT_EQ(cost(t, "ring", kMegabyte), 1'875'000);
  EXPECT_EQ(cost(t, "ring", kMegabyte, Precision::kFp16), 937'500);
  EXPECT_EQ(bytes_per_element(Precision::kFp16), 2);
  EXPECT_EQ(bytes_per_element(Precision::kFp32), 4);
}

TEST(CommModel, TopkIsAnAllgatherOfValuesAndIndices) {
  // k = 1% of 250000 = 2500; M_local = 2500·(4 + 4) = 20000 bytes;
  // (p-1)α + (p-1)·M_local·β = 30000 + 60000 = 90000
  EXPECT_EQ(cost(flat(4), "ring", kMegabyte, Precision::kFp32, 0.01), 90'000);
  // fp16 values: M_local = 2500·(2 + 4) = 15000: 30000 + 45000 = 75000
  EXPECT_EQ(cost(flat(4), "ring", kMegabyte, Precision::kFp16, 0.01), 75'000);
  ExchangeConfig c;
  c.topk = 0.01;
  auto m = make_comm_model(flat(4), c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->algorithm_for(kMegabyte), "allgather");
  EXPECT_EQ((*m)->startup_latency(), 30'000);  // (p-1)α
}

TEST(CommModel, AutoPicksTreeBelowThresholdAndRingAbove) {
  Topology t = flat(4, false);
  // M* = 2pα(p-1-d)/(2β+γ) = 2·4·10000·(4-1-2)/(2+0.5) = 32000 bytes
  EXPECT_DOUBLE_EQ(auto_tree_threshold_bytes(t), 32'000);
  ExchangeConfig c;
  auto m = make_comm_model(t, c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->algorithm_for(7'999), "tree");  // 31996 bytes
  EXPECT_EQ((*m)->algorithm_for(8'000), "ring");  // 32000 bytes
  EXPECT_EQ((*m)->exchange_time(100), cost(t, "tree", 100));
  EXPECT_EQ((*m)->exchange_time(kMegabyte), cost(t, "ring", kMegabyte));
  EXPECT_EQ((*m)->startup_latency(), 40'000);  // the tree's 2dα
  // At the threshold the two formulas agree: tree 40000 + 64000 + 16000 = 120000,
  // ring 60000 + 48000 + 12000 = 120000.
  EXPECT_EQ(cost(t, "tree", 8'000), 120'000);
  EXPECT_EQ(cost(t, "ring", 8'000), 120'000);
  // One node: NCCL rings only. Two workers: the tree saves no startup.
  EXPECT_EQ(auto_tree_threshold_bytes(flat(4)), 0);
  EXPECT_EQ(auto_tree_threshold_bytes(flat(2, false)), 0);
}

TEST(CommModel, StartupLatencyIsTheAlphaTerm) {
  ExchangeConfig c;
  c.algorithm = "ring";
  auto m = make_comm_model(flat(4), c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->startup_latency(), 60'000);  // 2(p-1)α
  EXPECT_EQ((*m)->algorithm_for(1), "ring");
}

TEST(CommModel, UnknownAlgorithmListsNames) {
  ExchangeConfig c;
  c.algorithm = "butterfly";
  auto m = make_comm_model(flat(4), c);
  ASSERT_FALSE(m.ok());
  const auto& msg = m.error().message;
  EXPECT_NE(msg.find("'butterfly'"), std::string::npos) << msg;
  for (const auto& a : comm_algorithm_names()) EXPECT_NE(msg.find(a), std::string::npos) << a;
}

TEST(CommModel, BadConfigsAreErrors) {
  ExchangeConfig c;
  c.topk = 1.5;
  EXPECT_FALSE(make_comm_model(flat(4), c).ok());
  c.topk = 0;
  c.ps_servers = -1;
  EXPECT_FALSE(make_comm_model(flat(4), c).ok());
  Topology t = flat(4);
  t.nodes = 0;
  EXPECT_FALSE(make_comm_model(t, ExchangeConfig{}).ok());
  t = flat(4);
  t.inter.beta_ns_per_byte = -1;
  EXPECT_FALSE(make_comm_model(t, ExchangeConfig{}).ok());
  auto p = parse_precision("fp8");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("fp16"), std::string::npos);
  EXPECT_EQ(*parse_precision("fp16"), Precision::kFp16);
}

TEST(CommModel, NegativeElementsIsMisuse) {
  auto m = make_comm_model(flat(4), ExchangeConfig{});
  ASSERT_TRUE(m.ok());
  EXPECT_THROW((void)(*m)->exchange_time(-1), std::invalid_argument);
}

TEST(CommModel, LinkFromFabric) {
  FabricSpec f;
  f.achievable_bandwidth = 1.25e9;  // 10 Gbit/s
  f.latency = 15'000;
  f.eager_limit = 65'536;
  f.rendezvous_latency = 30'000;
  LinkCost l = LinkCost::from_fabric(f);
  EXPECT_DOUBLE_EQ(l.alpha_ns, 15'000);
  EXPECT_DOUBLE_EQ(l.beta_ns_per_byte, 0.8);
  EXPECT_EQ(l.eager_limit, 65'536);
  EXPECT_DOUBLE_EQ(l.rendezvous_ns, 30'000);
  GpuSpec g;
  g.memory_bandwidth = 900e9;
  EXPECT_DOUBLE_EQ(reduction_ns_per_byte(g), 3.0 / 900);
}

// A measured curve for p workers: 100 us at 1 KB, 1100 us at 1 MB (1 ns/byte from there).
MeasuredAllreduce curve(int p) { return {p, {{1'000, 100'000}, {1'000'000, 1'100'000}}}; }

Nanos measured_cost(const Topology& t, const std::string& algorithm, std::int64_t elements,
                    Precision precision = Precision::kFp32) {
  return cost(t, algorithm, elements, precision);
}

TEST(CommModel, MeasuredCurveByHand) {
  Topology t = flat(4);
  t.intra.measured = {curve(2), curve(4)};
  // Between the points, linear: 250 elements = 1000 bytes -> 100 us; 500'500 bytes is halfway.
  EXPECT_EQ(measured_cost(t, "auto", 250), 100'000);
  EXPECT_EQ(measured_cost(t, "measured", 500'500 / 4), 600'000);
  // Below the smallest size: its latency (a floor); zero elements cost nothing.
  EXPECT_EQ(measured_cost(t, "auto", 1), 100'000);
  EXPECT_EQ(measured_cost(t, "auto", 0), 0);
  // Above the largest: the formula's growth from there. The ring on 4: 2(p-1)/p·Δbytes·β +
  // (p-1)/p·Δbytes·γ = 1.5·1e6 + 0.375·1e6 for 1 MB more.
  EXPECT_EQ(measured_cost(t, "auto", 2 * kMegabyte), 1'100'000 + 1'875'000);
  // A curve that says which algorithm the library ran grows as that one does: the binomial on
  // 4 (d = 2) adds 2d·Δbytes·β + d·Δbytes·γ = 4·1e6 + 2·0.5·1e6.
  t.intra.measured[1].algorithm = "binomial";
  EXPECT_EQ(measured_cost(t, "auto", 2 * kMegabyte), 1'100'000 + 5'000'000);
  t.intra.measured[1].algorithm.clear();
  // fp16 halves the bytes: 500 elements are 1000 bytes.
  EXPECT_EQ(measured_cost(t, "auto", 500, Precision::kFp16), 100'000);
  ExchangeConfig c;
  auto m = make_comm_model(t, c);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->algorithm_for(250), kMeasuredAlgorithm);
  // The startup is the smallest size's latency; the rest is body; no slowest-rank curve, no
  // tail.
  EXPECT_EQ((*m)->startup_latency(), 100'000);
  auto ph = (*m)->phases(500'500 / 4);
  EXPECT_EQ(ph.startup, 100'000);
  EXPECT_EQ(ph.body, 500'000);
  EXPECT_EQ(ph.tail, 0);
}

TEST(CommModel, MeasuredSlowestRankIsTheTail) {
  Topology t = flat(2);
  MeasuredAllreduce c = curve(2);
  c.slowest = {120'000, 1'300'000};
  t.intra.measured = {c};
  ExchangeConfig cfg;
  auto m = make_comm_model(t, cfg);
  ASSERT_TRUE(m.ok());
  // Halfway: average 600 us, slowest 710 us.
  auto ph = (*m)->phases(500'500 / 4);
  EXPECT_EQ(ph.startup, 100'000);
  EXPECT_EQ(ph.body, 500'000);
  EXPECT_EQ(ph.tail, 110'000);
  EXPECT_EQ((*m)->exchange_time(500'500 / 4), 710'000);
  EXPECT_EQ(ph.first, -1);  // no fastest-rank curve
  // Tiny: the floor of both curves.
  EXPECT_EQ((*m)->phases(1).total(), 120'000);
  // With the fastest rank's curve: halfway between 80 and 900 us; the parts are unchanged.
  c.fastest = {80'000, 900'000};
  t.intra.measured = {c};
  auto fast = make_comm_model(t, cfg);
  ASSERT_TRUE(fast.ok());
  auto fph = (*fast)->phases(500'500 / 4);
  EXPECT_EQ(fph.first, 490'000);
  EXPECT_EQ(fph.total(), 710'000);
}

TEST(CommModel, FormulaPhasesAreStartupAndBody) {
  auto m = make_comm_model(flat(4), ExchangeConfig{"ring"});
  ASSERT_TRUE(m.ok());
  auto ph = (*m)->phases(kMegabyte);
  EXPECT_EQ(ph.startup, 60'000);  // 2(p-1)α
  EXPECT_EQ(ph.body, 1'935'000 - 60'000);
  EXPECT_EQ(ph.tail, 0);
  EXPECT_EQ((*m)->phases(0).total(), 0);
}

TEST(CommModel, MeasuredCurveOnlyWhereItApplies) {
  Topology t = flat(4);
  t.intra.measured = {curve(2)};  // no curve for 4 workers: the formula
  EXPECT_EQ(measured_cost(t, "auto", kMegabyte), cost(flat(4), "auto", kMegabyte));
  ExchangeConfig c;
  c.algorithm = kMeasuredAlgorithm;
  auto missing = make_comm_model(t, c);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("measured allreduce curve for 4 ranks"), std::string::npos)
      << missing.error().message;
  // A named formula ignores the curve.
  t.intra.measured = {curve(4)};
  EXPECT_EQ(measured_cost(t, "ring", kMegabyte), 1'935'000);
  // One worker per node: the inter link's curve; two levels with different curves: formula.
  Topology spread = flat(4, false);
  spread.inter.measured = {curve(4)};
  EXPECT_EQ(measured_cost(spread, "auto", 250), 100'000);
  Topology two_level;
  two_level.nodes = 2;
  two_level.gpus_per_node = 2;
  two_level.intra = link();
  two_level.inter = link();
  two_level.inter.measured = {curve(4)};
  EXPECT_GT(measured_cost(two_level, "auto", 250), 0);
  EXPECT_NE(measured_cost(two_level, "auto", 250), 100'000);
  two_level.intra.measured = two_level.inter.measured;  // one fabric on both levels
  EXPECT_EQ(measured_cost(two_level, "auto", 250), 100'000);
  // Top-k is not a dense allreduce: the formula.
  c.algorithm = kMeasuredAlgorithm;
  c.topk = 0.01;
  EXPECT_FALSE(make_comm_model(two_level, c).ok());
}

TEST(CommModel, MeasuredCurveFromFabric) {
  FabricSpec f;
  f.achievable_bandwidth = 1e9;
  f.measured_allreduce = {curve(2)};
  EXPECT_EQ(LinkCost::from_fabric(f).measured, f.measured_allreduce);
}

}  // namespace
}  // namespace dagsgd::model
