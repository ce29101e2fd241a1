// The engine against a plain reference of its rules: every start, finish and gate equal on random
// DAGs full of ties, shared resources and zero durations, and on S-SGD DAGs; the compact S-SGD
// DAG's run against the explicit DAG's.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <queue>
#include <random>

#include "common/random_ssgd.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/sim/engine.h"

namespace dagsgd {
namespace {

using model::Dag;
using model::Nanos;
using model::TaskId;

// The engine's rules written as directly as possible: a binary heap of (time, sequence,
// task) completion events, a FIFO of ready tasks per resource, and a ready time and gate updated
// by every finishing dependency.
sim::SimResult reference(const Dag& dag) {
  struct Event {
    Nanos time;
    std::uint64_t seq;
    TaskId task;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  const std::size_t n = dag.task_count();
  sim::SimResult r;
  r.start.assign(n, -1);
  r.finish.assign(n, -1);
  r.gate.assign(n, model::kNoTask);
  std::vector<std::int32_t> pending(n);
  std::vector<Nanos> ready_at(n, 0);
  for (std::size_t i = 0; i < n; ++i) pending[i] = dag.in_degree(static_cast<TaskId>(i));
  std::vector<int> free_slots;
  for (const auto& res : dag.resources()) free_slots.push_back(res.capacity);
  std::vector<std::queue<TaskId>> waiting(dag.resources().size());
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap;
  std::uint64_t seq = 0;
  auto start = [&](TaskId t, Nanos now) {
    r.start[static_cast<std::size_t>(t)] = now;
    heap.push(Event{now + dag.task(t).duration, seq++, t});
  };
  auto ready = [&](TaskId t, Nanos now) {
    auto res = static_cast<std::size_t>(dag.task(t).resource);
    if (free_slots[res] > 0) {
      --free_slots[res];
      start(t, now);
    } else {
      waiting[res].push(t);
    }
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready(static_cast<TaskId>(i), 0);
  }
  while (!heap.empty()) {
    Event ev = heap.top();
    heap.pop();
    ++r.events;
    r.finish[static_cast<std::size_t>(ev.task)] = ev.time;
    auto res = static_cast<std::size_t>(dag.task(ev.task).resource);
    if (!waiting[res].empty()) {
      TaskId next = waiting[res].front();
      waiting[res].pop();
      if (ready_at[static_cast<std::size_t>(next)] < ev.time) {
        r.gate[static_cast<std::size_t>(next)] = ev.task;
      }
      start(next, ev.time);
    } else {
      ++free_slots[res];
    }
    for (const TaskId* s = dag.succ_begin(ev.task); s != dag.succ_end(ev.task); ++s) {
      auto si = static_cast<std::size_t>(*s);
      ready_at[si] = ev.time;
      r.gate[si] = ev.task;
      if (--pending[si] == 0) ready(*s, ev.time);
    }
  }
  for (Nanos f : r.finish) r.makespan = std::max(r.makespan, f);
  return r;
}

void expect_same(const sim::SimResult& got, const sim::SimResult& want) {
  EXPECT_EQ(got.events, want.events);
  EXPECT_EQ(got.makespan, want.makespan);
  EXPECT_EQ(got.start, want.start);
  EXPECT_EQ(got.finish, want.finish);
  EXPECT_EQ(got.gate, want.gate);
}

// Tasks numbered in a random order (so ids are not topological), edges only forward in a hidden
// topological order, durations from a tiny range (many equal event times, zeros included) and a
// few resources of capacity 1 to 3 that most tasks must queue for.
Dag random_dag(std::mt19937_64& rng, int tasks, int resources, int max_time, int max_fanout) {
  Dag dag;
  std::uniform_int_distribution<int> cap(1, 3);
  for (int i = 0; i < resources; ++i) dag.add_resource("r" + std::to_string(i), cap(rng));
  std::vector<int> order(static_cast<std::size_t>(tasks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  std::uniform_int_distribution<int> res(0, resources - 1);
  std::uniform_int_distribution<int> dur(0, max_time);
  for (int i = 0; i < tasks; ++i) {
    model::Task t;
    t.duration = dur(rng);
    t.resource = res(rng);
    t.worker = i;
    dag.add_task(t);
  }
  std::uniform_int_distribution<int> fanout(0, max_fanout);
  for (int i = 0; i < tasks; ++i) {
    const int k = fanout(rng);
    for (int j = 0; j < k && i + 1 < tasks; ++j) {
      std::uniform_int_distribution<int> later(i + 1, tasks - 1);
      dag.add_edge(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(later(rng))]);
    }
  }
  dag.finalize();
  return dag;
}

TEST(Engine, EqualsReferenceOnRandomDags) {
  std::mt19937_64 rng(14);
  for (int round = 0; round < 300; ++round) {
    std::uniform_int_distribution<int> tasks(1, 400);
    std::uniform_int_distribution<int> resources(1, 12);
    std::uniform_int_distribution<int> max_time(0, round % 3 == 0 ? 3 : 1'000'000);
    std::uniform_int_distribution<int> fanout(0, 4);
    Dag dag = random_dag(rng, tasks(rng), resources(rng), max_time(rng), fanout(rng));
    auto r = sim::simulate(dag);
    ASSERT_TRUE(r.ok()) << "round " << round;
    SCOPED_TRACE("round " + std::to_string(round));
    expect_same(*r, reference(dag));
  }
}

TEST(Engine, EqualsReferenceOnLargeTimes) {
  // Event times far apart in their high bits: the event queue's upper buckets.
  std::mt19937_64 rng(7);
  Dag dag;
  auto res = dag.add_resource("r", 2);
  std::vector<TaskId> ids;
  for (int i = 0; i < 200; ++i) {
    model::Task t;
    t.duration = static_cast<Nanos>(rng() % (Nanos{1} << (i % 50)));
    t.resource = res;
    ids.push_back(dag.add_task(t));
    if (i >= 3) dag.add_edge(ids[static_cast<std::size_t>(i - 3)], ids.back());
  }
  dag.finalize();
  auto r = sim::simulate(dag);
  ASSERT_TRUE(r.ok());
  expect_same(*r, reference(dag));
}

TEST(Engine, EqualsReferenceOnSsgdDags) {
  auto comm = [](std::int64_t elements) { return 500 + elements / 100; };
  for (auto kind : {model::OverlapPolicy::Kind::kNone, model::OverlapPolicy::Kind::kWfbp,
                    model::OverlapPolicy::Kind::kMgwfbp}) {
    for (int workers : {1, 3, 64}) {
      model::SsgdConfig c;
      c.layers.assign(20, model::LayerTime{1000, 2000, 100000});
      c.layers[3] = model::LayerTime{10, 0, 7};
      c.workers = workers;
      c.iterations = 3;
      c.groups = model::make_groups(c.layers, model::OverlapPolicy{kind}, comm);
      Dag dag = model::build_ssgd_dag(c);
      auto r = sim::simulate(dag);
      ASSERT_TRUE(r.ok());
      expect_same(*r, reference(dag));
    }
  }
}

TEST(Engine, ReusedEngineEqualsFreshRuns) {
  // Larger, smaller and failing DAGs through one engine and one result: nothing carries over.
  std::mt19937_64 rng(3);
  sim::Engine engine;
  sim::SimResult out;
  for (int tasks : {300, 20, 1, 500, 40}) {
    Dag dag = random_dag(rng, tasks, 4, 50, 3);
    ASSERT_TRUE(engine.run(dag, out).ok());
    expect_same(out, reference(dag));

    // A task that runs, then a three-task cycle behind it: the error names the first task
    // that never ran.
    Dag cyc;
    auto res = cyc.add_resource("x");
    auto lead = cyc.add_task(model::Task{1, res, 0});
    auto a = cyc.add_task(model::Task{2, res, 1});
    auto b = cyc.add_task(model::Task{3, res, 2});
    auto c = cyc.add_task(model::Task{4, res, 3});
    cyc.add_edge(lead, a);
    cyc.add_edge(a, b);
    cyc.add_edge(b, c);
    cyc.add_edge(c, a);
    cyc.finalize();
    auto bad = engine.run(cyc, out);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "the task graph cannot finish: " + cyc.describe(a) +
                                       " never ran (a dependency cycle)");
  }
}

// The compact run's recorded tasks against the explicit DAG's run, and each iteration's end (its
// latest update, the first in task order on a tie).
void expect_same(const model::SsgdDag& dag, const sim::SsgdSimResult& got,
                 const sim::SimResult& want) {
  EXPECT_EQ(got.events(), want.events);
  EXPECT_EQ(got.makespan(), want.makespan);
  for (std::size_t i = 0; i < dag.task_count(); ++i) {
    const auto id = static_cast<TaskId>(i);
    if (!got.recorded(id)) continue;
    ASSERT_EQ(got.start(id), want.start[i]) << dag.describe(id);
    ASSERT_EQ(got.finish(id), want.finish[i]) << dag.describe(id);
    ASSERT_EQ(got.gate(id), want.gate[i]) << dag.describe(id);
  }
  for (int it = 0; it < dag.iterations(); ++it) {
    Nanos end = 0;
    TaskId last = model::kNoTask;
    for (int w = 0; w < dag.workers(); ++w) {
      const TaskId u = dag.task_id(it, w, dag.update_position());
      if (last == model::kNoTask || want.finish[static_cast<std::size_t>(u)] > end) {
        end = want.finish[static_cast<std::size_t>(u)];
        last = u;
      }
    }
    EXPECT_EQ(got.iteration_end(it), end);
    EXPECT_EQ(got.iteration_last(it), last);
  }
}

TEST(Engine, CompactSsgdDagEqualsExplicitDag) {
  // Random shapes full of equal times, zero durations and stragglers; every iteration recorded,
  // then only the last, through one engine that also runs explicit DAGs in between.
  std::mt19937_64 rng(21);
  sim::Engine engine;
  sim::SsgdSimResult compact;
  sim::SimResult full;
  for (int round = 0; round < 400; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const model::SsgdConfig c = testing::random_ssgd_config(rng);
    const model::SsgdDag dag(c);
    const Dag explicit_dag = dag.expand();
    ASSERT_TRUE(engine.run(explicit_dag, full).ok());
    if (round % 20 == 0) expect_same(full, reference(explicit_dag));
    for (int first : {0, c.iterations - 1}) {
      ASSERT_TRUE(engine.run(dag, compact, nullptr, first).ok());
      EXPECT_EQ(compact.first_recorded(), first);
      EXPECT_EQ(compact.recorded(dag.task_id(first, 0, 0)), true);
      if (first > 0) {
        EXPECT_FALSE(compact.recorded(dag.task_id(first, 0, 0) - 1));
      }
      expect_same(dag, compact, full);
    }
  }
}

TEST(Engine, CompactSsgdDagOfManyAlikeWorkers) {
  // Hundreds of equal workers: every collective joins a tie of all of them.
  model::SsgdConfig c;
  c.layers.assign(12, model::LayerTime{1000, 2000, 100000});
  c.layers[3] = model::LayerTime{0, 0, 0};
  c.workers = 300;
  c.iterations = 3;
  c.io = 5000;
  c.h2d = 700;
  c.update = 300;
  for (auto kind : {model::OverlapPolicy::Kind::kNone, model::OverlapPolicy::Kind::kWfbp,
                    model::OverlapPolicy::Kind::kMgwfbp}) {
    c.groups = model::make_groups(c.layers, model::OverlapPolicy{kind},
                                  [](std::int64_t e) { return 500 + e / 100; });
    const model::SsgdDag dag(c);
    auto want = sim::simulate(dag.expand());
    ASSERT_TRUE(want.ok());
    sim::Engine engine;
    sim::SsgdSimResult got;
    ASSERT_TRUE(engine.run(dag, got, nullptr, 0).ok());
    expect_same(dag, got, *want);
  }
}

TEST(Engine, EmptyDag) {
  Dag dag;
  dag.finalize();
  auto r = sim::simulate(dag);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->events, 0u);
  EXPECT_EQ(r->makespan, 0);
  EXPECT_TRUE(r->start.empty());
}

}  // namespace
}  // namespace dagsgd
