// A scenario's replay (scenario.h): the options that replay a traced run on a target, and a
// replay read as a prediction.
#include <algorithm>
#include <cmath>

#include "dagsgd/model/format.h"
#include "dagsgd/sim/node_type.h"
#include "dagsgd/sim/scenario.h"
#include "given_flags.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;

Expected<void> check_replay_request(const ReplayRequest& r) {
  const HardwareSpec& h = r.hardware;
  const bool scaled = r.gpus > 0 || r.nodes > 0;
  if (scaled && r.measured_comm) {
    return Error{std::string(r.gpus > 0 ? "--gpus" : "--nodes") +
                 ": the traced durations of the collectives hold for the run's own ranks; "
                 "another GPU count needs modeled communication (leave out --comm measured)"};
  }
  if (scaled && h.intra.empty()) {
    return Error{std::string(r.gpus > 0 ? "--gpus" : "--nodes") +
                 " scales the run onto a target fabric: give --intra and --inter"};
  }
  if (h.intra.empty() != h.inter.empty()) {
    return Error{"--intra and --inter go together (the target fabric)"};
  }
  if (h.intra.empty()) {  // the run's own network
    DAGSGD_TRY(detail::refuse_flags(r.given, {"--fabric-file"}, " needs --intra and --inter"));
    DAGSGD_TRY(detail::refuse_flags(
        r.given, {"--gpus-per-node"},
        " lays the run out on a target fabric (--intra/--inter); without one the "
        "run keeps its own layout"));
    DAGSGD_TRY(detail::refuse_flags(
        r.given, {"--algorithm"},
        " applies to a target fabric (--intra/--inter); the run's own calibration "
        "uses the ring formula"));
    DAGSGD_TRY(detail::refuse_flags(r.given, {"--stack"},
                                    " applies to a target fabric (--intra/--inter)"));
    if (!h.topology.empty() || h.network_model == "flow") {
      return Error{
          "--topology and --network-model flow replay onto a target fabric: give --intra and "
          "--inter"};
    }
  } else if (r.measured_comm) {
    return Error{"--comm measured replays the traced network; it takes no target fabric"};
  }
  if (auto known = model::collective_algorithms().check(r.exchange.algorithm); !known) {
    return model::with_context("--algorithm", known.error());
  }
  if (r.ranks_per_machine > 0 && r.cpus == 0) {
    return Error{"--ranks-per-machine needs --cpus (the cores of each machine)"};
  }
  return model::ok();
}

Expected<ReplayOptions> replay_request_options(const trace::TraceDag& dag, const ReplayRequest& r,
                                               const Catalogs& catalogs) {
  DAGSGD_TRY(check_replay_request(r));
  ReplayOptions ro;
  ro.algorithm = r.exchange.algorithm;
  if (!r.hardware.intra.empty()) {  // --gpus-per-node, else as traced
    auto target = replay_target(dag, r.hardware, r.exchange, catalogs,
                                !detail::flag_given(r.given, "--gpus-per-node"), r.gpus, r.nodes);
    if (!target) return target.error();
    ro = std::move(*target);
  }
  ro.comm = r.measured_comm ? CommMode::kMeasured : CommMode::kModeled;
  ro.cpus = r.cpus;
  ro.ranks_per_machine = r.ranks_per_machine;
  return ro;
}

Expected<ReplayOptions> replay_target(const trace::TraceDag& dag, HardwareSpec hardware,
                                      const ExchangeSpec& exchange, const Catalogs& catalogs,
                                      bool as_traced, int gpus, int nodes) {
  const model::Topology traced = run_topology(dag);
  const int ranks = traced.workers();
  if (as_traced) {  // the node type's GPUs to a node, else the run's own
    hardware.gpus_per_node = std::max(traced.gpus_per_node, 1);
    if (!hardware.topology.empty()) {
      auto node = load_node_type(hardware.topology);
      if (!node) return model::with_context("topology", node.error());
      hardware.gpus_per_node = node->gpus_per_node();
    }
  }
  if (nodes > 0) {  // whole nodes of the target's GPUs
    const int of_nodes = nodes * hardware.gpus_per_node;
    if (gpus > 0 && gpus != of_nodes) {
      return Error{"--gpus " + std::to_string(gpus) + " and --nodes " + std::to_string(nodes) +
                   " disagree: " + std::to_string(nodes) + " nodes of " +
                   std::to_string(hardware.gpus_per_node) + " GPUs are " +
                   std::to_string(of_nodes)};
    }
    gpus = of_nodes;
  }
  const bool scaled = gpus > 0 && gpus != ranks;
  const int world = scaled ? gpus : ranks;
  const std::string flag = "--gpus " + std::to_string(world) + ": ";
  if (scaled) {
    if (auto ok = check_scale_count(ranks, world, hardware.gpus_per_node); !ok) {
      return Error{flag + ok.error().message};
    }
  } else if (ranks % hardware.gpus_per_node != 0 && hardware.gpus_per_node <= ranks) {
    return Error{"GPUs per node: " + std::to_string(hardware.gpus_per_node) +
                 " does not divide the " + std::to_string(ranks) + " ranks of the run"};
  }
  hardware.gpus_per_node = std::min(hardware.gpus_per_node, world);
  hardware.nodes = world / std::max(hardware.gpus_per_node, 1);
  auto s = resolve_scenario(hardware, exchange, catalogs);
  if (!s) return s.error();
  ReplayOptions ro = replay_options(*s);
  if (scaled) {
    ro.world = world;
    if (auto ok = check_scale(dag, ro); !ok) return Error{flag + ok.error().message};
    return ro;
  }
  if (as_traced) {
    ro.target->nodes = 0;
    ro.target->gpus_per_node = 0;
  }
  return ro;
}

ReplayOptions replay_options(const Scenario& s) {
  ReplayOptions ro;
  ro.comm = CommMode::kModeled;
  ro.algorithm = s.exchange.algorithm;
  ro.target = s.hardware.topology();
  ro.stack = s.exchange.stack;
  ro.cluster = s.hardware.cluster;
  return ro;
}

// ---------------------------------------------------------------------------------------------
// A replay as a prediction

PredictResult replay_as_prediction(const trace::TraceDag& tdag, const ReplayResult& r, int batch,
                                   bool keep_timeline, int workers) {
  using model::Nanos;
  auto scaled_ns = [](double seconds, double relative_change) {
    return static_cast<Nanos>(std::llround(seconds * (1.0 + relative_change) * 1e9));
  };
  PredictResult p;
  p.workers = workers > 0 ? workers : tdag.ranks;
  p.iteration = scaled_ns(r.predicted_mean_s, 0.0);
  p.if_comm_free = scaled_ns(r.predicted_mean_s, r.if_comm_free);
  p.if_double_bandwidth = scaled_ns(r.predicted_mean_s, r.if_double_network);
  p.single_gpu_iteration = p.if_comm_free;
  if (p.iteration > 0) {
    p.throughput = static_cast<double>(batch) * p.workers / model::to_seconds(p.iteration);
    p.speedup = static_cast<double>(p.workers) * static_cast<double>(p.single_gpu_iteration) /
                static_cast<double>(p.iteration);
    p.efficiency = p.speedup / p.workers;
  }
  for (const auto& rt : r.predicted_ranks) {
    if (rt.rank != tdag.main_rank) continue;
    p.breakdown.forward = rt.compute;
    p.breakdown.comm_total = rt.comm_total;
    p.breakdown.comm_exposed = rt.comm_exposed;
    p.breakdown.h2d = rt.memcpy;
    p.breakdown.idle = rt.idle + rt.host;
  }
  for (const auto& ps : r.critical_path) p.critical_path.push_back({ps.what, ps.time});
  p.critical_path_tasks = r.critical_path_length;
  p.algorithm = r.comm.algorithm;
  p.tasks = tdag.dag.task_count();
  p.events = r.sim.events;
  const double exposed = p.iteration > 0 ? static_cast<double>(p.breakdown.comm_exposed) /
                                               static_cast<double>(p.iteration)
                                         : 0.0;
  p.bound = p.workers > 1 && exposed >= 0.25 ? "communication-bound" : r.bound;
  p.bottleneck = p.bound + ": " + model::percent(exposed) +
                 " of the iteration is exposed communication (" + p.algorithm +
                 "); free communication would be " +
                 model::times_faster(p.iteration, p.if_comm_free) + ", twice the bandwidth " +
                 model::times_faster(p.iteration, p.if_double_bandwidth);
  if (const std::string kept = unpriced_summary(r); !kept.empty()) {
    p.bottleneck += "; kept at their traced durations, the model cannot price them: " + kept;
  }
  if (const std::string kept = kept_size_summary(r.scale); !kept.empty()) {
    p.bottleneck += "; kept at their traced group size: " + kept;
  }
  if (keep_timeline && !tdag.boundary_task.empty() && tdag.end_task != model::kNoTask) {
    const Nanos ws = r.sim.start[static_cast<std::size_t>(tdag.boundary_task.back())];
    const Nanos we = r.sim.finish[static_cast<std::size_t>(tdag.end_task)];
    for (std::size_t i = 0; i < tdag.dag.task_count(); ++i) {
      const Nanos s = r.sim.start[i];
      const Nanos f = r.sim.finish[i];
      if (f <= ws || s >= we || f <= s) continue;
      const model::Task& t = tdag.dag.task(static_cast<model::TaskId>(i));
      p.timeline.push_back({t.worker, t.kind, t.layer, s - ws, f - s});
    }
  }
  return p;
}

}  // namespace dagsgd::sim
