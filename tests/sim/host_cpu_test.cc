// Host CPUs shared by time slicing among always-runnable ranks: ranks beyond a host's cores run
// slower, also while their neighbours wait; collectives are untouched.
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

// `factor` for the tasks of `dag` that `on_cores` picks, 0 (left as they are) for the others.
template <typename Pick>
std::vector<double> cpu_scale(const Dag& dag, double factor, Pick on_cores) {
  std::vector<double> scale(dag.task_count(), 0.0);
  for (model::TaskId id = 0; static_cast<std::size_t>(id) < dag.task_count(); ++id) {
    if (on_cores(dag.task(id).kind)) scale[static_cast<std::size_t>(id)] = factor;
  }
  return scale;
}

bool computation(TaskKind k) { return k != TaskKind::kComm; }

// Simulated on the hosts' shared cores.
SimResult shared_run(const Dag& dag, const HostPlacement& placement,
                     std::vector<double> scale = {}) {
  if (scale.empty()) scale = cpu_scale(dag, 1.0, computation);
  auto shared = share_host_cpus(dag, placement, scale);
  EXPECT_TRUE(shared.ok()) << shared.error().message;
  if (!shared) return {};
  auto r = simulate(*shared, nullptr);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r ? *r : SimResult{};
}

TEST(HostCpus, FourRanksOnTwoCoresRunAtHalfSpeed) {
  Dag dag = one_iteration(4);
  // All four forwards at half a core: 20; the backwards: 40; the allreduce: 45.
  auto r = shared_run(dag, HostPlacement{{0, 0, 0, 0}, {2}});
  EXPECT_EQ(r.makespan, 45);
  for (model::TaskId id = 0; id < 8; ++id) {
    EXPECT_EQ(r.finish[static_cast<std::size_t>(id)], id % 2 == 0 ? 20 : 40) << id;
  }
  // Three ranks on two cores: two thirds of a core each (15, then 30), the collective 35.
  EXPECT_EQ(shared_run(one_iteration(3), HostPlacement{{0, 0, 0}, {2}}).makespan, 35);
  // No more ranks than cores: full speed.
  EXPECT_EQ(shared_run(dag, HostPlacement{{0, 0, 1, 1}, {2, 2}}).makespan, 25);
}

// Two ranks on one core with different work and start times: rank 0 (10 + 10) and rank 1
// (30 + 10, from 4) each run at half a core all the time, also while the other waits for the
// collective (an MPI rank waits by polling): rank 0 ends at 40, rank 1 at 4 + 80 = 84, the
// collective at 89. (Sharing the core only among computing ranks gave rank 0 36 and rank 1 60:
// the time rank 0 spends polling in the collective was given to rank 1.)
TEST(HostCpus, WaitingRanksKeepTheirShare) {
  Dag dag;
  auto comm = dag.add_resource("comm");
  auto s0 = dag.add_resource("w0.compute");
  auto s1 = dag.add_resource("w1.compute");
  auto delay = dag.add_resource("w1.before");
  auto f0 = dag.add_task(Task{10, s0, 0, 0, 0, TaskKind::kForward});
  auto b0 = dag.add_task(Task{10, s0, 0, 0, 0, TaskKind::kBackward});
  auto wait = dag.add_task(Task{4, delay, -1, 0, 0, TaskKind::kComm});
  auto f1 = dag.add_task(Task{30, s1, 1, 0, 0, TaskKind::kForward});
  auto b1 = dag.add_task(Task{10, s1, 1, 0, 0, TaskKind::kBackward});
  auto c = dag.add_task(Task{5, comm, -1, 0, 0, TaskKind::kComm});
  dag.add_edge(f0, b0);
  dag.add_edge(wait, f1);
  dag.add_edge(f1, b1);
  dag.add_edge(b0, c, model::EdgeKind::kCollectiveJoin);
  dag.add_edge(b1, c, model::EdgeKind::kCollectiveJoin);
  dag.finalize();
  auto r = shared_run(dag, HostPlacement{{0, 0}, {1}});
  EXPECT_EQ(r.finish[static_cast<std::size_t>(f0)], 20);
  EXPECT_EQ(r.finish[static_cast<std::size_t>(b0)], 40);
  EXPECT_EQ(r.finish[static_cast<std::size_t>(f1)], 64);
  EXPECT_EQ(r.finish[static_cast<std::size_t>(b1)], 84);
  EXPECT_EQ(r.makespan, 89);
}

// Durations are scaled by the given factor and the oversubscription; tasks of no scale keep
// their own duration.
TEST(HostCpus, ScaledAndUnscaledTasks) {
  Dag dag = one_iteration(4);
  auto scale = cpu_scale(dag, 0.5, [](TaskKind k) { return k == TaskKind::kBackward; });
  auto shared = share_host_cpus(dag, HostPlacement{{0, 0, 0, 0}, {1}}, scale);
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->task(1).duration, 20);  // 10 x 0.5 x 4 ranks per core
  EXPECT_EQ(shared->task(1).resource, dag.task(1).resource);
  EXPECT_EQ(shared->task(0).duration, 10);
  EXPECT_EQ(shared->task(8).duration, 5);
  // Forwards 10 in parallel; backwards 20: 30; collective 35.
  auto r = shared_run(dag, HostPlacement{{0, 0, 0, 0}, {1}}, scale);
  EXPECT_EQ(r.makespan, 35);
  EXPECT_EQ(r.finish[1], 30);
}

TEST(HostCpus, DurationsMeasuredUnderContentionAreScaledBack) {
  HostPlacement measured{{0, 0, 0, 0}, {2}};
  EXPECT_DOUBLE_EQ(oversubscription(measured, 0), 2.0);
  EXPECT_DOUBLE_EQ(oversubscription(HostPlacement{{0, 1}, {2, 2}}, 0), 1.0);
  // Durations that hold a 2x slowdown, replayed on a placement without contention.
  Dag dag = one_iteration(4);
  auto scale = cpu_scale(dag, 1.0 / oversubscription(measured, 0), computation);
  EXPECT_EQ(shared_run(dag, HostPlacement{{0, 1, 2, 3}, {1, 1, 1, 1}}, scale).makespan, 15);
  // ... and on the placement they were measured on: as measured.
  EXPECT_EQ(shared_run(dag, measured, scale).makespan, 25);
}

TEST(HostCpus, BadPlacementsAreErrors) {
  Dag dag = one_iteration(2);
  std::vector<double> scale(dag.task_count(), 1.0);
  auto missing = share_host_cpus(dag, HostPlacement{{0}, {2}}, scale);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("worker 1"), std::string::npos) << missing.error().message;
  EXPECT_FALSE(share_host_cpus(dag, HostPlacement{{0, 3}, {2}}, scale).ok());
  EXPECT_FALSE(share_host_cpus(dag, HostPlacement{{0, 0}, {0}}, scale).ok());
}

}  // namespace
}  // namespace dagsgd::sim
