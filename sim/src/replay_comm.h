// How a replay prices the traced collectives: which communication model (measured, fitted to
// the run, or a target fabric's) and the duration of each collective's parts under it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dagsgd/model/collective_flows.h"
#include "dagsgd/model/comm_model.h"
#include "dagsgd/sim/trace_replay.h"

namespace dagsgd::sim::detail {

// The model a replay uses: source, algorithm and topology (for kRun, the fitted link).
model::Expected<CommModelInfo> choose_comm_model(const trace::TraceDag& td,
                                                 const ReplayOptions& options);

// Per collective, its startup, body and tail under `info`'s model; measured collectives keep
// their measured time as the body.
struct CollectiveTimes {
  std::vector<model::CollectivePhases> phases;
  // Flow-level tier: per collective, its transfers (pattern null: not a flow task), fitted to a
  // measured curve where one prices it (sim::fit_plan_to).
  std::vector<model::FlowPlan> flows;
  // A rooted algorithm's later phases (the broadcast), on the collective's spread task, which
  // every rank but the root waits for (pattern null: none).
  std::vector<model::FlowPlan> spread_flows;
  std::vector<bool> modeled_tails;  // the per-rank lag tasks take the modeled tail
  int modeled = 0;
  int measured = 0;
  // Collectives a modeled replay kept measured because the model cannot price them, by reason
  // (replay_collectives.h's unpriced_reason).
  std::map<std::string, int> unpriced;
  bool used_measured_curves = false;  // a fabric's measured latencies priced some
  // Scaled to ReplayOptions::world: the priced collectives by how their group scaled, the kept
  // ones by "allreduce of 3 ranks".
  int grown = 0;
  int node_local = 0;
  std::map<std::string, int> kept;
};
model::Expected<CollectiveTimes> collective_times(const trace::TraceDag& td,
                                                  const ReplayOptions& options,
                                                  const CommModelInfo& info);

}  // namespace dagsgd::sim::detail
