// Replay of a traced run on the discrete-event engine, with the communication model calibrated
// from the run's own collectives (or a target fabric), and the analysis of the result.
#include "dagsgd/sim/trace_replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "dagsgd/model/calibration.h"
#include "dagsgd/sim/host_cpu.h"
#include "intervals.h"

namespace dagsgd::sim {

using model::Nanos;
using model::TaskId;
using model::TaskKind;
using trace::TraceDag;

namespace {

enum class Cls { kCompute, kComm, kMemcpy, kHost };

Cls class_of(const TraceDag& td, TaskId id) {
  switch (td.dag.task(id).kind) {
    case TaskKind::kMemcpy:
      return Cls::kMemcpy;
    case TaskKind::kH2D:
      return td.mode == "kineto" ? Cls::kMemcpy : Cls::kCompute;
    case TaskKind::kOther:
      return Cls::kHost;
    case TaskKind::kComm:
      return Cls::kComm;
    default:
      return Cls::kCompute;
  }
}

// Per-rank mean breakdown over iterations [warmup, n), on the measured or simulated timeline.
std::vector<RankTime> breakdowns(const TraceDag& td, const SimResult* sim,
                                 const std::vector<std::vector<Interval>>& windows, int warmup) {
  const int nr = td.ranks;
  std::vector<std::vector<std::pair<Cls, Interval>>> per_rank(static_cast<std::size_t>(nr));
  for (TaskId t = 0; t < static_cast<TaskId>(td.tasks.size()); ++t) {
    const auto& info = td.tasks[static_cast<std::size_t>(t)];
    if (info.rank < 0 || info.collective >= 0) continue;
    if (info.gap && !info.in_op) continue;  // nothing recorded runs: idle
    Interval iv = sim ? Interval{sim->start[static_cast<std::size_t>(t)],
                                 sim->finish[static_cast<std::size_t>(t)]}
                      : Interval{info.measured_start, info.measured_start + info.measured_dur};
    per_rank[static_cast<std::size_t>(info.rank)].push_back({class_of(td, t), iv});
  }
  for (const auto& c : td.collectives) {
    for (int r = 0; r < nr; ++r) {
      auto ru = static_cast<std::size_t>(r);
      if (c.span_end[ru] < 0) continue;
      Interval iv{c.span_start[ru], c.span_end[ru]};
      if (sim) {
        auto ti = static_cast<std::size_t>(c.task);
        iv = {sim->start[ti], sim->finish[ti]};
      }
      per_rank[ru].push_back({Cls::kComm, iv});
    }
  }
  std::vector<RankTime> out;
  for (int r = 0; r < nr; ++r) {
    RankTime sum;
    sum.rank = r;
    const auto& w = windows[static_cast<std::size_t>(r)];
    int n = 0;
    for (std::size_t k = static_cast<std::size_t>(warmup); k < w.size(); ++k) {
      auto [lo, hi] = w[k];
      std::vector<Interval> cls[4];
      std::vector<Interval> all;
      for (const auto& [c, iv] : per_rank[static_cast<std::size_t>(r)]) {
        Interval x{std::max(iv.first, lo), std::min(iv.second, hi)};
        if (x.second <= x.first) continue;
        cls[static_cast<int>(c)].push_back(x);
        all.push_back(x);
      }
      auto compute = merge(cls[0]);
      auto comm = merge(cls[1]);
      sum.window += hi - lo;
      sum.compute += length(compute);
      sum.comm_total += length(comm);
      Nanos ov = length_and(comm, compute);
      sum.overlap += ov;
      sum.comm_exposed += length(comm) - ov;
      sum.memcpy += length(merge(cls[2]));
      sum.host += length(merge(cls[3]));
      sum.idle += (hi - lo) - length(merge(all));
      ++n;
    }
    if (n > 0) {
      for (Nanos* f : {&sum.window, &sum.compute, &sum.comm_total, &sum.comm_exposed, &sum.overlap,
                       &sum.memcpy, &sum.host, &sum.idle}) {
        *f /= n;
      }
    }
    out.push_back(sum);
  }
  return out;
}

std::vector<Nanos> sim_iterations(const TraceDag& td, const SimResult& r) {
  std::vector<Nanos> out;
  const auto& b = td.boundary_task;
  for (std::size_t k = 0; k < b.size(); ++k) {
    Nanos s = r.start[static_cast<std::size_t>(b[k])];
    Nanos e = k + 1 < b.size() ? r.start[static_cast<std::size_t>(b[k + 1])]
                               : r.finish[static_cast<std::size_t>(td.end_task)];
    out.push_back(e - s);
  }
  return out;
}

double mean_s(const std::vector<Nanos>& v, int warmup) {
  double s = 0;
  int n = 0;
  for (std::size_t k = static_cast<std::size_t>(warmup); k < v.size(); ++k) {
    s += static_cast<double>(v[k]);
    ++n;
  }
  return n > 0 ? s / n * 1e-9 : 0;
}

bool modelable(const std::string& name) {
  return name == "allreduce" || name == "broadcast" || name == "bcast" || name == "allgather" ||
         name == "reduce_scatter" || name == "reducescatter" || name == "reduce";
}

// Allreduce moves twice what the one-phase collectives move.
double traffic_factor(const std::string& name) { return name == "allreduce" ? 1.0 : 0.5; }

std::string trace_algorithm(const trace::ImportedRun& run) {
  for (const auto& r : run.ranks) {
    for (const auto& e : r.events) {
      if (e.category != trace::EventCategory::kKernel) continue;
      const std::string& n = r.str(e.name);
      if (n.find("nccl") == std::string::npos) continue;
      if (n.find("_RING_") != std::string::npos) return "ring";
      if (n.find("_TREE_") != std::string::npos) return "tree";
    }
  }
  return "";
}

// The DAG with every rank's computation on its machine's cores (ReplayOptions::cpus).
model::Expected<model::Dag> host_cpu_dag(const TraceDag& td, const trace::ImportedRun& run,
                                         const ReplayOptions& o, CpuModelInfo& info) {
  if (td.mode != "ssgd") {
    return model::Error{
        "--cpus models the host CPUs of `dagsgd train` runs, whose computation runs on the "
        "CPU; this trace's computation runs on GPUs"};
  }
  const auto n = static_cast<std::size_t>(td.ranks);
  const auto& m = run.manifest;
  if (!m || m->machines.size() != n || m->cpus.size() != n) {
    return model::Error{"--cpus: " +
                        (m ? "'" + run.path + "/manifest.json' does not say"
                           : std::string("the run has no manifest to say")) +
                        " which ranks shared a machine and how many CPUs each had ('machines', "
                        "'cpus'); record the run again with this version of dagsgd train"};
  }
  if (o.ranks_per_machine < 0) return model::Error{"--ranks-per-machine must be >= 1"};
  // Traced placement: ranks grouped by machine; a machine's cores are the fewest any of its
  // ranks could use.
  HostPlacement traced;
  std::map<std::string, int> index;
  for (std::size_t r = 0; r < n; ++r) {
    auto [it, fresh] = index.emplace(m->machines[r], static_cast<int>(index.size()));
    if (fresh) traced.host_cores.push_back(m->cpus[r]);
    auto& cores = traced.host_cores[static_cast<std::size_t>(it->second)];
    cores = std::min(cores, m->cpus[r]);
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
  return with_host_cpus(td.dag, target, scale);
}

}  // namespace

model::Topology run_topology(const trace::ImportedRun& run, const TraceDag& tdag) {
  model::Topology t;
  int p = std::max(1, tdag.ranks);
  for (const auto& c : tdag.collectives) p = std::max(p, c.ranks);
  int nodes = 1;
  if (run.manifest && !run.manifest->hosts.empty()) {
    std::set<std::string> hosts(run.manifest->hosts.begin(), run.manifest->hosts.end());
    nodes = static_cast<int>(hosts.size());
  } else if (p > 8) {
    nodes = (p + 7) / 8;
  }
  t.nodes = nodes;
  t.gpus_per_node = std::max(1, p / nodes);
  return t;
}

model::Expected<ReplayResult> replay_trace(const TraceDag& td, const trace::ImportedRun& run,
                                           const ReplayOptions& options) {
  ReplayResult out;
  out.warmup = td.warmup;
  out.measured_iteration = td.measured_iteration;

  // The communication model.
  model::Topology base = run_topology(run, td);
  std::string algorithm = options.algorithm;
  if (algorithm == "auto") {
    // What the trace says (NCCL's kernel names), unless the target fabric carries measured
    // latencies: those already are what the library does there.
    std::string said = trace_algorithm(run);
    if (!said.empty() && options.target && options.target->intra.measured.empty() &&
        options.target->inter.measured.empty()) {
      algorithm = said;
    }
  }
  out.comm.topology = base;
  std::map<int, std::unique_ptr<model::CommModel>> models;  // by group size
  auto model_for = [&](int p) -> model::Expected<model::CommModel*> {
    auto it = models.find(p);
    if (it != models.end()) return it->second.get();
    model::Topology topo = out.comm.topology;
    if (p != topo.workers()) {
      topo.nodes = std::max(1, p / std::max(1, topo.gpus_per_node));
      topo.gpus_per_node = std::max(1, p / topo.nodes);
    }
    model::ExchangeConfig cfg;
    cfg.algorithm = out.comm.algorithm;
    auto m = model::make_comm_model(topo, cfg);
    if (!m) return m.error();
    auto* raw = m->get();
    models.emplace(p, std::move(*m));
    return raw;
  };
  if (options.comm == CommMode::kMeasured) {
    out.comm.source = "measured";
    out.comm.algorithm = "as traced";
  } else if (options.target) {
    out.comm.source = "fabric";
    out.comm.algorithm = algorithm;
    out.comm.topology.intra = options.target->intra;
    out.comm.topology.inter = options.target->inter;
    if (options.target->nodes > 0 && options.target->gpus_per_node > 0) {
      out.comm.topology.nodes = options.target->nodes;
      out.comm.topology.gpus_per_node = options.target->gpus_per_node;
    }
  } else {
    // Fit alpha/beta under the ring formula to the run's own allreduces.
    out.comm.source = "run";
    out.comm.algorithm = "ring";
    std::map<int, int> p_count;
    for (const auto& c : td.collectives) {
      if (c.name == "allreduce" && c.bytes > 0 && c.measured > 0 && c.ranks > 1) p_count[c.ranks]++;
    }
    int p = 0;
    int best = 0;
    for (const auto& [pp, n] : p_count) {
      if (n > best) {
        best = n;
        p = pp;
      }
    }
    model::LinkCost link;
    if (p > 1) {
      std::vector<model::TimingPoint> pts;
      std::set<model::Bytes> sizes;
      double total = 0;
      double weight = 0;  // sum of the ring's per-byte factor times the bytes
      const double pd = p;
      for (const auto& c : td.collectives) {
        if (c.name == "allreduce" && c.bytes > 0 && c.ranks == p) {
          total += static_cast<double>(c.measured);
          weight += 2.0 * (pd - 1) / pd * static_cast<double>(c.bytes);
          if (c.measured > 0) pts.push_back({c.bytes, static_cast<double>(c.measured)});
          sizes.insert(c.bytes);
        }
      }
      out.comm.points = static_cast<int>(pts.size());
      model::CalibrationOptions co;
      co.algorithm = out.comm.algorithm;
      co.ranks = p;
      co.fit_step = false;
      bool fitted = false;
      if (sizes.size() >= 3 && pts.size() >= 3) {
        auto fit = model::calibrate_allreduce(pts, co);
        if (fit) {
          // Keep the per-message fit only if it also explains the run's total communication
          // time (a fit on relative error can follow the many small messages and miss it).
          double sum = 0;
          for (const auto& c : td.collectives) {
            if (c.name == "allreduce" && c.bytes > 0 && c.ranks == p) {
              sum += 2.0 * (pd - 1) * fit->link.alpha_ns + 2.0 * (pd - 1) / pd *
                                                               static_cast<double>(c.bytes) *
                                                               fit->link.beta_ns_per_byte;
            }
          }
          if (total > 0 && std::abs(sum - total) / total < 0.05) {
            link = fit->link;
            out.comm.rms_relative = fit->rms_relative;
            fitted = true;
            out.comm.note = "alpha-beta fit to " + std::to_string(pts.size()) + " allreduces";
          }
        }
      }
      if (!fitted && td.mode == "ssgd" && total > 0) {
        // Our runtime observes completions only at progress calls and the wait, so single
        // service times are not measurable; the per-iteration exposed tail is. Fit the
        // bandwidth so that the serialized collectives, started at their measured arrivals,
        // complete when the last of each iteration was measured to complete.
        auto err = [&](double beta) {
          double e = 0;
          Nanos prev = INT64_MIN;
          for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
            const auto& c = td.collectives[ci];
            if (c.completed < 0) continue;
            Nanos arrive = *std::max_element(c.arrive.begin(), c.arrive.end());
            Nanos start = std::max(arrive, prev);
            double t = c.name == "allreduce" && c.bytes > 0
                           ? 2.0 * (pd - 1) / pd * static_cast<double>(c.bytes) * beta
                           : static_cast<double>(c.measured);
            prev = start + static_cast<Nanos>(std::llround(t));
            bool last =
                ci + 1 == td.collectives.size() || td.collectives[ci + 1].iteration != c.iteration;
            if (last) e += static_cast<double>(prev - c.completed);
          }
          return e;
        };
        double lo = 0;
        double hi = 1;
        while (err(hi) < 0 && hi < 1e6) hi *= 2;
        if (err(lo) < 0 && err(hi) >= 0) {
          for (int k = 0; k < 100; ++k) {
            double mid = 0.5 * (lo + hi);
            (err(mid) < 0 ? lo : hi) = mid;
          }
          link.beta_ns_per_byte = 0.5 * (lo + hi);
          fitted = true;
          out.comm.note = std::string("bandwidth fit to the measured completion of the last ") +
                          "collective of each iteration (" + std::to_string(out.comm.points) +
                          " allreduces)";
        }
      }
      if (!fitted && weight > 0) {
        // The effective bandwidth that reproduces the run's total service time.
        link.beta_ns_per_byte = total / weight;
        out.comm.note = "effective-bandwidth fit to the total of " +
                        std::to_string(out.comm.points) + " allreduces (" +
                        std::to_string(sizes.size()) + " size(s))";
      }
    } else {
      out.comm.note = "no allreduce with a size and all ranks present: measured durations kept";
    }
    out.comm.topology.intra = link;
    out.comm.topology.inter = link;
  }

  // Durations of the collectives under the model.
  std::vector<model::CollectivePhases> coll_dur(td.collectives.size());
  std::vector<bool> modeled_tails(td.collectives.size(), false);
  for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
    const auto& c = td.collectives[ci];
    coll_dur[ci] = {0, c.measured, 0};
    bool can = options.comm == CommMode::kModeled && c.bytes > 0 && modelable(c.name) &&
               c.ranks > 1 && (c.joined || options.target || out.comm.source == "run") &&
               !(out.comm.source == "run" && out.comm.topology.intra.beta_ns_per_byte <= 0);
    if (!can) {
      ++out.measured_collectives;
      continue;
    }
    auto m = model_for(c.ranks);
    if (!m) return m.error();
    auto elements =
        static_cast<std::int64_t>(static_cast<double>(c.bytes) / 4.0 * traffic_factor(c.name));
    coll_dur[ci] = (*m)->phases(std::max<std::int64_t>(1, elements));
    if ((*m)->algorithm_for(elements) == model::kMeasuredAlgorithm) {
      out.comm.algorithm = model::kMeasuredAlgorithm;  // the fabric's measured latencies
    }
    // Onto a target fabric, the modeled parts replace the measured ones, the ranks' lags
    // included. The run's own fit keeps the measured lags and serializes whole collectives (it
    // was fitted so), and Kineto traces have no startup or tail tasks: there the whole time is
    // the join's.
    if (c.startup_task != model::kNoTask && out.comm.source == "fabric") {
      modeled_tails[ci] = true;
    } else {
      coll_dur[ci] = {0, coll_dur[ci].total(), 0};
    }
    ++out.modeled_collectives;
  }

  model::Dag base_dag = td.dag;
  if (options.cpus > 0) {
    auto cpu = host_cpu_dag(td, run, options, out.cpu);
    if (!cpu) return cpu.error();
    base_dag = std::move(*cpu);
  } else if (options.ranks_per_machine != 0) {
    return model::Error{"--ranks-per-machine needs --cpus (the cores of each machine)"};
  }
  auto run_with = [&](double comm_scale) -> model::Expected<SimResult> {
    model::Dag dag = base_dag;
    auto scaled = [comm_scale](Nanos d) {
      return static_cast<Nanos>(std::llround(static_cast<double>(d) * comm_scale));
    };
    for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
      const auto& c = td.collectives[ci];
      dag.mutable_task(c.task).duration = scaled(coll_dur[ci].body);
      if (c.startup_task != model::kNoTask) {
        dag.mutable_task(c.startup_task).duration = scaled(coll_dur[ci].startup);
      }
      if (modeled_tails[ci]) {
        for (model::TaskId t : c.rank_tails) {
          if (t != model::kNoTask) dag.mutable_task(t).duration = scaled(coll_dur[ci].tail);
        }
      }
    }
    return simulate(dag);
  };
  auto base_sim = run_with(1.0);
  if (!base_sim) return base_sim.error();
  out.sim = std::move(*base_sim);
  out.predicted_iteration = sim_iterations(td, out.sim);
  out.measured_mean_s = mean_s(out.measured_iteration, out.warmup);
  out.predicted_mean_s = mean_s(out.predicted_iteration, out.warmup);
  out.error = out.measured_mean_s > 0
                  ? (out.predicted_mean_s - out.measured_mean_s) / out.measured_mean_s
                  : 0;
  for (double scale : {0.0, 0.5}) {
    auto s = run_with(scale);
    if (!s) return s.error();
    double m = mean_s(sim_iterations(td, *s), out.warmup);
    double rel = out.predicted_mean_s > 0 ? (m - out.predicted_mean_s) / out.predicted_mean_s : 0;
    (scale == 0.0 ? out.if_comm_free : out.if_double_network) = rel;
  }

  // Breakdowns: measured windows per rank; simulated windows from the main rank's boundaries.
  std::vector<std::vector<Interval>> mw(static_cast<std::size_t>(td.ranks));
  std::vector<std::vector<Interval>> sw(static_cast<std::size_t>(td.ranks));
  std::vector<Interval> sim_main;
  {
    Nanos s = 0;
    for (std::size_t k = 0; k < td.boundary_task.size(); ++k) {
      s = out.sim.start[static_cast<std::size_t>(td.boundary_task[k])];
      sim_main.push_back({s, s + out.predicted_iteration[k]});
    }
  }
  for (int r = 0; r < td.ranks; ++r) {
    auto ru = static_cast<std::size_t>(r);
    const auto& b = td.rank_bounds[ru].size() >= 2 ? td.rank_bounds[ru] : td.rank_bounds[0];
    for (std::size_t k = 0; k + 1 < b.size(); ++k) mw[ru].push_back({b[k], b[k + 1]});
    sw[ru] = sim_main;
  }
  out.measured_ranks = breakdowns(td, nullptr, mw, out.warmup);
  out.predicted_ranks = breakdowns(td, &out.sim, sw, out.warmup);

  // Critical path of a typical iteration: the median simulated one after the warm-up.
  if (!sim_main.empty()) {
    std::vector<std::pair<Nanos, std::size_t>> by_time;
    for (std::size_t k = static_cast<std::size_t>(out.warmup); k < sim_main.size(); ++k) {
      by_time.push_back({out.predicted_iteration[k], k});
    }
    if (by_time.empty()) by_time.push_back({0, sim_main.size() - 1});
    std::sort(by_time.begin(), by_time.end());
    const std::size_t k = by_time[by_time.size() / 2].second;
    out.critical_path_iteration = static_cast<int>(k);
    auto [lo, hi] = sim_main[k];
    std::map<std::string, Nanos> share;
    std::set<int> ranks;
    TaskId t = k + 1 < td.boundary_task.size()
                   ? out.sim.gate[static_cast<std::size_t>(td.boundary_task[k + 1])]
                   : td.end_task;
    Nanos cursor = hi;
    std::vector<std::string> names;
    while (t != model::kNoTask) {
      auto ti = static_cast<std::size_t>(t);
      if (out.sim.finish[ti] <= lo && out.sim.start[ti] < lo) break;
      Nanos s = std::max(out.sim.start[ti], lo);
      Nanos e = std::min(out.sim.finish[ti], cursor);
      const auto& info = td.tasks[ti];
      std::string what = info.rank < 0 || td.dag.task(t).kind == TaskKind::kComm
                             ? "comm"
                             : (info.gap ? std::string("host:") + trace::phase_name(info.phase)
                                         : model::task_kind_name(td.dag.task(t).kind));
      if (info.gap && info.phase == trace::Phase::kNone) what = "host";
      if (e > s) share[what] += e - s;
      if (info.rank >= 0) ranks.insert(info.rank);
      ++out.critical_path_length;
      if (names.size() < 40) {
        std::string n = info.rank < 0 ? "join" : "rank" + std::to_string(info.rank);
        if (info.rank < 0 && info.collective >= 0) {
          n += " " + td.collectives[static_cast<std::size_t>(info.collective)].name;
        } else if (info.event >= 0) {
          const auto& rk = run.ranks[static_cast<std::size_t>(info.rank)];
          n += " '" + rk.str(rk.events[static_cast<std::size_t>(info.event)].name) + "'";
        } else {
          n += " host gap";
        }
        names.push_back(n);
      }
      TaskId g = out.sim.gate[ti];
      Nanos gate_end = g == model::kNoTask ? lo : out.sim.finish[static_cast<std::size_t>(g)];
      if (s > std::max(gate_end, lo)) share["wait"] += s - std::max(gate_end, lo);
      cursor = s;
      if (s <= lo) break;
      t = g;
    }
    std::reverse(names.begin(), names.end());
    out.critical_path_tasks = names;
    out.critical_path_ranks.assign(ranks.begin(), ranks.end());
    for (const auto& [what, v] : share) out.critical_path.push_back({what, v});
    std::stable_sort(out.critical_path.begin(), out.critical_path.end(),
                     [](const PathShare& a, const PathShare& b) { return a.time > b.time; });
    Nanos compute = 0;
    Nanos comm = 0;
    Nanos host = 0;
    Nanos copy = 0;
    for (const auto& p : out.critical_path) {
      if (p.what == "comm") {
        comm += p.time;
      } else if (p.what.rfind("host", 0) == 0 || p.what == "other" || p.what == "wait") {
        host += p.time;
      } else if (p.what == "memcpy") {
        copy += p.time;
      } else {
        compute += p.time;
      }
    }
    Nanos top = std::max({compute, comm, host, copy});
    out.bound = top == comm && comm > 0   ? "communication-bound"
                : top == host && host > 0 ? "host-bound"
                : top == copy && copy > 0 ? "memcpy-bound"
                                          : "compute-bound";
  }

  // Stragglers: the last rank to arrive at each joined collective.
  for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
    const auto& c = td.collectives[ci];
    if (!c.joined) continue;
    int late = -1;
    Nanos first = INT64_MIN;
    Nanos second = INT64_MIN;
    for (std::size_t r = 0; r < c.arrive.size(); ++r) {
      Nanos a = c.arrive[r];
      if (a < 0 && c.span_end[r] < 0) continue;
      if (a > first) {
        second = first;
        first = a;
        late = static_cast<int>(r);
      } else if (a > second) {
        second = a;
      }
    }
    if (late >= 0 && second != INT64_MIN && first > second) {
      out.stragglers.push_back({static_cast<int>(ci), late, first - second});
    }
  }
  return out;
}

}  // namespace dagsgd::sim
