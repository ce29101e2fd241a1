// `dagsgd validate`: real training on the emulated cluster under several shaped fabrics
// (runtime/emulated_cluster.h), each run predicted from a trace taken on another fabric
// (sim/validation.h), and the error table (reports/validation_report.h).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/trace_report.h"
#include "dagsgd/reports/validation_report.h"
#include "dagsgd/runtime/emulated_cluster.h"
#include "dagsgd/runtime/process.h"
#include "dagsgd/sim/validation.h"

namespace dagsgd::tools {
namespace {

struct ValidateFlags {
  runtime::ExperimentNames names;
  runtime::ExperimentSettings run;
  bool no_cpu_model = false;
  std::string network_model = "flow";
  const CLI::App* app = nullptr;
};

// The flags that choose the grid and how each run is measured (recorded in OUT/grid.json).
constexpr const char* kGridFlags[] = {
    "--profiles", "--ranks", "--overlap",        "--models",           "--quick",  "--iterations",
    "--warmup",   "--batch", "--ranks-per-host", "--bench-iterations", "--repeats"};

int run_validate(const ValidateFlags& flags) {
  ValidateFlags f = flags;
  bool grid_given = false;
  for (const char* name : kGridFlags) grid_given = grid_given || f.app->count(name) > 0;
  const std::string grid_file = f.run.out + "/" + runtime::kGridFile;
  if (f.run.reuse && !grid_given) {
    // Re-predict what the directory holds rather than measure the default grid's missing runs.
    auto recorded = runtime::read_grid(grid_file, f.names, f.run);
    if (!recorded) return report_error(recorded.error().message);
    if (*recorded) print_note("validate: --reuse: the grid recorded in " + grid_file + "\n");
  }
  auto grid = runtime::resolve_experiments(f.names, f.run);
  if (!grid) return report_error(grid.error().message);
  runtime::Experiments ex(f.run);
  if (auto made = ex.make_directories(); !made) return report_error(made.error().message);
  if (auto locked = ex.lock_out(); !locked) return report_error(locked.error().message);
  if (auto wrote = runtime::write_grid(grid_file, *grid, f.run); !wrote) {
    return report_error(wrote.error().message, kExitFailure);
  }
  if (auto ok = ex.check_cluster(); !ok) return report_error(ok.error().message, kExitFailure);
  sim::ValidationTargets targets{
      f.run.out + "/fabrics/profiles.json", {}, runtime::kEmulatedClusterStack};
  if (auto wrote = runtime::write_profile_fabrics(targets.profile_fabrics, grid->profiles);
      !wrote) {
    return report_error(wrote.error().message, kExitFailure);
  }

  // Measurements: the micro-benchmarks, then every training configuration.
  const auto t_start = std::chrono::steady_clock::now();
  reports::ValidationReport rep;
  std::vector<std::string> profiles;
  for (const auto& p : grid->profiles) profiles.push_back(p.name);
  // With repeats, in rounds over the whole grid (the micro-benchmarks, then every configuration),
  // so that a configuration's repeats are minutes apart rather than back to back; each
  // configuration's measured time is then the median of its repeats', its trace the repeat whose
  // slowest rank computes the median time, and each micro-benchmark the median of its repeats
  // per size and column.
  std::map<std::pair<std::size_t, int>, std::vector<model::Expected<std::string>>> bench_logs;
  sim::Validator validator(!f.no_cpu_model, f.network_model);
  const auto runs = grid->runs();
  std::vector<std::vector<runtime::Measurement>> got(runs.size());
  for (int repeat = 0; repeat < f.run.repeats; ++repeat) {
    for (std::size_t p = 0; p < grid->profiles.size(); ++p) {
      for (int r : grid->ranks) {
        bench_logs[{p, r}].push_back(ex.benchmark(grid->profiles[p], r, repeat));
      }
    }
    for (std::size_t i = 0; i < runs.size(); ++i) got[i].push_back(ex.train(runs[i], repeat));
  }
  auto benchmark = [&](std::size_t p, int r) {
    return sim::merge_benchmark_repeats(bench_logs[{p, r}], f.run.bench_iterations);
  };
  targets.calibrate(profiles, grid->ranks, benchmark, f.run.out + "/fabrics", rep.problems);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<sim::MeasuredRun> repeats;
    for (const auto& m : got[i]) {
      if (!m.ok) {
        rep.problems.push_back(runs[i].dir_name(static_cast<int>(repeats.size())) + ": " + m.error);
      }
      repeats.push_back({runs[i].profile, runs[i].ranks, runs[i].overlap, runs[i].model->name,
                         m.run_dir, m.ok, m.mean_s, m.p50_s, m.cpus, m.error});
    }
    rep.measured.push_back(validator.median_of_repeats(repeats, rep.problems));
  }
  if (runtime::stop_signal() != 0) {
    return report_error("interrupted by signal " + std::to_string(runtime::stop_signal()),
                        kExitFailure);
  }

  // Each configuration predicted from the same configuration on every other profile; each
  // replay's own report beside the table, for a closer look.
  auto keep = [&](const sim::ValidationPrediction& p, const sim::TracedWorkload& w) {
    return model::write_file(f.run.out + "/" + reports::validation_replay_file(rep.measured, p),
                             reports::replay_json(w.run(), w.dag(), *p.replay), true);
  };
  rep.predictions = validator.predict_all(rep.measured, targets, keep, rep.problems);

  rep.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  rep.iterations = f.run.iterations;
  rep.warmup = f.run.warmup;
  rep.batch = f.run.batch;
  rep.ranks_per_host = f.run.ranks_per_host;
  rep.repeats = f.run.repeats;
  rep.host_cpu_model = !f.no_cpu_model;
  rep.network_model = f.network_model;
  for (const auto& p : grid->profiles) {
    rep.profiles.push_back({p.name, p.tc_rate, p.rate_gbps, p.latency_us});
  }
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  print(reports::validation_table(rep));
  const std::string json_path = f.run.out + "/validation.json";
  auto wrote = model::write_file(json_path, reports::validation_json(rep), true);
  if (!wrote) return report_error(wrote.error().message, kExitFailure);
  std::printf("wrote %s\n", json_path.c_str());
  for (const auto& p : rep.problems) std::fprintf(stderr, "validate: problem: %s\n", p.c_str());
  return rep.problems.empty() ? kExitOk : kExitFailure;
}

constexpr const char* kValidateHelp =
    "Train on the emulated cluster (tools/emucluster; needs root) under several shaped "
    "fabrics, predict each run from a trace taken on another fabric with `dagsgd replay`, and "
    "print the error table (docs/validation.md)";

}  // namespace

void add_validate(CLI::App& root, Action& action) {
  auto [cmd, f] = add_command<ValidateFlags>(root, action, "validate", kValidateHelp, run_validate);
  f->app = cmd;
  f->run.out = "validation";
  cmd->add_option("--profiles", f->names.profiles, "fabric profiles (emu-600m,emu-250m,emu-100m)")
      ->delimiter(',');
  cmd->add_option("--ranks", f->names.ranks, "rank counts (2,4)")->delimiter(',');
  cmd->add_option("--overlap", f->names.overlaps, "overlap policies (none,wfbp)")->delimiter(',');
  cmd->add_option("--models", f->names.models,
                  "models: cnn (compute-heavy; runs 4x --iterations), mlp-wide "
                  "(communication-heavy), mlp-mid, fc-small (2x), fc-wide (cnn,mlp-wide)")
      ->delimiter(',');
  cmd->add_option("--ranks-per-host", f->run.ranks_per_host, "MPI ranks per emulated host (1)")
      ->check(worker_count());
  cmd->add_option("--iterations", f->run.iterations,
                  "training iterations per run (20; cnn's runs 4x as many, fc-small's 2x)")
      ->check(whole_number(3, 100000));
  cmd->add_option("--warmup", f->run.warmup, "leading iterations left out of the mean (4)")
      ->check(whole_number(0, 100000));
  cmd->add_option("--batch", f->run.batch, "mini-batch per rank (64)")
      ->check(whole_number(1, 65536));  // what `dagsgd train --batch` takes
  cmd->add_option("--bench-iterations", f->run.bench_iterations,
                  "micro-benchmark iterations per size (10)")
      ->check(whole_number(1, 1000000));  // what dagsgd-allreduce-bench takes
  cmd->add_option("--repeats", f->run.repeats,
                  "training runs per configuration and micro-benchmarks per profile, in rounds "
                  "over the grid: measured as their median iteration, predicted from the repeat "
                  "of median compute, calibrated on the benchmarks' median per size (1)")
      ->check(whole_number(1, runtime::kMaxRepeats));
  cmd->add_option("--out", f->run.out, "output directory (validation)");
  cmd->add_option("--profiles-file", f->run.profiles_file,
                  "profile data (datasets/hardware/emucluster_profiles.json)");
  cmd->add_option("--emucluster", f->run.cluster, "the cluster script (tools/emucluster)");
  cmd->add_option("--bench", f->run.bench, "dagsgd-allreduce-bench (found beside dagsgd)");
  cmd->add_flag("--no-cpu-model", f->no_cpu_model,
                "replay with the traced compute durations as they are, instead of running the "
                "ranks' computation on the machine's cores (replay --cpus)");
  cmd->add_option("--network-model", f->network_model,
                  "flow: collectives in flight share the target's links (default); analytic: "
                  "each priced alone, bodies one after another")
      ->check(CLI::IsMember({"flow", "analytic"}));
  cmd->add_flag("--reuse", f->run.reuse,
                "reuse run directories and benchmark logs already in --out and measure only the "
                "runs it lacks; without grid flags, the grid recorded in OUT/grid.json");
  cmd->add_flag("--quick", f->names.quick,
                "the short CI version: emu-600m and emu-250m, 2 ranks, wfbp, mlp-wide, 15 "
                "iterations");
}

}  // namespace dagsgd::tools
