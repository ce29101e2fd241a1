// Sweeps: grid expansion, timelines, the wire round trip, and a sweep split across processes
// giving the same results as one process.
#include <gtest/gtest.h>

#include "common/sweep_fixtures.h"

#include "dagsgd/sim/sweep.h"

namespace dagsgd::sim {
namespace {

using testing::small_grid;

std::unique_ptr<NetworkWorkload> alexnet() {
  NetworkSpec spec;
  spec.network = "alexnet";
  spec.batch = 32;
  auto w = NetworkWorkload::resolve(spec, testing::bundled_catalogs());
  EXPECT_TRUE(w.ok()) << w.error().message;
  return std::move(*w);
}

TEST(SweepGrid, EveryCombinationInOrderWithFabricScopes) {
  auto s = expand_grid(small_grid(), testing::bundled_catalogs().hardware);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->size(), 3u * 3u * 2u);
  // An intra-node fabric replaces the intra link, an inter-node one the inter link.
  EXPECT_EQ((*s)[0].intra, "pcie3");
  EXPECT_EQ((*s)[0].inter, "10gbe");
  EXPECT_EQ((*s)[6].intra, "nvlink2");
  EXPECT_EQ((*s)[6].inter, "ib-edr");
  EXPECT_EQ((*s)[12].fabric, "10gbe");
  EXPECT_EQ((*s)[12].intra, "pcie3");
  // Precision varies fastest; GPU counts fill nodes of 4.
  EXPECT_EQ((*s)[0].precision, "fp32");
  EXPECT_EQ((*s)[1].precision, "fp16");
  EXPECT_EQ((*s)[4].gpus, 8);
  EXPECT_EQ((*s)[4].nodes, 2);
  EXPECT_EQ((*s)[4].gpus_per_node, 4);
  EXPECT_EQ((*s)[0].nodes, 1);
  EXPECT_EQ((*s)[0].gpus_per_node, 1);
  EXPECT_EQ(point_label(small_grid(), (*s)[5]), "pcie3, 8 GPUs, fp16");
}

TEST(SweepGrid, BadInputIsNamed) {
  auto g = small_grid();
  g.fabrics = {"pcie3", "warp-drive"};
  auto s = expand_grid(g, testing::bundled_catalogs().hardware);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("warp-drive"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("ib-edr"), std::string::npos) << "valid names listed";
  g = small_grid();
  g.gpus = {1, 6};
  s = expand_grid(g, testing::bundled_catalogs().hardware);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("6 GPUs"), std::string::npos) << s.error().message;
  g = small_grid();
  g.topks = {1.5};
  EXPECT_FALSE(expand_grid(g, testing::bundled_catalogs().hardware).ok());
}

// The work budget: a grid larger than max_points is refused before it is expanded, with the
// dimensions, the limit and how to raise it; a product that overflows size_t is refused too.
TEST(SweepGrid, PointBudgetRefusesBeforeExpanding) {
  auto g = small_grid();  // 3 x 3 x 1 x 1 x 2 x 1 = 18 points
  g.max_points = 18;
  EXPECT_TRUE(expand_grid(g, testing::bundled_catalogs().hardware).ok());
  g.max_points = 17;
  auto s = expand_grid(g, testing::bundled_catalogs().hardware);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("18 points"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("limit of 17"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("--max-points"), std::string::npos) << s.error().message;
  // 2^16 values in each of four dimensions: 2^64 points, which a size_t product would wrap.
  g = small_grid();
  g.max_points = kMaxSweepPoints;
  g.topks.assign(1U << 16, 0.0);
  g.algorithms.assign(1U << 16, "ring");
  g.overlaps.assign(1U << 16, "wfbp");
  g.precisions.assign(1U << 16, "fp32");
  s = expand_grid(g, testing::bundled_catalogs().hardware);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("more than " + std::to_string(kMaxSweepPoints) + " points"),
            std::string::npos)
      << s.error().message;
  g = small_grid();
  g.max_points = 0;
  EXPECT_FALSE(expand_grid(g, testing::bundled_catalogs().hardware).ok());
}

TEST(SweepGrid, TimelinePerFabricAtTheLargestGpuCount) {
  auto s = expand_grid(small_grid(), testing::bundled_catalogs().hardware);
  ASSERT_TRUE(s.ok());
  auto t = timeline_points(*s);
  ASSERT_EQ(t.size(), 3u);
  for (std::size_t k = 0; k < t.size(); ++k) {
    EXPECT_EQ((*s)[t[k]].gpus, 8);
    EXPECT_EQ((*s)[t[k]].precision, "fp32");
    EXPECT_EQ((*s)[t[k]].fabric, small_grid().fabrics[k]);
  }
}

TEST(SweepPrepare, EveryPointResolvedUpFront) {
  auto w = alexnet();
  auto g = small_grid();
  g.algorithms = {"ring", "butterfly"};
  auto s = prepare_sweep(g, *w, testing::bundled_catalogs());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("unknown collective algorithm 'butterfly'"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("recursive_doubling"), std::string::npos)
      << "lists the valid names: " << s.error().message;
  g = small_grid();
  g.overlaps = {"sometimes"};
  s = prepare_sweep(g, *w, testing::bundled_catalogs());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("sometimes"), std::string::npos) << s.error().message;
  s = prepare_sweep(small_grid(), *w, testing::bundled_catalogs());
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->scenarios.size(), s->points.size());
  EXPECT_EQ(std::count(s->keep_timeline.begin(), s->keep_timeline.end(), true), 3);
}

TEST(SweepWire, ResultsReadBackExactly) {
  auto w = alexnet();
  auto sc = resolve_scenario({2, 4, "pcie3", "10gbe"}, {}, testing::bundled_catalogs());
  ASSERT_TRUE(sc.ok()) << sc.error().message;
  auto r = w->evaluate(*sc, true);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_FALSE(r->timeline.empty());
  ASSERT_GT(r->breakdown.idle + r->breakdown.comm_exposed, 0);
  auto back = result_from_wire(result_to_wire(*r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->iteration, r->iteration);
  EXPECT_EQ(back->throughput, r->throughput);  // bit-exact doubles
  EXPECT_EQ(back->efficiency, r->efficiency);
  EXPECT_EQ(back->speedup, r->speedup);
  EXPECT_EQ(back->bottleneck, r->bottleneck);
  EXPECT_EQ(back->breakdown.comm_exposed, r->breakdown.comm_exposed);
  EXPECT_EQ(back->breakdown.idle, r->breakdown.idle);
  EXPECT_EQ(back->breakdown.h2d, r->breakdown.h2d);
  ASSERT_EQ(back->timeline.size(), r->timeline.size());
  EXPECT_EQ(back->timeline.back().start, r->timeline.back().start);
  EXPECT_EQ(result_to_wire(*back), result_to_wire(*r));
  EXPECT_FALSE(result_from_wire("{\"workers\": 1}").ok());
  EXPECT_FALSE(result_from_wire("not json").ok());
}

// One of two processes: what it gathers is its own share, remembered for the other side.
class TwoProcesses final : public SweepExecutor {
 public:
  TwoProcesses(int rank, std::string* other_share) : rank_(rank), other_(other_share) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  std::string gather(const std::string& mine) const override {
    if (rank_ == 1) {
      *other_ = mine;  // what MPI_Gatherv would carry to rank 0
      return {};
    }
    return mine + *other_;
  }

 private:
  int rank_;
  std::string* other_;
};

TEST(SweepRun, TwoProcessesGiveTheSameResultsAsOne) {
  auto w = alexnet();
  auto g = small_grid();
  g.algorithms = {"ring", "tree", "auto"};
  g.precisions = {"fp32"};
  auto sweep = prepare_sweep(g, *w, testing::bundled_catalogs());
  ASSERT_TRUE(sweep.ok()) << sweep.error().message;
  // Process 1 runs the odd points but those whose timeline is kept: process 0 runs them all.
  std::size_t odd_timelines = 0;
  std::size_t second_runs = 0;
  for (std::size_t i = 0; i < sweep->points.size(); ++i) {
    if (i % 2 == 1 && sweep->keep_timeline[i]) ++odd_timelines;
    if (i % 2 == 1 && !sweep->keep_timeline[i]) ++second_runs;
  }
  ASSERT_GT(odd_timelines, 0u) << "the grid puts a timeline point on an odd index";
  auto serial = run_sweep(*w, *sweep, SerialExecutor());
  ASSERT_TRUE(serial.ok()) << serial.error().message;
  ASSERT_EQ(serial->size(), sweep->points.size());

  std::string share;
  std::vector<std::size_t> progress;
  auto second = run_sweep(*w, *sweep, TwoProcesses(1, &share),
                          [&](std::size_t done, std::size_t) { progress.push_back(done); });
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_TRUE(second->empty()) << "only process 0 holds the results";
  EXPECT_EQ(progress.size(), second_runs) << "process 1 ran every other point but timelines";
  // The indices of process 1's "index\nlength\nwire" records.
  std::vector<std::size_t> sent;
  for (std::size_t pos = 0; pos < share.size();) {
    const std::size_t nl1 = share.find('\n', pos);
    const std::size_t nl2 = share.find('\n', nl1 + 1);
    ASSERT_NE(nl2, std::string::npos);
    sent.push_back(std::stoul(share.substr(pos, nl1 - pos)));
    pos = nl2 + 1 + std::stoul(share.substr(nl1 + 1, nl2 - nl1 - 1));
  }
  ASSERT_EQ(sent.size(), second_runs);
  for (std::size_t i : sent) EXPECT_TRUE(i % 2 == 1 && !sweep->keep_timeline[i]) << i;
  auto first = run_sweep(*w, *sweep, TwoProcesses(0, &share));
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->size(), serial->size());
  for (std::size_t i = 0; i < serial->size(); ++i) {
    EXPECT_EQ(result_to_wire((*first)[i]), result_to_wire((*serial)[i])) << i;
  }
  // A point that fails in the other process is reported by name.
  share = "1\n6\n!boom!";
  auto failed = run_sweep(*w, *sweep, TwoProcesses(0, &share));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("pcie3, 1 GPU"), std::string::npos)
      << failed.error().message;
  EXPECT_NE(failed.error().message.find("boom!"), std::string::npos);
}

TEST(SweepGrid, ATracedRunReplaysItsOwnRanksOrScalesToEachCount) {
  const std::string kineto = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/nccl_data.json.gz";
  auto w = TracedWorkload::load({kineto}, trace::ImportOptions{}, 16);
  ASSERT_TRUE(w.ok()) << w.error().message;
  // One rank's trace of a job of two: its collectives are the two ranks' allreduces.
  ASSERT_EQ((*w)->ranks(), 1);
  ASSERT_EQ((*w)->traced_world(), 2);
  SweepGrid grid = small_grid();
  ASSERT_TRUE(fit_grid_to_run(grid, **w, false, false).ok());
  EXPECT_EQ(grid.gpus, std::vector<int>{(*w)->ranks()});
  EXPECT_EQ(grid.gpus_per_node, run_topology((*w)->dag()).gpus_per_node);
  EXPECT_TRUE(grid.scaled_gpus.empty());

  // The job's own two ranks, then 16 and 64 GPUs in nodes of 8: the last two scale it.
  grid = small_grid();
  grid.gpus = {2, 16, 64};
  grid.gpus_per_node = 8;
  ASSERT_TRUE(fit_grid_to_run(grid, **w, true, true).ok());
  EXPECT_EQ(grid.gpus, (std::vector<int>{2, 16, 64}));
  EXPECT_EQ(grid.gpus_per_node, 8) << "GPUs per node given: kept";
  EXPECT_EQ(grid.scaled_gpus, (std::vector<int>{16, 64}));

  // Counts that do not fit, each named by its flag and value.
  for (const auto& [gpus, words] : std::vector<std::pair<int, std::string>>{
           {3, "--gpus 3: 3 GPUs is not a whole multiple of the run's 2 ranks"},
           {12, "--gpus 12: 12 GPUs do not fill whole nodes of 8 GPUs"}}) {
    grid = small_grid();
    grid.gpus = {gpus};
    grid.gpus_per_node = 8;
    auto bad = fit_grid_to_run(grid, **w, true, true);
    ASSERT_FALSE(bad.ok()) << gpus;
    EXPECT_EQ(bad.error().message.rfind(words, 0), 0u) << bad.error().message;
  }
}

}  // namespace
}  // namespace dagsgd::sim
