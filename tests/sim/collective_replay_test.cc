// Replay of a traced job's collectives other than allreduce: all-to-all, all-gather and a
// reduce-scatter of a process group smaller than the run, priced by their closed forms on the
// links their ranks use, faster on a faster fabric; what the model cannot price is named.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/nccl_trace.h"
#include "common/temp.h"
#include "dagsgd/model/io.h"
#include "dagsgd/sim/collective_summary.h"
#include "dagsgd/sim/trace_replay.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::sim {
namespace {

constexpr double kAlltoallBytes = 1048576.0 * 4;   // In msg nelems x float
constexpr double kAllgatherBytes = 1048576.0 * 4;  // Out msg nelems x float (In: a quarter)
constexpr double kScatterBytes = 524288.0 * 4;     // In msg nelems x float (Out: a half)

using testing::nccl_kernel;
using testing::traced_dag;

// Four ranks (two nodes of two on the target): an all-to-all and an all-gather of the whole
// run, a reduce-scatter in the replica groups {0, 2} and {1, 3} (one rank on each node), and a
// gather, which the model has no plan for.
std::vector<std::string> four_rank_job(const std::string& dir) {
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r) {
    const std::string replica = r % 2 == 0 ? "[0, 2]" : "[1, 3]";
    std::string s;
    s += nccl_kernel(1, 100, 300, "all_to_all", 1048576, 1048576, "[0, 1, 2, 3]");
    s += nccl_kernel(2, 500, 300, "all_gather", 262144, 1048576, "[0, 1, 2, 3]");
    s += nccl_kernel(3, 900, 200, "reduce_scatter", 524288, 262144, replica);
    s += nccl_kernel(4, 1200, 100, "gather", 1000, 4000, "[0, 1, 2, 3]");
    files.push_back(dir + "/rank" + std::to_string(r) + ".json");
    EXPECT_TRUE(
        model::write_file(files.back(), testing::kineto_rank(r, 4, 2000, 1450, s), true).ok());
  }
  return files;
}

model::Topology two_nodes(double scale) {
  model::Topology t;
  t.nodes = 2;
  t.gpus_per_node = 2;
  t.intra.alpha_ns = 2000 / scale;
  t.intra.beta_ns_per_byte = 0.01 / scale;  // 100 GB/s
  t.inter.alpha_ns = 5000 / scale;
  t.inter.beta_ns_per_byte = 0.1 / scale;  // 10 GB/s
  return t;
}

// The simulated duration of each collective's join task.
std::vector<double> priced(const trace::TraceDag& td, const ReplayResult& r) {
  std::vector<double> out;
  for (const auto& c : td.collectives) {
    const auto t = static_cast<std::size_t>(c.task);
    out.push_back(static_cast<double>(r.sim.finish[t] - r.sim.start[t]));
  }
  return out;
}

TEST(CollectiveReplay, EachCollectivePricedOnTheLinksOfItsGroup) {
  const auto td = traced_dag(four_rank_job(testing::fresh_test_dir("dagsgd-colls")));
  // The whole run's collectives, then the two replica groups'; the gather joins too.
  ASSERT_EQ(td.collectives.size(), 5u);
  const auto& a2a = td.collectives[0];
  EXPECT_EQ(a2a.kind, trace::CollectiveKind::kAlltoall);
  EXPECT_TRUE(a2a.joined);
  EXPECT_EQ(a2a.ranks, 4);
  EXPECT_EQ(td.collectives[1].kind, trace::CollectiveKind::kAllgather);
  EXPECT_EQ(td.collectives[1].out_bytes, static_cast<std::int64_t>(kAllgatherBytes));
  EXPECT_EQ(td.collectives[2].kind, trace::CollectiveKind::kNone);  // the gather
  for (std::size_t i : {3u, 4u}) {
    const auto& rs = td.collectives[i];
    EXPECT_EQ(rs.kind, trace::CollectiveKind::kReduceScatter);
    EXPECT_TRUE(rs.joined);
    EXPECT_EQ(rs.ranks, 2);
    EXPECT_EQ(rs.group_ranks.size(), 2u);
  }

  ReplayOptions ro;
  ro.target = two_nodes(1);
  auto r = replay_trace(td, ro);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto t = priced(td, *r);
  const model::LinkCost& e = ro.target->inter;
  // Pairwise all-to-all over 4 ranks on two nodes: 3 alpha + 3/4 M beta on the inter-node link.
  EXPECT_NEAR(t[0], 3 * e.alpha_ns + 0.75 * kAlltoallBytes * e.beta_ns_per_byte, 1);
  // Ring all-gather of the gathered output: the same form.
  EXPECT_NEAR(t[1], 3 * e.alpha_ns + 0.75 * kAllgatherBytes * e.beta_ns_per_byte, 1);
  // The replica groups span both nodes: one step on the inter-node link, not the intra-node
  // link a group of the first two ranks would use.
  for (std::size_t i : {3u, 4u}) {
    EXPECT_NEAR(t[i], e.alpha_ns + 0.5 * kScatterBytes * e.beta_ns_per_byte, 1);
  }
  // The gather keeps its traced 100 us and is named.
  EXPECT_NEAR(t[2], 100000, 1);
  EXPECT_EQ(r->modeled_collectives, 4);
  EXPECT_EQ(r->measured_collectives, 1);
  ASSERT_EQ(r->unpriced_collectives.size(), 1u);
  EXPECT_EQ(r->unpriced_collectives[0].first, "gather: no plan in the model");
  EXPECT_EQ(r->unpriced_collectives[0].second, 1);
  EXPECT_EQ(unpriced_summary(*r), "1 gather: no plan in the model");

  // Twice the bandwidth at half the latency: every priced collective is faster, the iteration
  // no slower.
  ro.target = two_nodes(2);
  auto fast = replay_trace(td, ro);
  ASSERT_TRUE(fast.ok()) << fast.error().message;
  const auto tf = priced(td, *fast);
  for (std::size_t i : {0u, 1u, 3u, 4u}) EXPECT_LT(tf[i], t[i]) << "collective " << i;
  EXPECT_NEAR(tf[0], t[0] / 2, 1);
  EXPECT_LE(fast->predicted_mean_s, r->predicted_mean_s);

  // --comm measured keeps every traced duration and names nothing.
  ro.comm = CommMode::kMeasured;
  auto measured = replay_trace(td, ro);
  ASSERT_TRUE(measured.ok());
  EXPECT_NEAR(priced(td, *measured)[0], 300000, 1);
  EXPECT_TRUE(measured->unpriced_collectives.empty());
}

TEST(CollectiveReplay, SummaryByTypeWithBusBandwidth) {
  const auto td = traced_dag(four_rank_job(testing::fresh_test_dir("dagsgd-colls")));
  const auto rows = summarize_collectives(td, two_nodes(1));
  ASSERT_EQ(rows.size(), 4u);  // reduce_scatter, allgather, alltoall, then the gather
  EXPECT_EQ(rows[0].type, "reduce_scatter");
  EXPECT_EQ(rows[0].count, 2);
  EXPECT_DOUBLE_EQ(rows[0].bytes, 2 * kScatterBytes);
  EXPECT_EQ(rows[0].time, 400000);
  // nccl-tests: busBw = size / time x (n-1)/n; two 2-rank groups of 200 us each.
  EXPECT_DOUBLE_EQ(rows[0].bus_gbps, 2 * kScatterBytes * 0.5 / 400000);
  EXPECT_DOUBLE_EQ(rows[0].fabric_gbps, 10);  // inter-node: the groups span both nodes
  EXPECT_EQ(rows[1].type, "allgather");
  EXPECT_DOUBLE_EQ(rows[1].bus_gbps, kAllgatherBytes * 0.75 / 300000);
  EXPECT_EQ(rows[2].type, "alltoall");
  EXPECT_DOUBLE_EQ(rows[2].bus_gbps, kAlltoallBytes * 0.75 / 300000);
  EXPECT_EQ(rows[3].type, "gather");
  EXPECT_EQ(rows[3].count, 1);
  EXPECT_DOUBLE_EQ(rows[3].bus_gbps, 0);
  // Without a fabric there is nothing to compare with.
  EXPECT_DOUBLE_EQ(summarize_collectives(td, std::nullopt)[0].fabric_gbps, 0);
}

TEST(CollectiveReplay, GroupRanksAsTracesWriteThem) {
  EXPECT_EQ(trace::parse_group_ranks("[0, 2, 4]"), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(trace::parse_group_ranks("[3,1]"), (std::vector<int>{3, 1}));
  EXPECT_TRUE(trace::parse_group_ranks("[]").empty());
  EXPECT_TRUE(trace::parse_group_ranks("[0, 0]").empty());
  EXPECT_TRUE(trace::parse_group_ranks("[0, x]").empty());
  EXPECT_TRUE(trace::parse_group_ranks("0, 1").empty());
  EXPECT_TRUE(trace::parse_group_ranks("[0, 99999999999]").empty());
}

}  // namespace
}  // namespace dagsgd::sim
