// The validation campaign (campaign.h): measured by the runtime, predicted by the simulator.
#include "dagsgd/validate/campaign.h"

#include <unistd.h>

#include <chrono>
#include <map>
#include <utility>

#include "dagsgd/model/io.h"
#include "dagsgd/reports/trace_report.h"
#include "dagsgd/runtime/process.h"
#include "dagsgd/sim/validation.h"

namespace dagsgd::validate {

model::Expected<Campaign> Campaign::prepare(CampaignSettings s, std::vector<std::string>& notes) {
  const std::string grid_file = s.run.out + "/" + runtime::kGridFile;
  if (s.run.reuse && !s.grid_named) {
    auto recorded = runtime::read_grid(grid_file, s.names, s.run);
    if (!recorded) return recorded.error();
    if (*recorded) notes.push_back("--reuse: the grid recorded in " + grid_file);
  }
  auto grid = runtime::resolve_experiments(s.names, s.run);
  if (!grid) return grid.error();
  runtime::Experiments ex(s.run);
  DAGSGD_TRY(ex.make_directories());
  DAGSGD_TRY(ex.lock_out());
  return Campaign(std::move(s), std::move(*grid), std::move(ex));
}

model::Expected<reports::ValidationReport> Campaign::run() {
  const runtime::ExperimentSettings& run = s_.run;
  DAGSGD_TRY(runtime::write_grid(run.out + "/" + runtime::kGridFile, grid_, run));
  DAGSGD_TRY(ex_.check_cluster());
  sim::ValidationTargets targets{
      run.out + "/fabrics/profiles.json", {}, runtime::kEmulatedClusterStack};
  DAGSGD_TRY(runtime::write_profile_fabrics(targets.profile_fabrics, grid_.profiles));

  // Measurements: the micro-benchmarks, then every training configuration, one round per repeat.
  const auto t_start = std::chrono::steady_clock::now();
  reports::ValidationReport rep;
  std::vector<std::string> profiles;
  for (const auto& p : grid_.profiles) profiles.push_back(p.name);
  std::map<std::pair<std::size_t, int>, std::vector<model::Expected<std::string>>> bench_logs;
  sim::Validator validator(s_.host_cpu_model, s_.network_model);
  const auto runs = grid_.runs();
  std::vector<std::vector<runtime::Measurement>> got(runs.size());
  for (int repeat = 0; repeat < run.repeats; ++repeat) {
    for (std::size_t p = 0; p < grid_.profiles.size(); ++p) {
      for (int r : grid_.ranks) {
        bench_logs[{p, r}].push_back(ex_.benchmark(grid_.profiles[p], r, repeat));
      }
    }
    for (std::size_t i = 0; i < runs.size(); ++i) got[i].push_back(ex_.train(runs[i], repeat));
  }
  auto benchmark = [&](std::size_t p, int r) {
    return sim::merge_benchmark_repeats(bench_logs[{p, r}], run.bench_iterations);
  };
  targets.calibrate(profiles, grid_.ranks, benchmark, run.out + "/fabrics", rep.problems);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<sim::MeasuredRun> repeats;
    for (const auto& m : got[i]) {
      if (!m.ok) {
        rep.problems.push_back(runs[i].dir_name(static_cast<int>(repeats.size())) + ": " + m.error);
      }
      repeats.push_back({runs[i].profile, runs[i].ranks, runs[i].overlap, runs[i].model->name,
                         m.run_dir, m.ok, m.mean_s, m.p50_s, m.cpus, m.error, runs[i].exchange});
    }
    rep.measured.push_back(validator.median_of_repeats(repeats, rep.problems));
  }
  if (runtime::stop_signal() != 0) {
    return model::Error{"interrupted by signal " + std::to_string(runtime::stop_signal())};
  }

  // Each configuration predicted from the same configuration on every other profile; each
  // replay's own report beside the table, for a closer look.
  auto keep = [&](const sim::ValidationPrediction& p, const sim::TracedWorkload& w) {
    return model::write_file(run.out + "/" + reports::validation_replay_file(rep.measured, p),
                             reports::replay_json(w.run(), w.dag(), *p.replay), true);
  };
  rep.predictions = validator.predict_all(rep.measured, targets, keep, rep.problems);

  rep.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  rep.iterations = run.iterations;
  rep.warmup = run.warmup;
  rep.batch = run.batch;
  rep.ranks_per_host = run.ranks_per_host;
  rep.repeats = run.repeats;
  rep.host_cpu_model = s_.host_cpu_model;
  rep.network_model = s_.network_model;
  for (const auto& p : grid_.profiles) {
    rep.profiles.push_back({p.name, p.tc_rate, p.rate_gbps, p.latency_us});
  }
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return rep;
}

}  // namespace dagsgd::validate
