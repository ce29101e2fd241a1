// Text and JSON renderings of sim::PredictResult.
#include "dagsgd/reports/predict_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "dagsgd/model/format.h"
#include "links_json.h"
#include "result_json.h"

namespace dagsgd::reports {

using model::fmt;
using model::Nanos;
using model::to_seconds;

namespace {

// Milliseconds with 3 decimals, and the share of the iteration.
std::string ms_share(Nanos t, Nanos total) {
  std::string s = fmt("%10.3f ms", model::to_millis(t));
  if (total > 0) s += fmt("  %5.1f%%", 100.0 * static_cast<double>(t) / static_cast<double>(total));
  return s;
}

// Seconds rounded to the nanosecond, so JSON numbers are stable across platforms.
double secs(Nanos t) { return to_seconds(t); }

}  // namespace

void detail::put_headline(nlohmann::ordered_json& j, const sim::PredictResult& r) {
  j["iteration_time_s"] = secs(r.iteration);
  j["throughput_samples_per_s"] = round6(r.throughput);
  j["speedup"] = round6(r.speedup);
  j["efficiency"] = round6(r.efficiency);
  j["single_gpu_iteration_time_s"] = secs(r.single_gpu_iteration);
}

nlohmann::ordered_json detail::critical_path_json(const sim::PredictResult& r) {
  nlohmann::ordered_json cp = nlohmann::ordered_json::object();
  for (const auto& p : r.critical_path) cp[p.phase] = secs(p.time);
  return {{"tasks", r.critical_path_tasks}, {"composition_s", cp}};
}

nlohmann::ordered_json detail::effects_json(const sim::PredictResult& r) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& e : r.effects) j[e.effect] = {{"time_s", secs(e.time)}, {"detail", e.detail}};
  return j;
}

nlohmann::ordered_json detail::what_if_json(const sim::PredictResult& r) {
  return {{"comm_free_iteration_time_s", secs(r.if_comm_free)},
          {"double_bandwidth_iteration_time_s", secs(r.if_double_bandwidth)}};
}

std::string predict_text(const sim::Description& scenario, const sim::PredictResult& r) {
  std::string out;
  out += "Scenario\n";
  for (const auto& [k, v] : scenario) out += "  " + k + ": " + v + "\n";
  out += "\nPrediction\n";
  out += "  iteration time      " + fmt("%.3f ms", model::to_millis(r.iteration)) + "\n";
  out += "  throughput          " + fmt("%.1f samples/s", r.throughput) + "\n";
  out += "  speed-up vs 1 GPU   " + fmt("%.2f", r.speedup) + " on " + std::to_string(r.workers) +
         " GPUs (efficiency " + fmt("%.1f%%", 100.0 * r.efficiency) +
         "; 1 GPU: " + fmt("%.3f ms", model::to_millis(r.single_gpu_iteration)) + ")\n";
  out += "  gradient groups     " + std::to_string(r.groups.size()) + " (largest by " +
         r.algorithm + ")\n";
  out += "\nBreakdown of one worker's iteration\n";
  const auto& b = r.breakdown;
  out += "  forward        " + ms_share(b.forward, r.iteration) + "\n";
  out += "  backward       " + ms_share(b.backward, r.iteration) + "\n";
  out += "  comm (total)   " + ms_share(b.comm_total, r.iteration) + "\n";
  out += "  comm (exposed) " + ms_share(b.comm_exposed, r.iteration) + "\n";
  out += "  update         " + ms_share(b.update, r.iteration) + "\n";
  out += "  io             " + ms_share(b.io, r.iteration) + "\n";
  out += "  h2d            " + ms_share(b.h2d, r.iteration) + "\n";
  out += "  idle           " + ms_share(b.idle, r.iteration) + "\n";
  if (!r.effects.empty()) {
    out += "\nAround the wire (added to each worker's compute, docs/gpu-effects.md)\n";
    for (const auto& e : r.effects) {
      out += "  " + e.effect + std::string(15 - std::min<std::size_t>(e.effect.size(), 14), ' ') +
             ms_share(e.time, r.iteration) + "  " + e.detail + "\n";
    }
  }
  out += "\nMemory per GPU (" + r.sharding +
         "; model states with Adam as the ZeRO paper counts "
         "them)\n  " +
         model::memory_text(r.memory);
  if (r.gpu_memory > 0) {
    out += " of " + fmt("%.2f GiB", r.gpu_memory / model::kGiB) + " (" +
           fmt("%.0f%%", 100 * r.memory.total() / r.gpu_memory) + ")";
    if (r.memory.total() > r.gpu_memory) {
      out +=
          "\n  above the GPU's memory with every layer's output kept for backward (an upper "
          "bound: in-place activations and recomputation keep less)";
    }
  }
  out += "\n";
  if (r.gathers_per_iteration > 0) {
    out +=
        "  parameter all-gathers per iteration: " + std::to_string(r.gathers_per_iteration) + "\n";
  }
  out += "\nCritical path (" + std::to_string(r.critical_path_tasks) + " tasks)\n";
  for (const auto& p : r.critical_path) {
    out += "  " + p.phase + std::string(15 - std::min<std::size_t>(p.phase.size(), 14), ' ') +
           ms_share(p.time, r.iteration) + "\n";
  }
  if (r.network_model == "flow") {
    out += "\nBusiest links (flow-level tier, reported iteration)\n";
    for (const auto& l : r.busiest_links) {
      out += "  " + l.link + " (" + l.kind + ")  busy " + fmt("%.1f%%", 100.0 * l.busy) +
             ", utilization " + fmt("%.1f%%", 100.0 * l.utilization) + ", " +
             fmt("%.3f GB", l.gigabytes) + "\n";
    }
  }
  out += "\nBottleneck: " + r.bottleneck + "\n";
  return out;
}

std::string predict_json(const sim::Description& scenario, const sim::PredictResult& r) {
  nlohmann::ordered_json j;
  nlohmann::ordered_json sc = nlohmann::ordered_json::object();
  for (const auto& [k, v] : scenario) sc[k] = v;
  j["scenario"] = sc;
  j["workers"] = r.workers;
  detail::put_headline(j, r);
  const auto& b = r.breakdown;
  j["breakdown"] = {{"forward", secs(b.forward)},
                    {"backward", secs(b.backward)},
                    {"comm_total", secs(b.comm_total)},
                    {"comm_exposed", secs(b.comm_exposed)},
                    {"update", secs(b.update)},
                    {"io", secs(b.io)},
                    {"h2d", secs(b.h2d)},
                    {"idle", secs(b.idle)}};
  j["effects"] = detail::effects_json(r);
  j["sharding"] = r.sharding;
  j["memory_per_gpu"] = {{"parameters_bytes", r.memory.parameters},
                         {"gradients_bytes", r.memory.gradients},
                         {"optimizer_state_bytes", r.memory.optimizer},
                         {"gathered_units_bytes", r.memory.gathered},
                         {"activations_bytes", r.memory.activations},
                         {"total_bytes", r.memory.total()},
                         {"gpu_capacity_bytes", r.gpu_memory},
                         {"parameter_allgathers_per_iteration", r.gathers_per_iteration}};
  j["critical_path"] = detail::critical_path_json(r);
  j["bound"] = r.bound;
  j["bottleneck"] = r.bottleneck;
  j["what_if"] = detail::what_if_json(r);
  nlohmann::ordered_json groups = nlohmann::ordered_json::array();
  for (const auto& g : r.groups) {
    groups.push_back({{"first_layer", g.first},
                      {"last_layer", g.last},
                      {"elements", g.elements},
                      {"comm_s", secs(g.comm)}});
  }
  j["gradient_groups"] = groups;
  j["algorithm"] = r.algorithm;
  j["simulated"] = {{"tasks", r.tasks}, {"events", r.events}};
  detail::add_links_json(j, r.network_model, r.busiest_links);
  return j.dump(2) + "\n";
}

}  // namespace dagsgd::reports
