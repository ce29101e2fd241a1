// `dagsgd validate`: the validation campaign (validate/campaign.h: real training on the emulated
// cluster under several shaped fabrics, each run predicted from a trace taken on another fabric)
// from its flags, and the error table (reports/validation_report.h).
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/validation_report.h"
#include "dagsgd/validate/campaign.h"

namespace dagsgd::tools {
namespace {

struct ValidateFlags {
  validate::CampaignSettings c;
  bool no_cpu_model = false;
  const CLI::App* app = nullptr;
};

// The flags that choose the grid and how each run is measured (recorded in OUT/grid.json).
constexpr const char* kGridFlags[] = {
    "--profiles", "--ranks", "--overlap",        "--models",           "--quick",  "--iterations",
    "--warmup",   "--batch", "--ranks-per-host", "--bench-iterations", "--repeats"};

int run_validate(const ValidateFlags& f) {
  validate::CampaignSettings s = f.c;
  for (const char* name : kGridFlags) s.grid_named = s.grid_named || f.app->count(name) > 0;
  s.host_cpu_model = !f.no_cpu_model;
  std::vector<std::string> notes;
  auto campaign = validate::Campaign::prepare(s, notes);
  for (const auto& note : notes) print_note("validate: " + note + "\n");
  if (!campaign) return report_error(campaign.error().message);
  auto rep = campaign->run();
  if (!rep) return report_error(rep.error().message, kExitFailure);
  print(reports::validation_table(*rep));
  const std::string json_path = s.run.out + "/validation.json";
  auto wrote = model::write_file(json_path, reports::validation_json(*rep), true);
  if (!wrote) return report_error(wrote.error().message, kExitFailure);
  std::printf("wrote %s\n", json_path.c_str());
  for (const auto& p : rep->problems) std::fprintf(stderr, "validate: problem: %s\n", p.c_str());
  return rep->problems.empty() ? kExitOk : kExitFailure;
}

constexpr const char* kValidateHelp =
    "Train on the emulated cluster (tools/emucluster; needs root) under several shaped "
    "fabrics, predict each run from a trace taken on another fabric with `dagsgd replay`, and "
    "print the error table (docs/validation.md)";

}  // namespace

void add_validate(CLI::App& root, Action& action) {
  auto [cmd, f] = add_command<ValidateFlags>(root, action, "validate", kValidateHelp, run_validate);
  f->app = cmd;
  f->c.run.out = "validation";
  cmd->add_option("--profiles", f->c.names.profiles, "fabric profiles (emu-600m,emu-250m,emu-100m)")
      ->delimiter(',');
  cmd->add_option("--ranks", f->c.names.ranks, "rank counts (2,4)")->delimiter(',');
  cmd->add_option("--overlap", f->c.names.overlaps, "overlap policies (none,wfbp)")->delimiter(',');
  cmd->add_option("--models", f->c.names.models,
                  "models: cnn (compute-heavy; runs 4x --iterations), mlp-wide "
                  "(communication-heavy), mlp-mid, fc-small (2x), fc-wide (cnn,mlp-wide)")
      ->delimiter(',');
  cmd->add_option("--ranks-per-host", f->c.run.ranks_per_host, "MPI ranks per emulated host (1)")
      ->check(worker_count());
  cmd->add_option("--iterations", f->c.run.iterations,
                  "training iterations per run (20; cnn's runs 4x as many, fc-small's 2x)")
      ->check(whole_number(3, 100000));
  cmd->add_option("--warmup", f->c.run.warmup, "leading iterations left out of the mean (4)")
      ->check(whole_number(0, 100000));
  cmd->add_option("--batch", f->c.run.batch, "mini-batch per rank (64)")
      ->check(whole_number(1, 65536));  // what `dagsgd train --batch` takes
  cmd->add_option("--bench-iterations", f->c.run.bench_iterations,
                  "micro-benchmark iterations per size (10)")
      ->check(whole_number(1, 1000000));  // what dagsgd-allreduce-bench takes
  cmd->add_option("--repeats", f->c.run.repeats,
                  "training runs per configuration and micro-benchmarks per profile, in rounds "
                  "over the grid: measured as their median iteration, predicted from the repeat "
                  "of median compute, calibrated on the benchmarks' median per size (1)")
      ->check(whole_number(1, runtime::kMaxRepeats));
  cmd->add_option("--out", f->c.run.out, "output directory (validation)");
  cmd->add_option("--profiles-file", f->c.run.profiles_file,
                  "profile data (datasets/hardware/emucluster_profiles.json)");
  cmd->add_option("--emucluster", f->c.run.cluster, "the cluster script (tools/emucluster)");
  cmd->add_option("--bench", f->c.run.bench, "dagsgd-allreduce-bench (found beside dagsgd)");
  cmd->add_flag("--no-cpu-model", f->no_cpu_model,
                "replay with the traced compute durations as they are, instead of running the "
                "ranks' computation on the machine's cores (replay --cpus)");
  cmd->add_option("--network-model", f->c.network_model,
                  "flow: collectives in flight share the target's links (default); analytic: "
                  "each priced alone, bodies one after another")
      ->check(CLI::IsMember({"flow", "analytic"}));
  cmd->add_flag("--reuse", f->c.run.reuse,
                "reuse run directories and benchmark logs already in --out and measure only the "
                "runs it lacks; without grid flags, the grid recorded in OUT/grid.json");
  cmd->add_flag("--quick", f->c.names.quick,
                "the short CI version: emu-600m and emu-250m, 2 ranks, wfbp, mlp-wide, 15 "
                "iterations");
}

}  // namespace dagsgd::tools
