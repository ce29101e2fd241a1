// What a replay reads off a timeline (measured or simulated): iteration times, per-rank
// breakdowns, the critical path of a typical iteration and the stragglers.
#pragma once

#include <vector>

#include "dagsgd/sim/trace_replay.h"
#include "intervals.h"

namespace dagsgd::sim::detail {

// Simulated iteration times on the main rank.
std::vector<model::Nanos> sim_iterations(const trace::TraceDag& td, const SimResult& r);
// Mean in seconds over iterations [warmup, n).
double mean_s(const std::vector<model::Nanos>& v, int warmup);

// Per rank, per iteration of `windows` (per rank, per iteration): the breakdown on the measured
// timeline (`sim` null) or the simulated one.
std::vector<std::vector<RankTime>> iteration_breakdowns(
    const trace::TraceDag& td, const SimResult* sim,
    const std::vector<std::vector<Interval>>& windows);
// Per-rank mean of iteration_breakdowns over iterations [warmup, n).
std::vector<RankTime> breakdowns(const trace::TraceDag& td, const SimResult* sim,
                                 const std::vector<std::vector<Interval>>& windows, int warmup);

// Fills the critical path of the median simulated iteration after the warm-up, and the bound.
void analyze_critical_path(const trace::TraceDag& td, const std::vector<Interval>& sim_main,
                           ReplayResult& out);

// The last rank to arrive at each joined collective.
std::vector<Straggler> find_stragglers(const trace::TraceDag& td);

}  // namespace dagsgd::sim::detail
