// Cross-fabric predictions of measured runs (validation.h).
#include "dagsgd/sim/validation.h"

#include <algorithm>
#include <cmath>

namespace dagsgd::sim {

const TracedWorkload* Validator::source_run(const std::string& dir, std::string& error) {
  auto it = runs_.find(dir);
  if (it == runs_.end()) {
    auto w = TracedWorkload::load({dir}, trace::ImportOptions{});
    if (!w) {
      error = w.error().message;
      return nullptr;
    }
    it = runs_.emplace(dir, std::move(*w)).first;
  }
  return it->second.get();
}

ValidationPrediction Validator::predict(const std::vector<MeasuredRun>& runs, std::size_t source,
                                        std::size_t target, const TargetFabric& fabric) {
  ValidationPrediction p;
  p.source = source;
  p.target = target;
  p.mode = fabric.mode;
  p.measured_s = runs[target].mean_s;
  std::string error;
  const TracedWorkload* w = source_run(runs[source].run_dir, error);
  if (w == nullptr) {
    p.failure = "cannot read the source run: " + error;
    return p;
  }
  auto catalogs = Catalogs::load({fabric.fabric_file});
  // The target laid out as the run was (one host per rank on the emulated cluster).
  const model::Topology layout = run_topology(w->dag());
  HardwareSpec spec{layout.nodes, layout.gpus_per_node, fabric.fabric_name, fabric.fabric_name};
  spec.network_model = network_model_;
  auto hw =
      catalogs ? resolve_hardware(spec, *catalogs) : model::Expected<Hardware>(catalogs.error());
  if (!hw) {
    p.failure = "target fabric: " + hw.error().message;
    return p;
  }
  ReplayOptions ro;
  ro.target = hw->topology();
  ro.target->nodes = 0;  // the run's own layout
  ro.target->gpus_per_node = 0;
  ro.cluster = hw->cluster;
  if (host_cpu_model_ && runs[target].cpus > 0) ro.cpus = runs[target].cpus;
  auto r = replay_trace(w->dag(), ro);
  if (!r) {
    p.failure = "replay failed: " + r.error().message;
    return p;
  }
  p.predicted_s = r->predicted_mean_s;
  p.error = (p.predicted_s - p.measured_s) / p.measured_s;
  p.ok = true;
  p.replay = std::make_shared<const ReplayResult>(std::move(*r));
  return p;
}

std::map<std::string, ModeSummary> summarize(const std::vector<ValidationPrediction>& predictions) {
  std::map<std::string, ModeSummary> out;
  for (const auto& p : predictions) {
    ModeSummary& s = out[p.mode];
    if (!p.ok) {
      ++s.failed;
      continue;
    }
    ++s.predictions;
    s.mean_abs_error += std::abs(p.error);
    s.worst_abs_error = std::max(s.worst_abs_error, std::abs(p.error));
  }
  for (auto& [mode, s] : out) {
    if (s.predictions > 0) s.mean_abs_error /= s.predictions;
  }
  return out;
}

}  // namespace dagsgd::sim
