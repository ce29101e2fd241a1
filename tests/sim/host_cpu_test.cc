// Host CPUs as a resource: ranks beyond a host's cores wait for one; collectives are untouched.
#include "dagsgd/sim/host_cpu.h"

#include <gtest/gtest.h>

#include "dagsgd/sim/engine.h"

namespace dagsgd::sim {
namespace {

using model::Dag;
using model::Task;
using model::TaskKind;

// `workers` ranks, each forward (10) -> backward (10) on its own stream, then one allreduce
// (5, all workers) joined by every backward.
Dag one_iteration(int workers) {
  Dag dag;
  auto comm = dag.add_resource("comm");
  std::vector<model::TaskId> backs;
  for (int w = 0; w < workers; ++w) {
    auto stream = dag.add_resource("w" + std::to_string(w) + ".compute");
    auto f = dag.add_task(Task{10, stream, w, 0, 0, TaskKind::kForward});
    auto b = dag.add_task(Task{10, stream, w, 0, 0, TaskKind::kBackward});
    dag.add_edge(f, b);
    backs.push_back(b);
  }
  auto c = dag.add_task(Task{5, comm, -1, 0, 0, TaskKind::kComm});
  for (auto b : backs) dag.add_edge(b, c, model::EdgeKind::kCollectiveJoin);
  dag.finalize();
  return dag;
}

model::Nanos makespan(const Dag& dag) {
  auto r = simulate(dag);
  EXPECT_TRUE(r.ok());
  return r ? r->makespan : -1;
}

TEST(HostCpu, RanksBeyondCoresWait) {
  Dag dag = one_iteration(4);
  EXPECT_EQ(makespan(dag), 25);
  // Four ranks on one host with 2 cores: two chains run, the other two wait for cores.
  auto shared = with_host_cpus(dag, HostPlacement{{0, 0, 0, 0}, {2}});
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  EXPECT_EQ(makespan(*shared), 45);
  // Two hosts with 2 cores each: no contention.
  auto spread = with_host_cpus(dag, HostPlacement{{0, 0, 1, 1}, {2, 2}});
  ASSERT_TRUE(spread.ok());
  EXPECT_EQ(makespan(*spread), 25);
  EXPECT_EQ(spread->task_count(), dag.task_count());
  EXPECT_EQ(spread->edge_count(), dag.edge_count());
}

TEST(HostCpu, DurationsMeasuredUnderContentionAreScaledBack) {
  HostPlacement measured{{0, 0, 0, 0}, {2}};
  EXPECT_DOUBLE_EQ(oversubscription(measured, 0), 2.0);
  EXPECT_DOUBLE_EQ(oversubscription(HostPlacement{{0, 1}, {2, 2}}, 0), 1.0);
  // Durations that hold a 2x slowdown, replayed on a placement without contention.
  auto r = with_host_cpus(one_iteration(4), HostPlacement{{0, 1, 2, 3}, {1, 1, 1, 1}},
                          1.0 / oversubscription(measured, 0));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(makespan(*r), 15);
  // The collective keeps its duration and resource.
  const model::Task& collective = r->tasks().back();
  EXPECT_EQ(collective.duration, 5);
  EXPECT_EQ(collective.resource, 0);
}

// Per task: only the tasks given a scale move onto the cores (here the backward passes, at half
// their length); the forward passes keep their streams and durations.
TEST(HostCpu, PerTaskChoiceAndScale) {
  Dag dag = one_iteration(4);
  std::vector<double> scale(dag.task_count(), 0.0);
  for (model::TaskId id = 0; static_cast<std::size_t>(id) < dag.task_count(); ++id) {
    if (dag.task(id).kind == TaskKind::kBackward) scale[static_cast<std::size_t>(id)] = 0.5;
  }
  auto r = with_host_cpus(dag, HostPlacement{{0, 0, 0, 0}, {1}}, scale);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Forwards end at 10 in parallel; the four 5-long backwards share one core: 10 + 20, then 5.
  EXPECT_EQ(makespan(*r), 35);
  EXPECT_EQ(r->task(0).duration, 10);
  EXPECT_EQ(r->task(0).resource, dag.task(0).resource);
  EXPECT_EQ(r->task(1).duration, 5);
}

TEST(HostCpu, BadPlacementsAreErrors) {
  Dag dag = one_iteration(2);
  auto missing = with_host_cpus(dag, HostPlacement{{0}, {2}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("worker 1"), std::string::npos) << missing.error().message;
  EXPECT_FALSE(with_host_cpus(dag, HostPlacement{{0, 3}, {2}}).ok());
  EXPECT_FALSE(with_host_cpus(dag, HostPlacement{{0, 0}, {0}}).ok());
  EXPECT_FALSE(with_host_cpus(dag, HostPlacement{{0, 0}, {2}}, 0.0).ok());
}

}  // namespace
}  // namespace dagsgd::sim
