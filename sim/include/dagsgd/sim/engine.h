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

// Runs every task of `dag` (finalized) once. A task starts when all its predecessors finished and
// its resource has a free slot; a resource serves waiting tasks in the order they became ready,
// ties broken by event sequence (issue order), so the result is deterministic. A DAG that cannot
// finish (a cycle) is an error naming a task that never ran.
model::Expected<SimResult> simulate(const model::Dag& dag);

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

  // simulate(dag), written into `out` (its vectors are reused; on error its content is
  // unspecified).
  model::Expected<void> run(const model::Dag& dag, SimResult& out);

 private:
  struct Scratch;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace dagsgd::sim
