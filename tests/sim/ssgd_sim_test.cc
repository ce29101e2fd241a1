// The simulator equals DESIGN.md's closed forms exactly when resources do not conflict, and the
// compact S-SGD DAG's run analyses exactly as the explicit DAG's.
#include <gtest/gtest.h>

#include <random>

#include "common/random_ssgd.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/sim/analysis.h"
#include "dagsgd/sim/engine.h"

namespace dagsgd {
namespace {

using model::GradientGroup;
using model::LayerTime;
using model::Nanos;
using model::OverlapPolicy;

// A linear collective cost: startup plus bytes (like ring allreduce on one link class).
model::CommTimeFn linear_comm(Nanos alpha, double ns_per_element) {
  return [=](std::int64_t elements) {
    return alpha + static_cast<Nanos>(ns_per_element * static_cast<double>(elements));
  };
}

// Steady-state iteration time of the last simulated iteration, the same from the explicit DAG
// and from the compact one.
Nanos simulated(const model::SsgdConfig& c) {
  model::Dag dag = model::build_ssgd_dag(c);
  auto r = sim::simulate(dag);
  EXPECT_TRUE(r.ok());
  const Nanos t = sim::analyze_iteration(dag, *r, c.iterations - 1, 0).time();
  const model::SsgdDag compact(c);
  sim::Engine engine;
  sim::SsgdSimResult cr;
  EXPECT_TRUE(engine.run(compact, cr).ok());
  EXPECT_EQ(sim::analyze_iteration(compact, cr, c.iterations - 1, 0).time(), t);
  return t;
}

void expect_same(const sim::IterationAnalysis& got, const sim::IterationAnalysis& want) {
  EXPECT_EQ(got.iteration, want.iteration);
  EXPECT_EQ(got.worker, want.worker);
  EXPECT_EQ(got.start, want.start);
  EXPECT_EQ(got.end, want.end);
  const auto& a = got.breakdown;
  const auto& b = want.breakdown;
  EXPECT_EQ(a.forward, b.forward);
  EXPECT_EQ(a.backward, b.backward);
  EXPECT_EQ(a.comm_total, b.comm_total);
  EXPECT_EQ(a.comm_exposed, b.comm_exposed);
  EXPECT_EQ(a.update, b.update);
  EXPECT_EQ(a.io, b.io);
  EXPECT_EQ(a.h2d, b.h2d);
  EXPECT_EQ(a.memcpy, b.memcpy);
  EXPECT_EQ(a.other, b.other);
  EXPECT_EQ(a.idle, b.idle);
  EXPECT_EQ(got.critical_path.by_kind, want.critical_path.by_kind);
  EXPECT_EQ(got.critical_path.wait, want.critical_path.wait);
  EXPECT_EQ(got.critical_path.tasks, want.critical_path.tasks);
}

model::SsgdConfig config(std::vector<LayerTime> layers, const OverlapPolicy& p,
                         const model::CommTimeFn& comm, int workers) {
  model::SsgdConfig c;
  c.layers = std::move(layers);
  c.groups = model::make_groups(c.layers, p, comm);
  c.workers = workers;
  return c;
}

std::vector<LayerTime> fixed_layers() {
  // forward, backward, parameters
  return {{100, 200, 1000}, {50, 120, 0}, {300, 600, 5000}, {80, 150, 2000}, {20, 40, 100}};
}

Nanos total(const std::vector<GradientGroup>& groups) {
  Nanos t = 0;
  for (const auto& g : groups) t += g.comm;
  return t;
}

// The fixed layers without overlap, with input (1000 + 300 ns) and update (70 ns) phases.
model::SsgdConfig with_phases(int workers, bool prefetch) {
  auto c = config(fixed_layers(), OverlapPolicy{OverlapPolicy::Kind::kNone}, linear_comm(500, 0.1),
                  workers);
  c.prefetch = prefetch;
  c.io = 1000;
  c.h2d = 300;
  c.update = 70;
  return c;
}

TEST(SsgdSim, NoOverlapEqualsSumOfPhases) {
  auto c = with_phases(4, false);
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0].elements, 8100);
  // 1000 + 300 + (550 + 1110) + (500 + 810) + 70
  EXPECT_EQ(simulated(c), 4340);
  EXPECT_EQ(simulated(c), model::closed_form_no_overlap(1000, 300, c.layers, total(c.groups), 70));
}

TEST(SsgdSim, PrefetchHidesInputWhenComputeDominates) {
  auto c = with_phases(2, true);
  EXPECT_EQ(simulated(c), 550 + 1110 + 1310 + 70);
  c.io = 5000;  // now input-bound
  EXPECT_EQ(simulated(c), 5300);
  EXPECT_EQ(simulated(c), model::closed_form_prefetched(5000, 300, c.layers, total(c.groups), 70));
}

TEST(SsgdSim, WfbpMatchesRecurrenceByHand) {
  auto comm = linear_comm(500, 0.1);
  auto c = config(fixed_layers(), OverlapPolicy{OverlapPolicy::Kind::kWfbp}, comm, 3);
  c.update = 70;
  // Backward ends (from backward start): b4 40, b3 190, b2 790, b1 910, b0 1110.
  // Comms: l4 510 [40,550]; l3 700 [550,1250]; l2 1000 [1250,2250]; l0 600 [2250,2850].
  ASSERT_EQ(c.groups.size(), 4u);
  EXPECT_EQ(simulated(c), 550 + 2850 + 70);
  EXPECT_EQ(simulated(c), model::closed_form_grouped(c.layers, c.groups, 70));
}

TEST(SsgdSim, MgwfbpMergesWhenStartupDominates) {
  auto comm = linear_comm(5000, 0.01);  // large startup: merging pays
  auto layers = fixed_layers();
  auto wfbp = model::make_groups(layers, OverlapPolicy{OverlapPolicy::Kind::kWfbp}, comm);
  auto mg = model::make_groups(layers, OverlapPolicy{OverlapPolicy::Kind::kMgwfbp}, comm);
  EXPECT_LT(mg.size(), wfbp.size());
  EXPECT_LT(model::closed_form_grouped(layers, mg, 0), model::closed_form_grouped(layers, wfbp, 0));
  auto c = config(layers, OverlapPolicy{OverlapPolicy::Kind::kMgwfbp}, comm, 2);
  EXPECT_EQ(simulated(c), model::closed_form_grouped(layers, c.groups, 0));
}

TEST(SsgdSim, BucketsCloseAtTheirSize) {
  std::vector<LayerTime> layers(10, LayerTime{10, 20, 1 << 18});  // 1 MiB of fp32 each
  auto comm = linear_comm(100, 0.001);
  auto groups = model::make_groups(layers, *model::parse_overlap("bucket:2.5"), comm);
  // Reverse order: layers 9-7 (3 MiB), 6-4, 3-1, then 0 alone.
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].first, 7);
  EXPECT_EQ(groups[0].last, 9);
  EXPECT_EQ(groups[3].first, 0);
  EXPECT_EQ(groups[3].last, 0);
  auto c = config(layers, *model::parse_overlap("bucket:2.5"), comm, 2);
  EXPECT_EQ(simulated(c), model::closed_form_grouped(layers, c.groups, 0));
}

TEST(SsgdSim, ParseOverlapRejectsBadInput) {
  EXPECT_FALSE(model::parse_overlap("bucket:").ok());
  EXPECT_FALSE(model::parse_overlap("bucket:-1").ok());
  EXPECT_FALSE(model::parse_overlap("bucket:2x").ok());
  auto bad = model::parse_overlap("fast");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("mgwfbp"), std::string::npos);
  EXPECT_EQ(model::parse_overlap("bucket:25")->name(), "bucket:25");
}

// Randomized: every policy, any sizes, many workers; the simulator equals the closed form.
TEST(SsgdSim, RandomizedClosedForms) {
  std::mt19937_64 rng(20181203);
  std::uniform_int_distribution<int> nlayers(1, 40);
  std::uniform_int_distribution<Nanos> dur(0, 100'000);
  std::uniform_int_distribution<std::int64_t> params(0, 3'000'000);
  std::uniform_int_distribution<int> workers(1, 6);
  std::bernoulli_distribution no_params(0.2);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<LayerTime> layers(static_cast<std::size_t>(nlayers(rng)));
    for (auto& l : layers) l = LayerTime{dur(rng), dur(rng), no_params(rng) ? 0 : params(rng)};
    auto comm = linear_comm(dur(rng), static_cast<double>(dur(rng)) / 1e6);
    const Nanos update = dur(rng);
    for (const char* p : {"wfbp", "mgwfbp", "bucket:4", "none"}) {
      auto c = config(layers, *model::parse_overlap(p), comm, workers(rng));
      c.update = update;
      ASSERT_EQ(simulated(c), model::closed_form_grouped(layers, c.groups, update))
          << "trial " << trial << " policy " << p;
    }
    auto c = config(layers, OverlapPolicy{OverlapPolicy::Kind::kNone}, comm, workers(rng));
    c.io = dur(rng) * 20;
    c.h2d = dur(rng);
    c.update = update;
    c.prefetch = true;
    ASSERT_EQ(simulated(c),
              model::closed_form_prefetched(c.io, c.h2d, layers, total(c.groups), update))
        << "trial " << trial;
    c.prefetch = false;
    ASSERT_EQ(simulated(c),
              model::closed_form_no_overlap(c.io, c.h2d, layers, total(c.groups), update))
        << "trial " << trial;
  }
}

TEST(SsgdSim, MgwfbpNeverSlowerThanWfbpOnLinearCosts) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<Nanos> dur(1, 50'000);
  std::uniform_int_distribution<std::int64_t> params(1, 1'000'000);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<LayerTime> layers(20);
    for (auto& l : layers) l = LayerTime{dur(rng), dur(rng), params(rng)};
    auto comm = linear_comm(dur(rng), static_cast<double>(dur(rng)) / 1e6);
    auto wfbp = model::make_groups(layers, OverlapPolicy{OverlapPolicy::Kind::kWfbp}, comm);
    auto mg = model::make_groups(layers, OverlapPolicy{OverlapPolicy::Kind::kMgwfbp}, comm);
    EXPECT_LE(model::closed_form_grouped(layers, mg, 0),
              model::closed_form_grouped(layers, wfbp, 0))
        << "trial " << trial;
  }
}

TEST(SsgdSim, CriticalPathAndBreakdownAddUp) {
  auto comm = linear_comm(500, 0.1);
  auto c = config(fixed_layers(), OverlapPolicy{OverlapPolicy::Kind::kWfbp}, comm, 2);
  c.update = 70;
  model::Dag dag = model::build_ssgd_dag(c);
  auto r = sim::simulate(dag);
  ASSERT_TRUE(r.ok());
  auto a = sim::analyze_iteration(dag, *r, 2, 1);
  Nanos on_path = a.critical_path.wait;
  for (Nanos t : a.critical_path.by_kind) on_path += t;
  EXPECT_EQ(on_path, a.time());
  EXPECT_EQ(a.breakdown.forward, 550);
  EXPECT_EQ(a.breakdown.backward, 1110);
  EXPECT_EQ(a.breakdown.comm_total, 510 + 700 + 1000 + 600);
  // Exposed: comm after the last backward (1110) until 2850.
  EXPECT_EQ(a.breakdown.comm_exposed, 2850 - 1110);
  EXPECT_EQ(sim::bound_kind(a.critical_path, a.time()), "communication-bound");
}

TEST(SsgdSim, CompactDagAnalysisEqualsExplicitDag) {
  // Every iteration of every worker analysed from the compact run (recording from there on)
  // equals the explicit DAG's analysis: windows, breakdowns and critical paths.
  std::mt19937_64 rng(5);
  sim::Engine engine;
  sim::SsgdSimResult cr;
  for (int round = 0; round < 300; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const model::SsgdConfig c = testing::random_ssgd_config(rng);
    const model::SsgdDag compact(c);
    const model::Dag dag = compact.expand();
    auto r = sim::simulate(dag);
    ASSERT_TRUE(r.ok());
    for (int it = 0; it < c.iterations; ++it) {
      ASSERT_TRUE(engine.run(compact, cr, nullptr, it).ok());
      for (int w = 0; w < c.workers; ++w) {
        expect_same(sim::analyze_iteration(compact, cr, it, w),
                    sim::analyze_iteration(dag, *r, it, w));
      }
    }
  }
}

TEST(SsgdSim, DeterministicAndDetectsCycles) {
  auto comm = linear_comm(500, 0.1);
  auto c = config(fixed_layers(), OverlapPolicy{OverlapPolicy::Kind::kMgwfbp}, comm, 3);
  model::Dag dag = model::build_ssgd_dag(c);
  auto r1 = sim::simulate(dag);
  auto r2 = sim::simulate(dag);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->start, r2->start);
  EXPECT_EQ(r1->gate, r2->gate);

  model::Dag cyc;
  auto res = cyc.add_resource("x");
  auto a = cyc.add_task(model::Task{1, res});
  auto b = cyc.add_task(model::Task{1, res});
  cyc.add_edge(a, b);
  cyc.add_edge(b, a);
  cyc.finalize();
  auto bad = sim::simulate(cyc);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("cycle"), std::string::npos);
  auto topo = cyc.topological_order();
  ASSERT_FALSE(topo.ok());
  EXPECT_NE(topo.error().message.find("cycle"), std::string::npos);
}

TEST(SsgdSim, LongestPathWithoutContentionMatchesSimulation) {
  // One worker, no overlap: no two tasks ever compete, so the DAG's longest path is the run.
  auto comm = linear_comm(500, 0.1);
  auto c = config(fixed_layers(), OverlapPolicy{OverlapPolicy::Kind::kNone}, comm, 1);
  c.iterations = 1;
  c.prefetch = false;
  model::Dag dag = model::build_ssgd_dag(c);
  auto lp = dag.longest_path();
  ASSERT_TRUE(lp.ok());
  auto r = sim::simulate(dag);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(lp->length, r->makespan);
  EXPECT_EQ(dag.task(lp->tasks.back()).kind, model::TaskKind::kUpdate);
}

}  // namespace
}  // namespace dagsgd
