// Rendering `dagsgd analyze` and `dagsgd replay` (text for people, JSON for machines) and the
// simulated timeline as a Perfetto-loadable trace.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/sim/collective_summary.h"
#include "dagsgd/sim/job_effects.h"
#include "dagsgd/sim/trace_replay.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::reports {

// analyze: per rank (measured), critical path, stragglers, bottleneck with bounds, import report,
// the collectives by type (sim::summarize_collectives; JSON: "collectives") and the job effects
// measured on the run (JSON: "job_effects").
std::string analyze_text(const trace::ImportedRun& run, const trace::TraceDag& dag,
                         const sim::ReplayResult& r, const sim::JobEffects& effects,
                         const std::vector<sim::CollectiveTypeSummary>& collectives);
std::string analyze_json(const trace::ImportedRun& run, const trace::TraceDag& dag,
                         const sim::ReplayResult& r, const sim::JobEffects& effects,
                         const std::vector<sim::CollectiveTypeSummary>& collectives);

// replay: predicted vs measured; JSON has measured_iteration_s, predicted_iteration_s, error
// (signed, relative to measured), measured_breakdown and predicted_breakdown (per rank).
std::string replay_text(const trace::ImportedRun& run, const trace::TraceDag& dag,
                        const sim::ReplayResult& r);
std::string replay_json(const trace::ImportedRun& run, const trace::TraceDag& dag,
                        const sim::ReplayResult& r);

// The simulated run in the Chrome Trace Event (Kineto) layout: one process per rank and one
// for the cross-rank collectives, one thread per DAG resource; times in microseconds.
std::string simulated_timeline(const trace::TraceDag& dag, const sim::ReplayResult& r);

}  // namespace dagsgd::reports
