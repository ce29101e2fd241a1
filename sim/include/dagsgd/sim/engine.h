// The deterministic discrete-event engine: replays a task DAG on its resources.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/expected.h"
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

 private:
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace dagsgd::sim
