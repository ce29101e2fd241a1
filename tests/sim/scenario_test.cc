// Scenario resolution: names checked once against the catalogs, errors that list the valid
// names, and a network workload's description and request.
#include <gtest/gtest.h>

#include "common/sweep_fixtures.h"
#include "common/text.h"

#include "dagsgd/sim/scenario.h"

namespace dagsgd::sim {
namespace {

using dagsgd::testing::contains;

// Options that would change nothing in the chosen configuration are refused, not ignored: a
// cluster network or a topology under the analytical model, whichever of them is given.
TEST(Scenario, NetworkOptionsTheModelWouldIgnoreAreRefused) {
  for (const char* net : {"fat-tree:1000:1", "rail", "fat-tree:2"}) {
    HardwareSpec spec{4, 8, "nvlink2", "ib-edr"};
    spec.cluster_network = net;
    for (const char* model : {"auto", "analytic"}) {
      spec.network_model = model;
      auto h = resolve_hardware(spec, testing::bundled_catalogs());
      ASSERT_FALSE(h.ok()) << net << " " << model;
      EXPECT_TRUE(contains(h.error().message, std::string("cluster network ('") + net + "'"))
          << h.error().message;
    }
    spec.network_model = "flow";
    auto h = resolve_hardware(spec, testing::bundled_catalogs());
    EXPECT_TRUE(h.ok()) << net << ": " << h.error().message;
    spec.network_model = "auto";
    spec.topology = "dgx1-v100";
    h = resolve_hardware(spec, testing::bundled_catalogs());
    EXPECT_TRUE(h.ok()) << net << ": " << h.error().message;
  }
  HardwareSpec plain{4, 8, "nvlink2", "ib-edr"};
  plain.network_model = "analytic";
  plain.topology = "dgx1-v100";
  EXPECT_FALSE(resolve_hardware(plain, testing::bundled_catalogs()).ok());
}

TEST(Scenario, UnknownNamesListTheValidOnes) {
  auto h = resolve_hardware({1, 4, "pcie9", "10gbe"}, testing::bundled_catalogs());
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(contains(h.error().message, "intra-node fabric: unknown fabric 'pcie9'"))
      << h.error().message;
  EXPECT_TRUE(contains(h.error().message, "nvlink2")) << h.error().message;
  h = resolve_hardware({1, 4, "pcie3", "token-ring"}, testing::bundled_catalogs());
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(contains(h.error().message, "inter-node fabric")) << h.error().message;

  ExchangeSpec e;
  e.algorithm = "butterfly";
  auto x = resolve_exchange(e);
  ASSERT_FALSE(x.ok());
  EXPECT_TRUE(contains(x.error().message, "valid collective algorithms: ring, tree"))
      << x.error().message;
  EXPECT_TRUE(contains(x.error().message, "measured")) << x.error().message;
  e = {};
  e.precision = "fp8";
  EXPECT_FALSE(resolve_exchange(e).ok());
  e = {};
  e.topk = 2;
  EXPECT_FALSE(resolve_exchange(e).ok());

  NetworkSpec n;
  n.network = "alexnet";
  n.gpu = "v1000";
  auto w = NetworkWorkload::resolve(n, testing::bundled_catalogs());
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(contains(w.error().message, "gpu: unknown gpu 'v1000'")) << w.error().message;
  EXPECT_TRUE(contains(w.error().message, "k80")) << w.error().message;
  n.gpu = "v100";
  n.sync = "easgd:0,0.5";
  EXPECT_FALSE(NetworkWorkload::resolve(n, testing::bundled_catalogs()).ok());
  n.sync = "bsp";
  n.network = "resnet-51";
  w = NetworkWorkload::resolve(n, testing::bundled_catalogs());
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(contains(w.error().message, "resnet50")) << w.error().message;
}

// Short names and FRAMEWORK+LIBRARY resolve where a stack name does; the framework's grouping is
// the "framework" overlap.
TEST(Scenario, StacksByShortAndComposedNames) {
  ExchangeSpec e;
  e.overlap = kFrameworkOverlap;
  e.stack = "horovod";
  EXPECT_TRUE(stack_groups_gradients(e.stack));
  auto horovod = resolve_exchange(e);
  ASSERT_TRUE(horovod.ok()) << horovod.error().message;
  EXPECT_EQ(horovod->stack->name, "horovod-0.21-nccl-2.7-ib");
  EXPECT_EQ(horovod->overlap.name(), "fusion:128,1");
  e.stack = "pytorch-ddp+nccl-2.7-socket";
  auto composed = resolve_exchange(e);
  ASSERT_TRUE(composed.ok()) << composed.error().message;
  EXPECT_EQ(composed->overlap.name(), "bucket:25,1");
  EXPECT_EQ(composed->stack->library.connections, 2);
  e.stack = "ddp";
  auto unknown = resolve_exchange(e);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.error().message, "unknown stack 'ddp'")) << unknown.error().message;
  EXPECT_TRUE(contains(unknown.error().message, "pytorch-ddp")) << unknown.error().message;
  EXPECT_FALSE(stack_groups_gradients(e.stack));
}

TEST(Scenario, NetworkWorkloadDescribesAndBuildsTheRequest) {
  NetworkSpec n;
  n.network = "resnet50";
  n.batch = 64;
  auto w = NetworkWorkload::resolve(n, testing::bundled_catalogs());
  ASSERT_TRUE(w.ok()) << w.error().message;
  ExchangeSpec e;
  e.precision = "fp16";
  e.overlap = "mgwfbp";
  auto s = resolve_scenario({8, 4, "pcie3", "10gbe"}, e, testing::bundled_catalogs());
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto r = (*w)->request(*s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->topology.workers(), 32);
  EXPECT_EQ(r->exchange.precision, model::Precision::kFp16);
  EXPECT_EQ(r->overlap.kind, model::OverlapPolicy::Kind::kMgwfbp);
  EXPECT_EQ(r->layers.size(), (*w)->network().layers.size());
  const Description d = (*w)->describe(*s);
  ASSERT_EQ(d.size(), 15u);  // with the stragglers and interference a GPU pays (gpu-effects.md)
  EXPECT_EQ(d[0].first, "network");
  EXPECT_EQ(d[13].first, "stragglers");
  EXPECT_EQ(d[14].first, "interference");
  EXPECT_EQ(d[3].second, "32 (8 nodes x 4 GPUs)");
  EXPECT_EQ(d[8].second, "fp16");
  // fp16 runs faster than fp32 on a V100 (tensor cores).
  auto s32 = resolve_scenario({8, 4, "pcie3", "10gbe"}, {}, testing::bundled_catalogs());
  auto r32 = (*w)->request(*s32);
  ASSERT_TRUE(r32.ok());
  EXPECT_LT(r->layers[0].forward, r32->layers[0].forward);
  auto p = (*w)->evaluate(*s, false);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->workers, 32);
}

TEST(Scenario, TracedWorkloadNeedsItsRunAndItsRanks) {
  auto missing = TracedWorkload::load({"/nonexistent/run"}, trace::ImportOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "/nonexistent/run")) << missing.error().message;
  const std::string kineto = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/nccl_data.json.gz";
  auto w = TracedWorkload::load({kineto}, trace::ImportOptions{});
  ASSERT_TRUE(w.ok()) << w.error().message;
  EXPECT_EQ((*w)->batch(), 0) << "a Kineto trace does not say its batch";
  auto s = resolve_scenario({1, 1, "pcie3", "10gbe"}, {}, testing::bundled_catalogs());
  ASSERT_TRUE(s.ok());
  auto checked = (*w)->check(*s);
  ASSERT_FALSE(checked.ok());
  EXPECT_TRUE(contains(checked.error().message, "batch size")) << checked.error().message;
  w = TracedWorkload::load({kineto}, trace::ImportOptions{}, 16);
  ASSERT_TRUE(w.ok());
  // The traced ranks (one rank of a 2-rank job here), each on a node of its own.
  auto same =
      resolve_scenario({(*w)->ranks(), 1, "nvlink2", "ib-edr"}, {}, testing::bundled_catalogs());
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE((*w)->check(*same).ok());
  auto r = (*w)->evaluate(*same, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GT(r->iteration, 0);
  EXPECT_FALSE(r->timeline.empty());
}

TEST(Scenario, ReplayTargetKeepsTheRunsRanks) {
  const std::string kineto = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/nccl_data.json.gz";
  auto w = TracedWorkload::load({kineto}, trace::ImportOptions{});
  ASSERT_TRUE(w.ok()) << w.error().message;
  const int ranks = run_topology((*w)->dag()).workers();
  HardwareSpec target{1, 1, "nvlink2", "ib-edr"};
  ExchangeSpec exchange;
  exchange.algorithm = "ring";
  auto laid_out = replay_target((*w)->dag(), target, exchange, testing::bundled_catalogs(), false);
  ASSERT_TRUE(laid_out.ok()) << laid_out.error().message;
  ASSERT_TRUE(laid_out->target.has_value());
  EXPECT_EQ(laid_out->target->nodes * laid_out->target->gpus_per_node, ranks);
  EXPECT_EQ(laid_out->algorithm, "ring");
  EXPECT_EQ(laid_out->stack, nullptr);
  auto as_traced = replay_target((*w)->dag(), target, exchange, testing::bundled_catalogs(), true);
  ASSERT_TRUE(as_traced.ok());
  EXPECT_EQ(as_traced->target->nodes, 0) << "the ranks stay where the run placed them";
  // As traced on a node type: its nodes hold the run's ranks.
  HardwareSpec dgx = target;
  dgx.topology = "dgx1-v100";
  dgx.network_model = "flow";
  auto on_dgx = replay_target((*w)->dag(), dgx, exchange, testing::bundled_catalogs(), true);
  ASSERT_LE(ranks, 8) << "one node of the node type holds the run";
  ASSERT_TRUE(on_dgx.ok()) << on_dgx.error().message;
  ASSERT_NE(on_dgx->cluster, nullptr);
  EXPECT_EQ(on_dgx->cluster->gpus_per_node(), 8);
  EXPECT_EQ(on_dgx->target->nodes, 0) << "the ranks stay where the run placed them";
  target.inter = "warp-drive";
  auto unknown = replay_target((*w)->dag(), target, exchange, testing::bundled_catalogs(), false);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.error().message, "warp-drive")) << unknown.error().message;
}

}  // namespace
}  // namespace dagsgd::sim
