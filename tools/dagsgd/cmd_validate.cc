// `dagsgd validate`: real training on the emulated cluster under several shaped fabrics
// (runtime/emulated_cluster.h), each run predicted from a trace taken on another fabric
// (sim/validation.h), and the error table (reports/validation_report.h).
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/reports/trace_report.h"
#include "dagsgd/reports/validation_report.h"
#include "dagsgd/runtime/emulated_cluster.h"
#include "dagsgd/runtime/process.h"
#include "dagsgd/sim/calibrate.h"
#include "dagsgd/sim/validation.h"

namespace dagsgd::tools {
namespace {

namespace fs = std::filesystem;

struct ValidateFlags {
  std::vector<std::string> profiles{"emu-600m", "emu-250m", "emu-100m"};
  std::vector<int> ranks{2, 4};
  std::vector<std::string> overlaps{"none", "wfbp"};
  std::vector<std::string> models{"cnn", "mlp-wide"};
  runtime::ExperimentSettings run;
  bool quick = false;
  bool no_cpu_model = false;
  std::string network_model = "flow";
};

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// The flags' names resolved: the profiles and models of the grid; the tools' paths.
struct Grid {
  std::vector<runtime::ClusterProfile> profiles;
  std::vector<const runtime::TrainingModel*> models;
};

model::Expected<Grid> resolve_grid(ValidateFlags& f) {
  if (f.quick) {
    f.profiles = {"emu-600m", "emu-100m"};
    f.ranks = {2};
    f.overlaps = {"wfbp"};
    f.models = {"mlp-wide"};
    f.run.iterations = 15;
    f.run.warmup = 3;
  }
  if (f.run.warmup >= f.run.iterations) {
    return model::Error{"--warmup (" + std::to_string(f.run.warmup) +
                        ") must be below --iterations (" + std::to_string(f.run.iterations) + ")"};
  }
  const fs::path root = fs::path(model::data_dir()).parent_path();
  if (f.run.profiles_file.empty()) {
    f.run.profiles_file = model::data_path("hardware/emucluster_profiles.json");
  }
  if (f.run.cluster.empty()) f.run.cluster = (root / "tools" / "emucluster").string();
  if (!fs::is_regular_file(f.run.cluster)) {
    return model::Error{"cannot find the cluster script '" + f.run.cluster +
                        "'; pass --emucluster"};
  }
  f.run.dagsgd = runtime::self_exe("dagsgd");
  if (f.run.bench.empty()) {
    const fs::path dir = fs::path(f.run.dagsgd).parent_path();
    for (const fs::path& c : {dir / ".." / "runtime" / "bench" / "dagsgd-allreduce-bench",
                              dir / "dagsgd-allreduce-bench"}) {
      if (f.run.bench.empty() && fs::is_regular_file(c)) f.run.bench = fs::weakly_canonical(c);
    }
    if (f.run.bench.empty()) {
      return model::Error{"cannot find dagsgd-allreduce-bench beside " + f.run.dagsgd +
                          "; build that target or pass --bench"};
    }
  } else if (!fs::is_regular_file(f.run.bench)) {
    return model::Error{"--bench '" + f.run.bench + "' is not a file"};
  }
  Grid g;
  auto all = runtime::load_cluster_profiles(f.run.profiles_file);
  if (!all) return all.error();
  std::vector<std::string> names;
  for (const auto& p : *all) names.push_back(p.name);
  const model::NameRegistry profiles("profile", names);
  for (const auto& name : f.profiles) {
    DAGSGD_TRY(profiles.check(name));
    for (const auto& p : *all) {
      if (p.name == name) g.profiles.push_back(p);
    }
  }
  if (g.profiles.size() < 2) {
    return model::Error{"--profiles needs at least two profiles (a source and a target)"};
  }
  names.clear();
  for (const auto& m : runtime::training_models()) names.push_back(m.name);
  const model::NameRegistry models("model", names);
  for (const auto& name : f.models) {
    DAGSGD_TRY(models.check(name));
    for (const auto& m : runtime::training_models()) {
      if (m.name == name) g.models.push_back(&m);
    }
  }
  for (int r : f.ranks) {
    if (r < 2 || r % f.run.ranks_per_host != 0) {
      return model::Error{"--ranks " + std::to_string(r) +
                          ": needs at least 2 ranks and a multiple of --ranks-per-host (" +
                          std::to_string(f.run.ranks_per_host) + ")"};
    }
  }
  for (const auto& o : f.overlaps) {
    if (o != "none" && o != "wfbp") {
      return model::Error{"--overlap '" + o + "': valid values are none, wfbp"};
    }
  }
  return g;
}

// Mode (a): every profile as a fabric entry, its tc rate and its measured natural latency.
model::Expected<std::string> write_profile_fabrics(const std::string& out, const Grid& g) {
  nlohmann::ordered_json fabrics = nlohmann::ordered_json::array();
  for (const auto& p : g.profiles) {
    fabrics.push_back(
        {{"name", p.name + "-profile"},
         {"description", "emulated cluster profile " + p.name + " (tc rate " + p.tc_rate + ")"},
         {"scope", "both"},
         {"nominal_gbps", p.rate_gbps},
         {"achievable_gbps", p.rate_gbps},
         {"latency_us", p.latency_us},
         {"source", p.source}});
  }
  const std::string path = out + "/fabrics/profiles.json";
  DAGSGD_TRY(
      model::write_file(path, nlohmann::ordered_json{{"fabrics", fabrics}}.dump(2) + "\n", true));
  return path;
}

// Mode (b): the micro-benchmark on the profile, fitted as `dagsgd calibrate` would.
model::Expected<std::string> calibrated_fabric(const runtime::Experiments& ex,
                                               const runtime::ClusterProfile& p, int ranks,
                                               const std::string& out) {
  auto log = ex.benchmark(p, ranks);
  if (!log) return log.error();
  const std::string stem = p.name + "_p" + std::to_string(ranks);
  auto bench = sim::read_benchmark_log(*log, ranks, sim::LatencyStatistic::kAuto);
  if (!bench) return bench.error();
  sim::EntrySettings s;
  s.name = stem + "-calibrated";
  s.description = "emulated cluster profile " + p.name + ", " + std::to_string(ranks) + " ranks";
  s.scope = "both";
  s.command =
      "dagsgd calibrate " + *log + " --ranks " + std::to_string(ranks) + " --algorithm ring";
  auto c = sim::calibrate_logs({*bench}, s);
  if (!c) return c.error();
  const std::string path = out + "/fabrics/" + stem + "-calibrated.json";
  DAGSGD_TRY(model::write_file(path, model::fabric_to_json(c->fabric) + "\n", true));
  return path;
}

int run_validate(const ValidateFlags& flags) {
  ValidateFlags f = flags;
  auto grid = resolve_grid(f);
  if (!grid) return report_error(grid.error().message);
  const runtime::Experiments ex(f.run);
  if (auto made = ex.make_directories(); !made) return report_error(made.error().message);
  if (auto ok = ex.check_cluster(); !ok) return report_error(ok.error().message, kExitFailure);
  auto profile_fabrics = write_profile_fabrics(f.run.out, *grid);
  if (!profile_fabrics) return report_error(profile_fabrics.error().message, kExitFailure);

  // Measurements: the micro-benchmarks, then every training configuration.
  const double t_start = now_s();
  reports::ValidationReport rep;
  std::map<std::string, std::string> calibrated;  // profile_pR -> fabric file
  for (const auto& p : grid->profiles) {
    for (int r : f.ranks) {
      auto file = calibrated_fabric(ex, p, r, f.run.out);
      if (file) {
        calibrated[p.name + "_p" + std::to_string(r)] = *file;
      } else {
        rep.problems.push_back(file.error().message);
      }
    }
  }
  for (const auto* m : grid->models) {
    for (int r : f.ranks) {
      for (const auto& o : f.overlaps) {
        for (const auto& p : grid->profiles) {
          const runtime::ExperimentRun run{p.name, r, o, m};
          const runtime::Measurement got = ex.train(run);
          if (!got.ok) rep.problems.push_back(run.id() + ": " + got.error);
          rep.measured.push_back({p.name, r, o, m->name, got.run_dir, got.ok, got.mean_s, got.p50_s,
                                  got.cpus, got.error});
        }
      }
    }
  }
  if (runtime::stop_signal() != 0) {
    return report_error("interrupted by signal " + std::to_string(runtime::stop_signal()),
                        kExitFailure);
  }

  // Each configuration predicted from the same configuration on every other profile.
  sim::Validator validator(!f.no_cpu_model, f.network_model);
  const auto& runs = rep.measured;
  for (std::size_t t = 0; t < runs.size(); ++t) {
    for (std::size_t s = 0; s < runs.size() && runs[t].ok; ++s) {
      if (s == t || !runs[s].ok || !runs[s].same_config(runs[t])) continue;
      std::vector<sim::TargetFabric> targets = {
          {"profile", *profile_fabrics, runs[t].profile + "-profile"}};
      const std::string key = runs[t].profile + "_p" + std::to_string(runs[t].ranks);
      if (calibrated.count(key) != 0) {
        targets.push_back({"calibrated", calibrated[key], key + "-calibrated"});
      }
      for (const auto& target : targets) {
        auto p = validator.predict(runs, s, t, target);
        if (!p.ok) rep.problems.push_back(p.failure);
        if (p.replay) {
          // The replay's own report beside the table, for a closer look.
          std::string error;
          const sim::TracedWorkload* w = validator.source_run(runs[s].run_dir, error);
          const std::string path = f.run.out + "/predictions/replay_" + runs[s].profile + "_to_" +
                                   runs[t].profile + "_p" + std::to_string(runs[t].ranks) + "_" +
                                   runs[t].overlap + "_" + runs[t].model + "_" + p.mode + ".json";
          auto saved =
              model::write_file(path, reports::replay_json(w->run(), w->dag(), *p.replay), true);
          if (!saved) rep.problems.push_back(saved.error().message);
          p.replay.reset();
        }
        rep.predictions.push_back(std::move(p));
      }
    }
  }

  rep.cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  rep.iterations = f.run.iterations;
  rep.warmup = f.run.warmup;
  rep.batch = f.run.batch;
  rep.ranks_per_host = f.run.ranks_per_host;
  rep.host_cpu_model = !f.no_cpu_model;
  rep.network_model = f.network_model;
  for (const auto& p : grid->profiles) {
    rep.profiles.push_back({p.name, p.tc_rate, p.rate_gbps, p.latency_us});
  }
  rep.wall_s = now_s() - t_start;
  print(reports::validation_table(rep));
  const std::string json_path = f.run.out + "/validation.json";
  auto wrote = model::write_file(json_path, reports::validation_json(rep), true);
  if (!wrote) return report_error(wrote.error().message, kExitFailure);
  std::printf("wrote %s\n", json_path.c_str());
  for (const auto& p : rep.problems) std::fprintf(stderr, "validate: problem: %s\n", p.c_str());
  return rep.problems.empty() ? kExitOk : kExitFailure;
}

constexpr const char* kHelp =
    "Train on the emulated cluster (tools/emucluster; needs root) under several shaped "
    "fabrics, predict each run from a trace taken on another fabric with `dagsgd replay`, and "
    "print the error table (docs/validation.md)";

}  // namespace

void add_validate(CLI::App& root, Action& action) {
  auto [cmd, f] = add_command<ValidateFlags>(root, action, "validate", kHelp, run_validate);
  f->run.out = "validation";
  cmd->add_option("--profiles", f->profiles, "fabric profiles (emu-600m,emu-250m,emu-100m)")
      ->delimiter(',');
  cmd->add_option("--ranks", f->ranks, "rank counts (2,4)")->delimiter(',');
  cmd->add_option("--overlap", f->overlaps, "overlap policies (none,wfbp)")->delimiter(',');
  cmd->add_option("--models", f->models,
                  "models: cnn (compute-heavy), mlp-wide (communication-heavy), fc-small, "
                  "fc-wide (cnn,mlp-wide)")
      ->delimiter(',');
  cmd->add_option("--ranks-per-host", f->run.ranks_per_host, "MPI ranks per emulated host (1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--iterations", f->run.iterations, "training iterations per run (20)")
      ->check(CLI::Range(3, 100000));
  cmd->add_option("--warmup", f->run.warmup, "leading iterations left out of the mean (4)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch", f->run.batch, "mini-batch per rank (64)")->check(CLI::PositiveNumber);
  cmd->add_option("--bench-iterations", f->run.bench_iterations,
                  "micro-benchmark iterations per size (10)")
      ->check(CLI::PositiveNumber);
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
                "reuse run directories and benchmark logs already in --out (re-predict only)");
  cmd->add_flag("--quick", f->quick,
                "the short CI version: emu-600m and emu-100m, 2 ranks, wfbp, mlp-wide, 15 "
                "iterations");
}

}  // namespace dagsgd::tools
