// A traced run standing for a larger job (ReplayOptions::world): what makes the request sound,
// and the sentence that says what the trace cannot tell at the new scale.
#include <algorithm>
#include <string>
#include <vector>

#include "dagsgd/sim/trace_replay.h"
#include "replay_collectives.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;

std::string scale_note(int traced, const std::vector<int>& gpus) {
  std::string counts;
  std::string each;
  bool one = true;  // every traced rank stands for one GPU
  for (int g : gpus) {
    const int per_rank = traced > 0 ? g / traced : 0;
    counts += (counts.empty() ? "" : ", ") + std::to_string(g);
    each += (each.empty() ? "" : ", ") + std::to_string(per_rank);
    one = one && per_rank == 1;
  }
  return "scaled from " + std::to_string(traced) + " traced rank" + (traced == 1 ? "" : "s") +
         " to " + counts + ": each traced rank's compute stands for " + each + " GPU" +
         (one ? "" : "s") + "; per-rank noise at " + counts + " GPUs is not in the trace";
}

std::string kept_size_summary(const ScaleInfo& s) {
  std::string out;
  for (const auto& [what, count] : s.kept) {
    out += (out.empty() ? "" : ", ") + std::to_string(count) + " " + what;
  }
  return out;
}

Expected<void> check_scale_count(int traced, int gpus, int gpus_per_node) {
  if (gpus < traced || gpus % traced != 0) {
    return Error{std::to_string(gpus) + " GPUs is not a whole multiple of the run's " +
                 std::to_string(traced) + " ranks: each traced rank stands for the same number " +
                 "of GPUs"};
  }
  const int per_node = std::max(1, std::min(gpus, gpus_per_node));
  if (gpus % per_node != 0) {
    return Error{std::to_string(gpus) + " GPUs do not fill whole nodes of " +
                 std::to_string(per_node) + " GPUs (--gpus-per-node)"};
  }
  return model::ok();
}

Expected<void> check_scale(const trace::TraceDag& tdag, const ReplayOptions& options) {
  const int world = options.world;
  const model::Topology traced = run_topology(tdag);
  const int ranks = traced.workers();
  const std::string gpus = std::to_string(world) + " GPUs";
  if (world < 1 || ranks < 1) return Error{"a GPU count must be at least 1"};
  if (options.comm == CommMode::kMeasured) {
    return Error{"the traced durations of the collectives hold for the run's own " +
                 std::to_string(ranks) + " ranks; scaling to " + gpus +
                 " needs modeled communication"};
  }
  if (!options.target) {
    return Error{"scaling a traced run to " + gpus +
                 " prices its collectives on a target "
                 "fabric: give one"};
  }
  if (options.cpus > 0) {
    return Error{
        "the host-CPU model places the traced ranks on their machines; it does not "
        "scale to " +
        gpus};
  }
  const model::Topology& target = *options.target;
  DAGSGD_TRY(check_scale_count(ranks, world, target.gpus_per_node));
  if (target.workers() != world) {
    return Error{"the target has " + std::to_string(target.workers()) + " GPUs, not " +
                 std::to_string(world)};
  }
  int grows = 0;
  for (const auto& c : tdag.collectives) {
    if (!detail::unpriced_reason(tdag, c).empty()) continue;
    auto g = detail::scale_group(traced, target, c);
    if (!g) return g.error();
    if (g->how == detail::GroupScale::kWorld || g->how == detail::GroupScale::kReplica) ++grows;
  }
  if (grows == 0) {
    return Error{"trace '" + tdag.source + "' records no collective that grows with the job " +
                 "(the whole traced world of " + std::to_string(ranks) +
                 " rank(s), or one rank per traced node, with a recorded size), so its " +
                 "exchange at " + gpus + " is unknown"};
  }
  return model::ok();
}

}  // namespace dagsgd::sim
