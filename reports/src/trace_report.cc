// Text and JSON renderings of analyze/replay, and the simulated timeline writer.
#include "dagsgd/reports/trace_report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "dagsgd/model/format.h"
#include "dagsgd/reports/job_effects_report.h"
#include "job_effects_json.h"
#include "links_json.h"

namespace dagsgd::reports {

using model::fmt;
using model::Nanos;
using nlohmann::ordered_json;

namespace {

std::string ms_text(Nanos ns) { return fmt("%.3f", static_cast<double>(ns) * 1e-6); }
std::string pct(double x) { return fmt("%+.1f%%", x * 100.0); }
double sec(Nanos ns) { return static_cast<double>(ns) * 1e-9; }

ordered_json rank_json(const sim::RankTime& t) {
  ordered_json j;
  j["rank"] = t.rank;
  j["iteration_s"] = sec(t.window);
  j["compute_s"] = sec(t.compute);
  j["comm_total_s"] = sec(t.comm_total);
  j["comm_exposed_s"] = sec(t.comm_exposed);
  j["overlap_s"] = sec(t.overlap);
  j["memcpy_s"] = sec(t.memcpy);
  j["host_s"] = sec(t.host);
  j["idle_s"] = sec(t.idle);
  return j;
}

ordered_json ranks_json(const std::vector<sim::RankTime>& v) {
  ordered_json a = ordered_json::array();
  for (const auto& t : v) a.push_back(rank_json(t));
  return a;
}

std::string rank_table(const std::vector<sim::RankTime>& v) {
  std::string out =
      "  rank  iteration   compute  comm(total  exposed  overlap)   memcpy     host     idle  "
      "[ms]\n";
  for (const auto& t : v) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %4d %10s %9s %11s %8s %8s %9s %8s %8s\n", t.rank,
                  ms_text(t.window).c_str(), ms_text(t.compute).c_str(),
                  ms_text(t.comm_total).c_str(), ms_text(t.comm_exposed).c_str(),
                  ms_text(t.overlap).c_str(), ms_text(t.memcpy).c_str(), ms_text(t.host).c_str(),
                  ms_text(t.idle).c_str());
    out += buf;
  }
  return out;
}

ordered_json import_json(const trace::ImportedRun& run) {
  ordered_json files = ordered_json::array();
  for (const auto& f : run.report.files) {
    ordered_json j;
    j["file"] = f.file;
    j["rank"] = f.rank;
    j["bytes"] = f.bytes;
    j["events"] = f.events;
    j["complete_events"] = f.complete_events;
    ordered_json cats = ordered_json::object();
    for (int c = 0; c < trace::kEventCategoryCount; ++c) {
      auto n = f.by_category[static_cast<std::size_t>(c)];
      if (n > 0) cats[trace::category_name(static_cast<trace::EventCategory>(c))] = n;
    }
    j["by_category"] = cats;
    j["flows_matched"] = f.flows_matched;
    j["flows_unmatched"] = f.flows_unmatched;
    j["truncated"] = f.truncated;
    j["drift_corrected"] = f.drift_corrected;
    ordered_json probs = ordered_json::array();
    for (const auto& p : f.problems) {
      probs.push_back({{"kind", p.kind}, {"count", p.count}, {"first", p.first}});
    }
    j["problems"] = probs;
    files.push_back(j);
  }
  ordered_json j;
  j["source"] = trace::run_source_name(run.source);
  j["files"] = files;
  ordered_json off = ordered_json::array();
  for (Nanos o : run.report.clock_offsets) off.push_back(o);
  j["clock_offsets_ns"] = off;
  j["clock_residual_ns"] = run.report.clock_residual;
  j["clocks_aligned"] = run.report.clocks_aligned;
  return j;
}

std::string import_text(const trace::ImportedRun& run) {
  std::string out;
  std::int64_t events = 0;
  for (const auto& f : run.report.files) events += f.complete_events;
  out += "Run: " + run.path + " (" + trace::run_source_name(run.source) + ", " +
         std::to_string(run.ranks.size()) + " rank trace(s), " + std::to_string(events) +
         " spans)\n";
  if (run.report.clock_offsets.size() > 1) {
    out += "Clock alignment from collectives: residual " +
           fmt("%.1f", static_cast<double>(run.report.clock_residual) * 1e-3) + " us" +
           (run.report.clocks_aligned ? " (offsets applied)" : " (traces already aligned)") + "\n";
  }
  std::string s = run.report.summary();
  if (!s.empty()) out += "Import problems: " + s + "\n";
  return out;
}

ordered_json path_json(const sim::ReplayResult& r) {
  ordered_json cp = ordered_json::object();
  for (const auto& p : r.critical_path) cp[p.what] = sec(p.time);
  ordered_json j;
  j["composition_s"] = cp;
  j["iteration"] = r.critical_path_iteration;
  j["tasks"] = r.critical_path_length;
  j["ranks"] = r.critical_path_ranks;
  j["first_tasks"] = r.critical_path_tasks;
  return j;
}

ordered_json stragglers_json(const trace::TraceDag& dag, const sim::ReplayResult& r) {
  std::map<int, std::pair<int, Nanos>> by_rank;
  for (const auto& s : r.stragglers) {
    by_rank[s.rank].first++;
    by_rank[s.rank].second += s.late_by;
  }
  ordered_json a = ordered_json::array();
  for (const auto& [rank, v] : by_rank) {
    a.push_back({{"rank", rank}, {"collectives_gated", v.first}, {"late_total_s", sec(v.second)}});
  }
  ordered_json j;
  j["collectives"] = dag.collectives.size();
  j["by_rank"] = a;
  return j;
}

std::string stragglers_text(const trace::TraceDag& dag, const sim::ReplayResult& r) {
  std::map<int, std::pair<int, Nanos>> by_rank;
  for (const auto& s : r.stragglers) {
    by_rank[s.rank].first++;
    by_rank[s.rank].second += s.late_by;
  }
  std::size_t joined = 0;
  for (const auto& c : dag.collectives) joined += c.joined ? 1 : 0;
  std::string out = "Stragglers (" + std::to_string(joined) + " collectives joined across ranks";
  if (joined == 0) return out + "; not every rank of the job is in the trace)\n";
  out += "):\n";
  for (const auto& [rank, v] : by_rank) {
    out += "  rank " + std::to_string(rank) + " arrived last at " + std::to_string(v.first) +
           " collective(s), late by " + ms_text(v.second) + " ms in all (mean " +
           fmt("%.1f", static_cast<double>(v.second) / v.first * 1e-3) + " us)\n";
  }
  return out;
}

// The S-SGD phase-level view of the main rank (mean per iteration after the warm-up): time per
// phase on the host and on GPU streams, and per layer where the trace names layers.
struct PhaseView {
  std::map<std::string, std::pair<Nanos, Nanos>> phase;                   // phase -> (host, gpu)
  std::map<int, std::pair<std::string, std::pair<Nanos, Nanos>>> layers;  // layer -> name, (f, b)
  int iterations = 0;
};

PhaseView phase_view(const trace::ImportedRun& run, const trace::TraceDag& dag, int warmup) {
  PhaseView v;
  v.iterations = std::max(1, static_cast<int>(dag.measured_iteration.size()) - warmup);
  const int main = dag.main_rank;
  for (std::size_t t = 0; t < dag.tasks.size(); ++t) {
    const auto& info = dag.tasks[t];
    const auto& task = dag.dag.task(static_cast<model::TaskId>(t));
    if (info.rank != main || task.iteration < warmup) continue;
    if (info.gap && !info.in_op) continue;
    bool gpu = false;
    std::string name;
    if (info.event >= 0) {
      const auto& rk = run.ranks[static_cast<std::size_t>(main)];
      const auto& e = rk.events[static_cast<std::size_t>(info.event)];
      gpu = e.gpu;
      name = rk.str(e.name);
    }
    std::string ph = info.phase == trace::Phase::kNone ? "other" : trace::phase_name(info.phase);
    auto& slot = v.phase[ph];
    (gpu ? slot.second : slot.first) += info.measured_dur;
    if (dag.mode == trace::TraceMode::kSsgd && task.layer >= 0 &&
        (task.kind == model::TaskKind::kForward || task.kind == model::TaskKind::kBackward) &&
        name != "loss") {
      auto& l = v.layers[task.layer];
      l.first = name;
      (task.kind == model::TaskKind::kForward ? l.second.first : l.second.second) +=
          info.measured_dur;
    }
  }
  return v;
}

std::string phase_text(const PhaseView& v) {
  std::string out = "Phases (main rank, mean per iteration; host / GPU streams):\n";
  for (const auto& [ph, t] : v.phase) {
    out += "  " + ph + std::string(ph.size() < 10 ? 10 - ph.size() : 1, ' ') +
           ms_text(t.first / v.iterations) + " / " + ms_text(t.second / v.iterations) + " ms\n";
  }
  if (!v.layers.empty()) {
    out += "Layers (forward / backward, ms):\n";
    for (const auto& [l, x] : v.layers) {
      out += "  " + std::to_string(l) + " " + x.first + ": " +
             ms_text(x.second.first / v.iterations) + " / " +
             ms_text(x.second.second / v.iterations) + "\n";
    }
  }
  return out;
}

ordered_json phase_json(const PhaseView& v) {
  ordered_json j;
  ordered_json ph = ordered_json::object();
  for (const auto& [p, t] : v.phase) {
    ph[p] = {{"host_s", sec(t.first / v.iterations)}, {"gpu_s", sec(t.second / v.iterations)}};
  }
  j["phases"] = ph;
  ordered_json layers = ordered_json::array();
  for (const auto& [l, x] : v.layers) {
    layers.push_back({{"layer", l},
                      {"name", x.first},
                      {"forward_s", sec(x.second.first / v.iterations)},
                      {"backward_s", sec(x.second.second / v.iterations)}});
  }
  j["layers"] = layers;
  return j;
}

// Bandwidths in GB/s ("-": none).
std::string gbps_text(double gbps) { return gbps > 0 ? fmt("%.2f", gbps) : "-"; }

std::string collectives_text(const std::vector<sim::CollectiveTypeSummary>& rows) {
  if (rows.empty()) return "Collectives: none\n";
  std::string out =
      "Collectives by type (measured; bus bandwidth as nccl-tests defines it, beside the "
      "fabric's):\n";
  char line[160];
  std::snprintf(line, sizeof line, "  %-16s %7s %14s %12s %10s %12s\n", "type", "count", "bytes",
                "time ms", "bus GB/s", "fabric GB/s");
  out += line;
  for (const auto& c : rows) {
    std::snprintf(line, sizeof line, "  %-16s %7d %14.0f %12s %10s %12s\n", c.type.c_str(), c.count,
                  c.bytes, ms_text(c.time).c_str(), gbps_text(c.bus_gbps).c_str(),
                  gbps_text(c.fabric_gbps).c_str());
    out += line;
    if (c.unsized > 0) {
      out += "    (" + std::to_string(c.unsized) +
             " without a recorded size: not in bytes or "
             "bandwidth)\n";
    }
  }
  return out;
}

ordered_json collectives_json(const std::vector<sim::CollectiveTypeSummary>& rows) {
  ordered_json a = ordered_json::array();
  for (const auto& c : rows) {
    a.push_back({{"type", c.type},
                 {"count", c.count},
                 {"unsized", c.unsized},
                 {"bytes", c.bytes},
                 {"time_s", static_cast<double>(c.time) * 1e-9},
                 {"bus_bandwidth_bytes_per_s", c.bus_gbps * 1e9},
                 {"fabric_bandwidth_bytes_per_s", c.fabric_gbps * 1e9}});
  }
  return a;
}

}  // namespace

std::string analyze_text(const trace::ImportedRun& run, const trace::TraceDag& dag,
                         const sim::ReplayResult& r, const sim::JobEffects& effects,
                         const std::vector<sim::CollectiveTypeSummary>& collectives) {
  std::string out = import_text(run);
  out += "DAG: " + std::to_string(dag.dag.task_count()) + " tasks, " +
         std::to_string(dag.dag.edge_count()) + " edges (" + trace::trace_mode_name(dag.mode) +
         "), " + std::to_string(dag.measured_iteration.size()) + " iteration(s), " +
         std::to_string(dag.collectives.size()) + " collective(s)\n";
  out += "Measured iteration (rank " + std::to_string(dag.main_rank) + ", mean after " +
         std::to_string(r.warmup) +
         " warm-up): " + ms_text(static_cast<Nanos>(r.measured_mean_s * 1e9)) + " ms\n\n";
  out += "Per rank, mean per iteration (measured):\n" + rank_table(r.measured_ranks) + "\n";
  out += phase_text(phase_view(run, dag, r.warmup)) + "\n";
  out += "Critical path of iteration " + std::to_string(r.critical_path_iteration) +
         " (the median; " + std::to_string(r.critical_path_length) + " tasks on rank(s)";
  for (int k : r.critical_path_ranks) out += " " + std::to_string(k);
  out += "):\n";
  Nanos total = 0;
  for (const auto& p : r.critical_path) total += p.time;
  for (const auto& p : r.critical_path) {
    out += "  " + p.what + std::string(p.what.size() < 16 ? 16 - p.what.size() : 1, ' ') +
           ms_text(p.time) + " ms  " +
           fmt("%.1f%%",
               total > 0 ? 100.0 * static_cast<double>(p.time) / static_cast<double>(total) : 0) +
           "\n";
  }
  out += "\n" + stragglers_text(dag, r) + "\n";
  out += "Bottleneck: " + r.bound + "; if communication were free: " + pct(r.if_comm_free) +
         "; if the network were twice as fast: " + pct(r.if_double_network) + "\n";
  out += "(replayed with measured durations: " + pct(r.error) + " vs measured)\n\n";
  out += collectives_text(collectives) + "\n";
  out += job_effects_text(effects);
  return out;
}

std::string analyze_json(const trace::ImportedRun& run, const trace::TraceDag& dag,
                         const sim::ReplayResult& r, const sim::JobEffects& effects,
                         const std::vector<sim::CollectiveTypeSummary>& collectives) {
  ordered_json j;
  j["import"] = import_json(run);
  j["dag"] = {{"mode", trace::trace_mode_name(dag.mode)},
              {"tasks", dag.dag.task_count()},
              {"edges", dag.dag.edge_count()},
              {"iterations", dag.measured_iteration.size()},
              {"warmup", r.warmup},
              {"collectives", dag.collectives.size()}};
  j["measured_iteration_s"] = r.measured_mean_s;
  j["ranks"] = ranks_json(r.measured_ranks);
  j["phase_view"] = phase_json(phase_view(run, dag, r.warmup));
  j["critical_path"] = path_json(r);
  j["stragglers"] = stragglers_json(dag, r);
  j["bound"] = r.bound;
  j["if_comm_free"] = r.if_comm_free;
  j["if_double_network"] = r.if_double_network;
  j["replay_error"] = r.error;
  j["collectives"] = collectives_json(collectives);
  j["job_effects"] = detail::job_effects_json(effects);
  return j.dump(2) + "\n";
}

std::string replay_text(const trace::ImportedRun& run, const trace::TraceDag& dag,
                        const sim::ReplayResult& r) {
  std::string out = import_text(run);
  out += std::string("Communication: ") + sim::comm_source_name(r.comm.source);
  if (r.comm.source != sim::CommSource::kMeasured) {
    out += " (" + r.comm.algorithm + "; alpha " +
           fmt("%.2f", r.comm.topology.intra.alpha_ns * 1e-3) + " us, bandwidth " +
           fmt("%.3f", r.comm.topology.intra.beta_ns_per_byte > 0
                           ? 1.0 / r.comm.topology.intra.beta_ns_per_byte
                           : 0.0) +
           " GB/s intra";
    if (!r.comm.note.empty()) out += "; " + r.comm.note;
    out += ")";
  }
  out += "; " + std::to_string(r.modeled_collectives) + " modeled, " +
         std::to_string(r.measured_collectives) + " measured\n";
  if (const std::string kept = sim::unpriced_summary(r); !kept.empty()) {
    out += "Kept at their traced durations, the model cannot price them: " + kept + "\n";
  }
  if (r.scale.gpus > 0) {
    out += "Scale: " + r.scale.note + "\n";
    out += "  collectives: " + std::to_string(r.scale.grown) + " grew with the job, " +
           std::to_string(r.scale.node_local) + " node-local kept their size";
    if (const std::string kept = sim::kept_size_summary(r.scale); !kept.empty()) {
      out += "; kept at their traced group size: " + kept;
    }
    out += "\n";
  }
  if (r.cpu.modeled) {
    out += "Host CPUs: traced on " + std::to_string(r.cpu.traced_machines) + " machine(s), up to " +
           fmt("%.2f", r.cpu.traced_oversubscription) + " ranks per CPU; replayed on " +
           std::to_string(r.cpu.machines) + " machine(s) of " + std::to_string(r.cpu.cpus) +
           " CPUs, up to " + fmt("%.2f", r.cpu.oversubscription) + " ranks per CPU\n";
  }
  out += "Iterations: " + std::to_string(dag.measured_iteration.size()) + " (mean after " +
         std::to_string(r.warmup) + " warm-up)\n";
  out += "Measured iteration:  " + ms_text(static_cast<Nanos>(r.measured_mean_s * 1e9)) + " ms\n";
  out += "Predicted iteration: " + ms_text(static_cast<Nanos>(r.predicted_mean_s * 1e9)) + " ms\n";
  // Scaled, the measurement is of the traced ranks, not of the target's job.
  out += (r.scale.gpus > 0 ? "Change from the traced " + std::to_string(r.scale.traced) + " ranks: "
                           : std::string("Error: ")) +
         pct(r.error) + "\n\n";
  out += "Measured, per rank:\n" + rank_table(r.measured_ranks);
  out += "Predicted, per rank:\n" + rank_table(r.predicted_ranks);
  if (r.network_model == "flow") {
    out += "\nBusiest links (flow-level tier, iteration " +
           std::to_string(r.critical_path_iteration) + "):\n";
    for (const auto& l : r.busiest_links) {
      out += "  " + l.link + " (" + l.kind + ")  busy " + fmt("%.1f%%", 100.0 * l.busy) +
             ", utilization " + fmt("%.1f%%", 100.0 * l.utilization) + "\n";
    }
    out += "Bottleneck: " + r.bound;
    if (!r.busiest_links.empty()) {
      out += "; the busiest link is " + r.busiest_links.front().link + " (" +
             r.busiest_links.front().kind + "), busy " +
             fmt("%.0f%%", 100.0 * r.busiest_links.front().busy) + " of the iteration";
    }
    out += "\n";
  }
  return out;
}

std::string replay_json(const trace::ImportedRun& run, const trace::TraceDag& dag,
                        const sim::ReplayResult& r) {
  ordered_json j;
  j["run"] = run.path;
  j["source"] = trace::run_source_name(run.source);
  j["ranks"] = dag.ranks;
  j["iterations"] = dag.measured_iteration.size();
  j["warmup"] = r.warmup;
  j["measured_iteration_s"] = r.measured_mean_s;
  j["predicted_iteration_s"] = r.predicted_mean_s;
  j["error"] = r.error;
  ordered_json comm;
  comm["source"] = sim::comm_source_name(r.comm.source);
  comm["algorithm"] = r.comm.algorithm;
  comm["alpha_s"] = r.comm.topology.intra.alpha_ns * 1e-9;
  comm["bandwidth_bytes_per_s"] = r.comm.topology.intra.beta_ns_per_byte > 0
                                      ? 1e9 / r.comm.topology.intra.beta_ns_per_byte
                                      : 0.0;
  comm["inter_alpha_s"] = r.comm.topology.inter.alpha_ns * 1e-9;
  comm["inter_bandwidth_bytes_per_s"] = r.comm.topology.inter.beta_ns_per_byte > 0
                                            ? 1e9 / r.comm.topology.inter.beta_ns_per_byte
                                            : 0.0;
  comm["fit_points"] = r.comm.points;
  comm["fit_rms_relative"] = r.comm.rms_relative;
  comm["note"] = r.comm.note;
  comm["modeled_collectives"] = r.modeled_collectives;
  comm["measured_collectives"] = r.measured_collectives;
  ordered_json unpriced = ordered_json::object();
  for (const auto& [reason, count] : r.unpriced_collectives) unpriced[reason] = count;
  comm["unpriced_collectives"] = unpriced;
  j["comm"] = comm;
  if (r.scale.gpus > 0) {
    ordered_json kept = ordered_json::object();
    for (const auto& [what, count] : r.scale.kept) kept[what] = count;
    j["scale"] = {{"traced_ranks", r.scale.traced},
                  {"gpus", r.scale.gpus},
                  {"gpus_per_traced_rank", r.scale.gpus / std::max(1, r.scale.traced)},
                  {"grown_collectives", r.scale.grown},
                  {"node_local_collectives", r.scale.node_local},
                  {"kept_size_collectives", kept},
                  {"per_rank_noise_modeled", false},
                  {"note", r.scale.note}};
  }
  if (r.cpu.modeled) {
    j["host_cpus"] = {{"traced_machines", r.cpu.traced_machines},
                      {"traced_ranks_per_cpu", r.cpu.traced_oversubscription},
                      {"machines", r.cpu.machines},
                      {"cpus_per_machine", r.cpu.cpus},
                      {"ranks_per_cpu", r.cpu.oversubscription}};
  }
  ordered_json mi = ordered_json::array();
  ordered_json pi = ordered_json::array();
  for (Nanos t : r.measured_iteration) mi.push_back(sec(t));
  for (Nanos t : r.predicted_iteration) pi.push_back(sec(t));
  j["measured_iterations_s"] = mi;
  j["predicted_iterations_s"] = pi;
  j["measured_breakdown"] = ranks_json(r.measured_ranks);
  j["predicted_breakdown"] = ranks_json(r.predicted_ranks);
  j["critical_path"] = path_json(r);
  j["bound"] = r.bound;
  j["if_comm_free"] = r.if_comm_free;
  j["if_double_network"] = r.if_double_network;
  detail::add_links_json(j, r.network_model, r.busiest_links);
  return j.dump(2) + "\n";
}

std::string simulated_timeline(const trace::TraceDag& dag, const sim::ReplayResult& r) {
  ordered_json events = ordered_json::array();
  auto us = [](Nanos t) { return std::round(static_cast<double>(t)) / 1000.0; };
  const int coll_pid = dag.ranks;
  for (int k = 0; k <= dag.ranks; ++k) {
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", k},
                      {"tid", 0},
                      {"args",
                       {{"name", k < dag.ranks ? "rank " + std::to_string(k) + " (simulated)"
                                               : std::string("collectives (simulated)")}}}});
  }
  const auto& res = dag.dag.resources();
  for (std::size_t i = 0; i < res.size(); ++i) {
    for (int k = 0; k <= dag.ranks; ++k) {
      std::string prefix = "rank" + std::to_string(k) + ".";
      bool mine =
          k < dag.ranks ? res[i].name.rfind(prefix, 0) == 0 : res[i].name.rfind("rank", 0) != 0;
      if (!mine) continue;
      events.push_back({{"ph", "M"},
                        {"name", "thread_name"},
                        {"pid", k},
                        {"tid", i},
                        {"args", {{"name", res[i].name}}}});
    }
  }
  for (model::TaskId t = 0; t < static_cast<model::TaskId>(dag.tasks.size()); ++t) {
    const auto& info = dag.tasks[static_cast<std::size_t>(t)];
    const auto& task = dag.dag.task(t);
    auto ti = static_cast<std::size_t>(t);
    Nanos s = r.sim.start[ti];
    Nanos d = r.sim.finish[ti] - s;
    if (d <= 0 && info.gap) continue;
    std::string name;
    if (info.collective >= 0 && info.rank < 0) {
      name = dag.collectives[static_cast<std::size_t>(info.collective)].name;
    } else if (info.name >= 0) {
      name = dag.task_name(t);
    } else {
      name = std::string("host ") + trace::phase_name(info.phase);
    }
    ordered_json args;
    args["phase"] = trace::phase_name(info.phase);
    args["kind"] = model::task_kind_name(task.kind);
    args["iteration"] = task.iteration;
    args["measured_dur_us"] = us(info.measured_dur);
    events.push_back({{"ph", "X"},
                      {"cat", task.kind == model::TaskKind::kComm ? "comm" : "cpu_op"},
                      {"name", name},
                      {"pid", info.rank < 0 ? coll_pid : info.rank},
                      {"tid", task.resource},
                      {"ts", us(s)},
                      {"dur", us(d)},
                      {"args", args}});
  }
  ordered_json j;
  j["schemaVersion"] = 1;
  j["displayTimeUnit"] = "ms";
  j["traceName"] = "dagsgd replay of " + dag.source;
  j["traceEvents"] = events;
  return j.dump() + "\n";
}

}  // namespace dagsgd::reports
