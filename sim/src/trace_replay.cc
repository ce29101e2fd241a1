// Replay of a traced run on the discrete-event engine: its DAG with the collectives priced by
// the chosen communication model (replay_comm.h), optionally on modeled host CPUs, and what the
// simulated timeline says (replay_analysis.h).
#include "dagsgd/sim/trace_replay.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <memory>
#include <set>

#include "dagsgd/sim/flow_network.h"
#include "dagsgd/sim/host_cpu.h"
#include "dagsgd/trace/manifest.h"
#include "replay_analysis.h"
#include "replay_comm.h"

namespace dagsgd::sim {

using model::Nanos;
using model::TaskKind;
using trace::TraceDag;

namespace {

// A rank's measured iterations: between its own boundaries, or the main rank's when it has none.
std::vector<Interval> measured_windows(const trace::TraceDag& td, int r) {
  auto ru = static_cast<std::size_t>(r);
  const auto& b = td.rank_bounds[ru].size() >= 2 ? td.rank_bounds[ru] : td.rank_bounds[0];
  std::vector<Interval> w;
  for (std::size_t k = 0; k + 1 < b.size(); ++k) w.push_back({b[k], b[k + 1]});
  return w;
}

std::vector<std::vector<Interval>> every_rank_windows(const trace::TraceDag& td) {
  std::vector<std::vector<Interval>> mw(static_cast<std::size_t>(td.ranks));
  for (int r = 0; r < td.ranks; ++r) mw[static_cast<std::size_t>(r)] = measured_windows(td, r);
  return mw;
}

// The DAG with every rank's computation on its machine's cores (ReplayOptions::cpus).
model::Expected<model::Dag> host_cpu_dag(const TraceDag& td, const ReplayOptions& o,
                                         CpuModelInfo& info) {
  if (td.mode != trace::TraceMode::kSsgd) {
    return model::Error{
        "host-CPU model: it applies to `dagsgd train` runs, whose computation runs on the CPU; "
        "this trace's computation runs on GPUs"};
  }
  const auto n = static_cast<std::size_t>(td.ranks);
  if (td.machines.size() != n || td.cpus.size() != n) {
    std::string manifest = trace::find_manifest(td.source);
    return model::Error{"host-CPU model: '" + (manifest.empty() ? td.source : manifest) +
                        "' does not say which ranks shared a machine and how many "
                        "CPUs each had ('machines', 'cpus'); record the run again with this "
                        "version of dagsgd train"};
  }
  if (o.ranks_per_machine < 0) {
    return model::Error{"host-CPU model: ranks per machine must be at least 1"};
  }
  // Traced placement: ranks grouped by machine; a machine's cores are the fewest any of its
  // ranks could use.
  HostPlacement traced;
  std::map<std::string, int> index;
  for (std::size_t r = 0; r < n; ++r) {
    auto [it, fresh] = index.emplace(td.machines[r], static_cast<int>(index.size()));
    if (fresh) traced.host_cores.push_back(td.cpus[r]);
    auto& cores = traced.host_cores[static_cast<std::size_t>(it->second)];
    cores = std::min(cores, td.cpus[r]);
    traced.worker_host.push_back(it->second);
  }
  HostPlacement target;
  if (o.ranks_per_machine > 0) {
    for (std::size_t r = 0; r < n; ++r) {
      target.worker_host.push_back(static_cast<int>(r) / o.ranks_per_machine);
    }
  } else {
    target.worker_host = traced.worker_host;
  }
  const int target_machines =
      *std::max_element(target.worker_host.begin(), target.worker_host.end()) + 1;
  target.host_cores.assign(static_cast<std::size_t>(target_machines), o.cpus);
  std::vector<double> scale(td.dag.task_count(), 0.0);
  for (std::size_t id = 0; id < td.dag.task_count(); ++id) {
    const auto& t = td.dag.task(static_cast<model::TaskId>(id));
    if (td.tasks[id].rank < 0 || t.worker < 0 || t.kind == TaskKind::kComm) continue;
    scale[id] =
        1.0 / oversubscription(traced, traced.worker_host[static_cast<std::size_t>(t.worker)]);
  }
  info.modeled = true;
  info.traced_machines = static_cast<int>(traced.host_cores.size());
  info.machines = static_cast<int>(target.host_cores.size());
  info.cpus = o.cpus;
  for (int h = 0; h < info.traced_machines; ++h) {
    info.traced_oversubscription =
        std::max(info.traced_oversubscription, oversubscription(traced, h));
  }
  for (int h = 0; h < info.machines; ++h) {
    info.oversubscription = std::max(info.oversubscription, oversubscription(target, h));
  }
  return share_host_cpus(td.dag, target, scale);
}

// The resources of the tasks simulate_scaled may put on the flow tier's concurrent resource, as
// the DAG had them: a run without the flow tier gives them back.
struct CollectiveResources {
  std::vector<model::ResourceId> task;
  std::vector<model::ResourceId> spread;
  explicit CollectiveResources(const TraceDag& td, const model::Dag& dag) {
    for (const auto& c : td.collectives) {
      task.push_back(dag.task(c.task).resource);
      spread.push_back(c.spread_task != model::kNoTask ? dag.task(c.spread_task).resource : 0);
    }
  }
};

// `dag` (the replay's one working copy: its collectives' durations and resources are set here on
// every run, nothing else changes) with the collectives' parts set to `times` scaled by
// `comm_scale` (0: free communication), simulated; under the flow-level tier the collectives'
// transfers run on `network` (with its links `1 / comm_scale` as fast), on a resource where they
// progress together.
model::Expected<SimResult> simulate_scaled(const TraceDag& td, model::Dag& dag,
                                           const CollectiveResources& resources,
                                           const detail::CollectiveTimes& times, double comm_scale,
                                           const ReplayOptions& options, Engine& engine,
                                           std::unique_ptr<FlowNetwork>* network = nullptr) {
  auto scaled = [comm_scale](Nanos d) {
    return static_cast<Nanos>(std::llround(static_cast<double>(d) * comm_scale));
  };
  std::unique_ptr<FlowNetwork> net;
  if (comm_scale > 0 && !times.flows.empty()) {
    net = std::make_unique<FlowNetwork>(options.cluster, 1.0 / comm_scale);
    net->set_serial_peers(options.stack && options.stack->library.peer_transfers == "serial");
  }
  for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
    const auto& c = td.collectives[ci];
    const auto& p = times.phases[ci];
    dag.mutable_task(c.task).duration = scaled(p.body);
    dag.mutable_task(c.task).resource = resources.task[ci];
    if (c.spread_task != model::kNoTask) {
      dag.mutable_task(c.spread_task).resource = resources.spread[ci];
    }
    if (c.startup_task != model::kNoTask) {
      dag.mutable_task(c.startup_task).duration = scaled(p.startup);
    }
    if (times.modeled_tails[ci]) {
      for (model::TaskId t : c.rank_tails) {
        if (t != model::kNoTask) dag.mutable_task(t).duration = scaled(p.tail);
      }
    }
    if (net && times.flows[ci].pattern) {
      model::FlowPlan plan = times.flows[ci];
      for (auto& a : plan.amounts) a.fixed *= comm_scale;
      dag.mutable_task(c.task).resource = td.concurrent_resource;
      net->assign(c.task, std::move(plan));
      if (times.spread_flows[ci].pattern) {
        model::FlowPlan rest = times.spread_flows[ci];
        for (auto& a : rest.amounts) a.fixed *= comm_scale;
        dag.mutable_task(c.spread_task).resource = td.concurrent_resource;
        net->assign(c.spread_task, std::move(rest));
      }
    }
  }
  SimResult r;
  auto status = engine.run(dag, r, net.get());
  if (!status.ok()) return status.error();
  if (network != nullptr) *network = std::move(net);
  return r;
}
}  // namespace

const char* comm_source_name(CommSource s) {
  static constexpr const char* kNames[] = {"measured", "run", "fabric"};  // enum order
  const auto i = static_cast<std::size_t>(s);
  return i < std::size(kNames) ? kNames[i] : "";
}

std::vector<RankTime> measured_rank_times(const trace::TraceDag& td) {
  return detail::breakdowns(td, nullptr, every_rank_windows(td), td.warmup);
}

std::vector<std::vector<RankTime>> measured_iteration_times(const trace::TraceDag& td) {
  return detail::iteration_breakdowns(td, nullptr, every_rank_windows(td));
}

model::Topology run_topology(const TraceDag& tdag) {
  model::Topology t;
  int p = std::max(1, tdag.ranks);
  for (const auto& c : tdag.collectives) p = std::max(p, c.ranks);
  int nodes = 1;
  if (!tdag.hosts.empty()) {
    std::set<std::string> hosts(tdag.hosts.begin(), tdag.hosts.end());
    nodes = static_cast<int>(hosts.size());
  } else if (p > 8) {
    nodes = (p + 7) / 8;
  }
  t.nodes = nodes;
  t.gpus_per_node = std::max(1, p / nodes);
  return t;
}

std::string unpriced_summary(const ReplayResult& r) {
  std::string out;
  for (const auto& [reason, count] : r.unpriced_collectives) {
    out += (out.empty() ? "" : ", ") + std::to_string(count) + " " + reason;
  }
  return out;
}

model::Expected<ReplayResult> replay_trace(const TraceDag& td, const ReplayOptions& options) {
  ReplayResult out;
  out.warmup = td.warmup;
  out.measured_iteration = td.measured_iteration;

  if (options.world > 0) DAGSGD_TRY(check_scale(td, options));
  auto comm = detail::choose_comm_model(td, options);
  if (!comm) return comm.error();
  out.comm = std::move(*comm);
  auto times = detail::collective_times(td, options, out.comm);
  if (!times) return times.error();
  out.modeled_collectives = times->modeled;
  out.measured_collectives = times->measured;
  out.unpriced_collectives.assign(times->unpriced.begin(), times->unpriced.end());
  if (times->used_measured_curves) out.comm.algorithm = model::kMeasuredAlgorithm;
  if (options.world > 0) {
    out.scale.traced = run_topology(td).workers();
    out.scale.gpus = options.world;
    out.scale.grown = times->grown;
    out.scale.node_local = times->node_local;
    out.scale.kept.assign(times->kept.begin(), times->kept.end());
    out.scale.note = scale_note(out.scale.traced, {out.scale.gpus});
  }

  // One working copy of the DAG for the three runs (the trace's own, or the host-CPU one).
  model::Dag base_dag;
  if (options.cpus > 0) {
    auto cpu = host_cpu_dag(td, options, out.cpu);
    if (!cpu) return cpu.error();
    base_dag = std::move(*cpu);
  } else if (options.ranks_per_machine != 0) {
    return model::Error{"ranks per machine on the target need the cores of each machine"};
  } else {
    base_dag = td.dag;
  }
  const CollectiveResources resources(td, base_dag);
  if (options.cluster && !options.target) {
    return model::Error{"the flow-level tier replays onto a target fabric (give one)"};
  }
  std::unique_ptr<FlowNetwork> network;
  // One engine for the three runs: it keeps its tables, which are large for a large trace.
  Engine engine;
  auto base_sim = simulate_scaled(td, base_dag, resources, *times, 1.0, options, engine, &network);
  if (!base_sim) return base_sim.error();
  out.sim = std::move(*base_sim);
  out.predicted_iteration = detail::sim_iterations(td, out.sim);
  out.measured_mean_s = detail::mean_s(out.measured_iteration, out.warmup);
  out.predicted_mean_s = detail::mean_s(out.predicted_iteration, out.warmup);
  out.error = out.measured_mean_s > 0
                  ? (out.predicted_mean_s - out.measured_mean_s) / out.measured_mean_s
                  : 0;
  for (double scale : {0.0, 0.5}) {
    auto s = simulate_scaled(td, base_dag, resources, *times, scale, options, engine);
    if (!s) return s.error();
    double m = detail::mean_s(detail::sim_iterations(td, *s), out.warmup);
    double rel = out.predicted_mean_s > 0 ? (m - out.predicted_mean_s) / out.predicted_mean_s : 0;
    (scale == 0.0 ? out.if_comm_free : out.if_double_network) = rel;
  }

  // Breakdowns: measured windows per rank; simulated windows from the main rank's boundaries.
  std::vector<Interval> sim_main;
  for (std::size_t k = 0; k < td.boundary_task.size(); ++k) {
    const Nanos s = out.sim.start[static_cast<std::size_t>(td.boundary_task[k])];
    sim_main.push_back({s, s + out.predicted_iteration[k]});
  }
  const std::vector<std::vector<Interval>> sw(static_cast<std::size_t>(td.ranks), sim_main);
  out.measured_ranks = detail::breakdowns(td, nullptr, every_rank_windows(td), out.warmup);
  out.predicted_ranks = detail::breakdowns(td, &out.sim, sw, out.warmup);
  detail::analyze_critical_path(td, sim_main, out);
  if (network) {
    out.network_model = "flow";
    if (!sim_main.empty()) {
      const auto [from, to] = sim_main[static_cast<std::size_t>(out.critical_path_iteration)];
      out.busiest_links =
          busiest_links(*network, static_cast<double>(from), static_cast<double>(to));
    }
  }
  out.stragglers = detail::find_stragglers(td);
  return out;
}

}  // namespace dagsgd::sim
