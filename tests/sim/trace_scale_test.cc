// A traced run standing for a larger job (ReplayOptions::world): each traced rank keeps its
// compute, the whole world's collectives grow to the target's GPUs and one-rank-per-node groups
// to its nodes, node-local groups keep their size, other groups are named; the requests that
// cannot mean anything are refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/nccl_trace.h"
#include "common/sweep_fixtures.h"
#include "common/temp.h"
#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/io.h"
#include "dagsgd/sim/scenario.h"
#include "dagsgd/sim/trace_replay.h"

namespace dagsgd::sim {
namespace {

using testing::kineto_kernel;
using testing::kineto_rank;
using testing::nccl_kernel;
using testing::traced_dag;

constexpr double kScaledAllreduceBytes = 1048576.0 * 4;  // In msg nelems x float
constexpr double kPairScatterBytes = 524288.0 * 4;       // In msg nelems x float (Out: a half)

// `world` ranks of one traced node (eight or fewer): a 1 ms compute kernel, then an allreduce
// of the whole world and a reduce-scatter of each pair of ranks {0, 1}, {2, 3}, ... on the same
// stream, the host waiting for both.
std::vector<std::string> one_node_job(const std::string& dir, int world) {
  std::string all = "[";
  for (int r = 0; r < world; ++r) all += (r > 0 ? ", " : "") + std::to_string(r);
  all += "]";
  std::vector<std::string> files;
  for (int r = 0; r < world; ++r) {
    const int first = r - r % 2;
    const std::string pair = "[" + std::to_string(first) + ", " + std::to_string(first + 1) + "]";
    std::string s = kineto_kernel(1, 100, 1000, "volta_sgemm_128x64_nn", "");
    s += nccl_kernel(2, 1100, 300, "allreduce", 1048576, 1048576, all);
    s += nccl_kernel(3, 1400, 100, "reduce_scatter", 524288, 262144, pair);
    files.push_back(dir + "/rank" + std::to_string(r) + ".json");
    EXPECT_TRUE(model::write_file(files.back(), kineto_rank(r, world, 2000, 1550, s), true).ok());
  }
  return files;
}

// Nodes of `gpus_per_node` GPUs with fast links inside and a slow network between them.
model::Topology scale_target(int nodes, int gpus_per_node, double inter_gbps = 1.25) {
  model::Topology t;
  t.nodes = nodes;
  t.gpus_per_node = gpus_per_node;
  t.intra.alpha_ns = 2000;
  t.intra.beta_ns_per_byte = 0.01;  // 100 GB/s
  t.inter.alpha_ns = 5000;
  t.inter.beta_ns_per_byte = 1 / inter_gbps;
  return t;
}

ReplayOptions scaled_to(int nodes, int gpus_per_node, double inter_gbps = 1.25) {
  ReplayOptions ro;
  ro.algorithm = "ring";
  ro.target = scale_target(nodes, gpus_per_node, inter_gbps);
  ro.world = nodes * gpus_per_node;
  return ro;
}

double join_time(const ReplayResult& r, model::TaskId t) {
  const auto i = static_cast<std::size_t>(t);
  return static_cast<double>(r.sim.finish[i] - r.sim.start[i]);
}

TEST(TraceScale, TheWholeWorldGrowsANodeLocalGroupKeepsItsSize) {
  const auto td = traced_dag(one_node_job(testing::fresh_test_dir("dagsgd-scale"), 4));
  ASSERT_EQ(td.collectives.size(), 3u);  // the allreduce, then the two pairs' reduce-scatters
  ASSERT_EQ(td.collectives[0].kind, trace::CollectiveKind::kAllreduce);
  ASSERT_EQ(td.collectives[0].ranks, 4);
  ASSERT_TRUE(td.collectives[0].joined);

  // As traced: four ranks on one node of the target's links.
  ReplayOptions own = scaled_to(1, 4);
  own.world = 0;
  auto traced = replay_trace(td, own);
  ASSERT_TRUE(traced.ok()) << traced.error().message;
  EXPECT_EQ(traced->scale.gpus, 0);
  EXPECT_TRUE(traced->scale.note.empty());

  // 64 GPUs: 16 nodes of 4.
  const ReplayOptions ro = scaled_to(16, 4);
  auto r = replay_trace(td, ro);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // The allreduce: the model's ring over 64 GPUs on 16 nodes.
  auto ring64 = model::collective_time(*ro.target, model::CollectiveOp::kAllreduce, "ring",
                                       kScaledAllreduceBytes);
  ASSERT_TRUE(ring64.ok());
  EXPECT_NEAR(join_time(*r, td.collectives[0].task), static_cast<double>(*ring64), 1);
  auto ring4 = model::collective_time(scale_target(1, 4), model::CollectiveOp::kAllreduce, "ring",
                                      kScaledAllreduceBytes);
  ASSERT_TRUE(ring4.ok());
  EXPECT_NEAR(join_time(*traced, td.collectives[0].task), static_cast<double>(*ring4), 1);
  // The pairs stay pairs on one node: one ring step on the intra-node link, by hand.
  const model::LinkCost& in = ro.target->intra;
  for (std::size_t i : {1u, 2u}) {
    EXPECT_NEAR(join_time(*r, td.collectives[i].task),
                in.alpha_ns + 0.5 * kPairScatterBytes * in.beta_ns_per_byte, 1);
    EXPECT_EQ(join_time(*r, td.collectives[i].task), join_time(*traced, td.collectives[i].task));
  }
  // The compute is the trace's: the iteration grows by the allreduce's growth, nothing else.
  EXPECT_NEAR(r->predicted_mean_s - traced->predicted_mean_s,
              static_cast<double>(*ring64 - *ring4) * 1e-9, 2e-9);
  EXPECT_EQ(r->predicted_ranks[0].compute, traced->predicted_ranks[0].compute);
  EXPECT_EQ(r->predicted_ranks[0].compute, 1000000);

  EXPECT_EQ(r->scale.traced, 4);
  EXPECT_EQ(r->scale.gpus, 64);
  EXPECT_EQ(r->scale.grown, 1);
  EXPECT_EQ(r->scale.node_local, 2);
  EXPECT_TRUE(r->scale.kept.empty());
  EXPECT_EQ(r->scale.note,
            "scaled from 4 traced ranks to 64: each traced rank's compute stands for 16 GPUs; "
            "per-rank noise at 64 GPUs is not in the trace");
}

TEST(TraceScale, ExposedCommunicationGrowsWithTheGpuCountOnASlowFabric) {
  const auto td = traced_dag(one_node_job(testing::fresh_test_dir("dagsgd-scale"), 2));
  model::Nanos before = 0;
  double iteration = 0;
  for (int nodes : {1, 2, 8, 32}) {
    auto r = replay_trace(td, scaled_to(nodes, 2, 1.25));
    ASSERT_TRUE(r.ok()) << r.error().message;
    const model::Nanos exposed = r->predicted_ranks[0].comm_exposed;
    EXPECT_GT(exposed, before) << nodes << " nodes";
    EXPECT_GT(r->predicted_mean_s, iteration) << nodes << " nodes";
    before = exposed;
    iteration = r->predicted_mean_s;
  }
}

TEST(TraceScale, TheFlowTierRunsTheGrownGroupOnTheTargetsGpus) {
  const auto td = traced_dag(one_node_job(testing::fresh_test_dir("dagsgd-scale"), 2));
  ASSERT_GE(td.concurrent_resource, 0);
  // 32 GPUs: 4 nodes of 8 on 10GbE, each collective priced alone, then as transfers on the
  // cluster's links (32 of them on the allreduce's ring).
  HardwareSpec h{4, 8, "nvlink2", "10gbe", "", "single-switch", "analytic"};
  auto analytic = resolve_scenario(h, ExchangeSpec{}, testing::bundled_catalogs());
  ASSERT_TRUE(analytic.ok()) << analytic.error().message;
  h.network_model = "flow";
  auto flow = resolve_scenario(h, ExchangeSpec{}, testing::bundled_catalogs());
  ASSERT_TRUE(flow.ok()) << flow.error().message;
  ASSERT_NE(flow->hardware.cluster, nullptr);
  EXPECT_EQ(flow->hardware.cluster->gpu_count(), 32);
  ReplayOptions ra = replay_options(*analytic);
  ReplayOptions rf = replay_options(*flow);
  ra.world = rf.world = 32;
  auto a = replay_trace(td, ra);
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto f = replay_trace(td, rf);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->network_model, "flow");
  EXPECT_EQ(f->scale.grown, 2) << "in a job of two the pair is the whole world too";
  // One collective at a time, no contention: the two tiers agree.
  EXPECT_NEAR(f->predicted_mean_s, a->predicted_mean_s, 1e-6 * a->predicted_mean_s);
}

TEST(TraceScale, WhatCannotBeScaledIsRefused) {
  const auto td = traced_dag(one_node_job(testing::fresh_test_dir("dagsgd-scale"), 4));
  auto refused = [&](const ReplayOptions& ro, const std::string& words) {
    auto r = replay_trace(td, ro);
    ASSERT_FALSE(r.ok()) << words;
    EXPECT_NE(r.error().message.find(words), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    EXPECT_FALSE(check_scale(td, ro).ok());
  };
  ReplayOptions measured = scaled_to(16, 4);
  measured.comm = CommMode::kMeasured;
  refused(measured, "needs modeled communication");
  refused(scaled_to(3, 2), "not a whole multiple of the run's 4 ranks");
  // A pair of one traced node has no place on nodes of one GPU.
  refused(scaled_to(16, 1), "has no place on one node");
  ReplayOptions no_target = scaled_to(16, 4);
  no_target.target.reset();
  refused(no_target, "target fabric");

  // One rank and no collective: nothing says what the exchange is at 8 GPUs.
  const std::string dir = testing::fresh_test_dir("dagsgd-scale-one");
  const std::string file = dir + "/rank0.json";
  ASSERT_TRUE(
      model::write_file(
          file, kineto_rank(0, 1, 2000, 1200, kineto_kernel(1, 100, 1000, "volta_sgemm", "")), true)
          .ok());
  const auto single = traced_dag({file});
  auto r = replay_trace(single, scaled_to(1, 8));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("records no collective that grows with the job"),
            std::string::npos)
      << r.error().message;
}

// Two traced nodes of eight ranks (16 ranks, run_topology's eight to a node): an allreduce of
// the whole world, a reduce-scatter in each replica group {l, 8 + l}, and an all-gather of ranks
// {0, 1, 8, 9}, which is neither.
std::vector<std::string> two_node_job(const std::string& dir) {
  std::string all = "[";
  for (int r = 0; r < 16; ++r) all += (r > 0 ? ", " : "") + std::to_string(r);
  all += "]";
  std::vector<std::string> files;
  for (int r = 0; r < 16; ++r) {
    const int l = r % 8;
    const std::string replica = "[" + std::to_string(l) + ", " + std::to_string(8 + l) + "]";
    std::string s = kineto_kernel(1, 100, 1000, "volta_sgemm_128x64_nn", "");
    s += nccl_kernel(2, 1100, 300, "allreduce", 1048576, 1048576, all);
    s += nccl_kernel(3, 1400, 100, "reduce_scatter", 524288, 262144, replica);
    if (l < 2) s += nccl_kernel(4, 1500, 100, "all_gather", 262144, 1048576, "[0, 1, 8, 9]");
    files.push_back(dir + "/rank" + std::to_string(r) + ".json");
    EXPECT_TRUE(model::write_file(files.back(), kineto_rank(r, 16, 2000, 1650, s), true).ok());
  }
  return files;
}

TEST(TraceScale, AReplicaGroupGrowsToTheTargetsNodesOthersAreNamed) {
  const auto td = traced_dag(two_node_job(testing::fresh_test_dir("dagsgd-scale")));
  ASSERT_EQ(run_topology(td).nodes, 2);
  // 64 GPUs: 8 nodes of 8.
  const ReplayOptions ro = scaled_to(8, 8);
  auto r = replay_trace(td, ro);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const model::LinkCost& e = ro.target->inter;
  for (const auto& c : td.collectives) {
    if (c.kind != trace::CollectiveKind::kReduceScatter) continue;
    // One rank on each of the 8 nodes: 7 ring steps on the inter-node link, by hand.
    EXPECT_NEAR(join_time(*r, c.task),
                7 * e.alpha_ns + 7.0 / 8 * kPairScatterBytes * e.beta_ns_per_byte, 1);
  }
  EXPECT_EQ(r->scale.grown, 9);  // the allreduce and the 8 replica groups
  EXPECT_EQ(r->scale.node_local, 0);
  ASSERT_EQ(r->scale.kept.size(), 1u);
  EXPECT_EQ(r->scale.kept[0].first, "all_gather of 4 ranks");
  EXPECT_EQ(kept_size_summary(r->scale), "1 all_gather of 4 ranks");
  // Fewer target nodes than the replica group had: refused.
  auto fewer = replay_trace(td, scaled_to(1, 32));
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(fewer.error().message.find("one rank on each of the 2 traced nodes"), std::string::npos)
      << fewer.error().message;
}

}  // namespace
}  // namespace dagsgd::sim
