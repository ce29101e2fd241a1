// The deterministic discrete-event engine: replays a task DAG on its resources.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/model/units.h"

namespace dagsgd::sim {

struct SimResult {
  std::vector<model::Nanos> start;
  std::vector<model::Nanos> finish;
  // What gated each task's start: its last-finishing dependency, or the task that held its
  // resource when it was ready (kNoTask for tasks that started at their ready time with no
  // dependencies). Walking it backwards gives the critical path.
  std::vector<model::TaskId> gate;
  model::Nanos makespan = 0;
  std::uint64_t events = 0;
};

// What a run of a compact S-SGD DAG (model::SsgdDag) keeps: the start, finish and gate of every
// task of the recorded iterations (from first_recorded() on; the earlier ones are simulated and
// forgotten, so memory grows with the workers, not the iterations), each iteration's end, and
// the totals. Values equal SimResult's for the same DAG built explicitly.
class SsgdSimResult {
 public:
  int first_recorded() const { return first_recorded_; }
  bool recorded(model::TaskId id) const { return id >= first_recorded_id_; }
  // Of a recorded task.
  model::Nanos start(model::TaskId id) const { return start_[index(id)]; }
  model::Nanos finish(model::TaskId id) const;
  model::TaskId gate(model::TaskId id) const { return gate_[index(id)]; }
  // The latest update finish of `iteration` (any iteration), and the first update in task order
  // that finished then.
  model::Nanos iteration_end(int iteration) const {
    return iteration_end_[static_cast<std::size_t>(iteration)];
  }
  model::TaskId iteration_last(int iteration) const {
    return iteration_last_[static_cast<std::size_t>(iteration)];
  }
  model::Nanos makespan() const { return makespan_; }
  std::uint64_t events() const { return events_; }

 private:
  friend class Engine;
  std::size_t index(model::TaskId id) const;
  // Geometry of the DAG (model::SsgdDag's), so that results outlive it.
  std::size_t workers_ = 0;
  std::size_t worker_tasks_ = 0;
  std::size_t iteration_tasks_ = 0;
  int first_recorded_ = 0;
  model::TaskId first_recorded_id_ = 0;
  // Recorded tasks by iteration, then position, then worker (the order a run of alike workers
  // writes them in), then the iteration's collectives.
  std::vector<model::Nanos> start_;
  std::vector<model::TaskId> gate_;
  std::vector<model::Nanos> comm_finish_;  // by recorded iteration, then group
  std::vector<model::Nanos> durations_;    // the DAG's per-worker templates
  std::vector<std::int32_t> worker_template_;
  std::vector<model::Nanos> iteration_end_;
  std::vector<model::TaskId> iteration_last_;
  model::Nanos makespan_ = 0;
  std::uint64_t events_ = 0;
};

// Decides when some tasks finish instead of their fixed duration: the flow-level network, whose
// transfers slow each other down. The engine tells it when such a task starts and asks it for
// its next event; it reports the tasks that finished then, in a deterministic order.
class TaskTimer {
 public:
  virtual ~TaskTimer() = default;
  virtual bool handles(model::TaskId t) const = 0;
  virtual void start(model::TaskId t, model::Nanos now) = 0;
  // The earliest time one of its tasks may finish; kNever when none is running.
  virtual model::Nanos next_event() const = 0;
  // Moves to `now` (its next_event()) and appends the tasks that finished to `finished`.
  virtual void advance(model::Nanos now, std::vector<model::TaskId>& finished) = 0;
  static constexpr model::Nanos kNever = INT64_MAX;
};

// Runs every task of `dag` (finalized) once. A task starts when all its predecessors finished and
// its resource has a free slot; a resource serves waiting tasks in the order they became ready,
// ties broken by event sequence (issue order), so the result is deterministic. A DAG that cannot
// finish (a cycle) is an error naming a task that never ran.
// With a `timer`, the tasks it handles finish when it says (after their resource slot is
// taken); at equal times the engine's own completions come first.
model::Expected<SimResult> simulate(const model::Dag& dag, TaskTimer* timer = nullptr);

// The same engine with its working memory kept between runs: simulating many DAGs (sweeps,
// predict's variants) into one SimResult allocates only when a DAG is larger than all before it.
class Engine {
 public:
  Engine();
  ~Engine();
  Engine(Engine&&) noexcept;
  Engine& operator=(Engine&&) noexcept;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // simulate(dag, timer), written into `out` (its vectors are reused; on error its content is
  // unspecified).
  model::Expected<void> run(const model::Dag& dag, SimResult& out, TaskTimer* timer = nullptr);

  // The same rules on the compact S-SGD DAG: every task of every worker is simulated, in the
  // same event order as simulate(dag.expand()), so starts, finishes and gates are equal; only
  // the iterations from `first_recorded` on are kept (-1: the last). A timer may handle only
  // collectives.
  model::Expected<void> run(const model::SsgdDag& dag, SsgdSimResult& out,
                            TaskTimer* timer = nullptr, int first_recorded = -1);

 private:
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace dagsgd::sim
