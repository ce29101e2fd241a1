// What a simulated run means: iteration time, per-phase breakdown, critical path, bottleneck.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/units.h"
#include "dagsgd/sim/engine.h"

namespace dagsgd::sim {

// Time of one worker's iteration by phase, in ns. comm_exposed is the part of the window in
// which a collective runs and the worker computes nothing; idle is the part where nothing of
// the worker's and no collective runs.
struct Breakdown {
  model::Nanos forward = 0;
  model::Nanos backward = 0;
  model::Nanos comm_total = 0;
  model::Nanos comm_exposed = 0;
  model::Nanos update = 0;
  model::Nanos io = 0;
  model::Nanos h2d = 0;
  model::Nanos memcpy = 0;  // device copies (traces)
  model::Nanos other = 0;   // host work outside the phases (traces)
  model::Nanos idle = 0;
};

struct CriticalPath {
  // Time on the path per task kind (indexed by model::TaskKind), and waiting with no task.
  std::array<model::Nanos, model::kTaskKindCount> by_kind{};
  model::Nanos wait = 0;
  std::vector<model::TaskId> tasks;  // first to last
};

struct IterationAnalysis {
  int iteration = 0;
  model::Nanos start = 0;  // end of the previous iteration's updates (0 for the first)
  model::Nanos end = 0;    // end of this iteration's updates on every worker
  model::Nanos time() const { return end - start; }
  Breakdown breakdown;  // of `worker`
  int worker = 0;
  CriticalPath critical_path;
};

// Analyses iteration `iteration` (of a DAG built by model::build_ssgd_dag or from a trace) as
// seen by `worker`.
IterationAnalysis analyze_iteration(const model::Dag& dag, const SimResult& result, int iteration,
                                    int worker);

// The same for a run of the compact S-SGD DAG, equal to the analysis of the explicit DAG's run.
// `iteration` must be recorded (result.first_recorded() or later).
IterationAnalysis analyze_iteration(const model::SsgdDag& dag, const SsgdSimResult& result,
                                    int iteration, int worker);

// "communication-bound", "compute-bound", "input-bound" or "update-bound", from the critical
// path's largest share.
std::string bound_kind(const CriticalPath& path, model::Nanos iteration_time);

}  // namespace dagsgd::sim
