// The flags of `dagsgd validate` (campaign.h): one row per setting of the campaign.
#include <algorithm>

#include "dagsgd/validate/campaign.h"

namespace dagsgd::validate {

const std::vector<model::FlagSpec<CampaignSettings>>& campaign_flags() {
  using S = CampaignSettings;
  using N = runtime::ExperimentNames;
  using R = runtime::ExperimentSettings;
  using model::flag_field;
  using model::whole_number_range;
  static const std::vector<model::FlagSpec<S>> table = {
      {.name = "--profiles",
       .field = flag_field(&S::names, &N::profiles),
       .help = "fabric profiles (emu-600m,emu-250m,emu-100m)",
       .list = true},
      {.name = "--ranks",
       .field = flag_field(&S::names, &N::ranks),
       .help = "rank counts (2,4)",
       .range = model::worker_count_range(),
       .list = true},
      {.name = "--overlap",
       .field = flag_field(&S::names, &N::overlaps),
       .help = "overlap policies (none,wfbp)",
       .list = true},
      {.name = "--exchange",
       .field = flag_field(&S::names, &N::exchanges),
       .help = "gradient exchanges of `dagsgd train`: allreduce, rsag (reduce-scatter, then "
               "all-gather), asa (alltoall, sum, allgather) (allreduce)",
       .list = true},
      {.name = "--models",
       .field = flag_field(&S::names, &N::models),
       .help = "models: cnn (compute-heavy; runs 4x --iterations), mlp-wide "
               "(communication-heavy), mlp-mid, fc-small (2x), fc-wide (cnn,mlp-wide)",
       .list = true},
      {.name = "--ranks-per-host",
       .field = flag_field(&S::run, &R::ranks_per_host),
       .help = "MPI ranks per emulated host (1)",
       .range = model::worker_count_range()},
      {.name = "--iterations",
       .field = flag_field(&S::run, &R::iterations),
       .help = "training iterations per run (20; cnn's runs 4x as many, fc-small's 2x)",
       .range = whole_number_range(3, 100000)},
      {.name = "--warmup",
       .field = flag_field(&S::run, &R::warmup),
       .help = "leading iterations left out of the mean (4)",
       .range = whole_number_range(0, 100000)},
      {.name = "--batch",  // what `dagsgd train --batch` takes
       .field = flag_field(&S::run, &R::batch),
       .help = "mini-batch per rank (64)",
       .range = whole_number_range(1, 65536)},
      {.name = "--bench-iterations",  // what dagsgd-allreduce-bench takes
       .field = flag_field(&S::run, &R::bench_iterations),
       .help = "micro-benchmark iterations per size (10)",
       .range = whole_number_range(1, 1000000)},
      {.name = "--repeats",
       .field = flag_field(&S::run, &R::repeats),
       .help = "training runs per configuration and micro-benchmarks per profile, in rounds over "
               "the grid: measured as their median iteration, predicted from the repeat of median "
               "compute, calibrated on the benchmarks' median per size (1)",
       .range = whole_number_range(1, runtime::kMaxRepeats)},
      {.name = "--out",
       .field = flag_field(&S::run, &R::out),
       .help = "output directory (validation)"},
      {.name = "--profiles-file",
       .field = flag_field(&S::run, &R::profiles_file),
       .help = "profile data (datasets/hardware/emucluster_profiles.json)"},
      {.name = "--emucluster",
       .field = flag_field(&S::run, &R::cluster),
       .help = "the cluster script (tools/emucluster)"},
      {.name = "--bench",
       .field = flag_field(&S::run, &R::bench),
       .help = "dagsgd-allreduce-bench (found beside dagsgd)"},
      {.name = "--network-model",
       .field = flag_field(&S::network_model),
       .help = "flow: collectives in flight share the target's links (default); analytic: each "
               "priced alone, bodies one after another",
       .choices = {"flow", "analytic"}},
      {.name = "--reuse",
       .field = flag_field(&S::run, &R::reuse),
       .help = "reuse run directories and benchmark logs already in --out and measure only the "
               "runs it lacks; without grid flags, the grid recorded in OUT/grid.json"},
      {.name = "--quick",
       .field = flag_field(&S::names, &N::quick),
       .help = "the short CI version: emu-600m and emu-250m, 2 ranks, wfbp, mlp-wide, 15 "
               "iterations"},
  };
  return table;
}

bool names_the_grid(const std::vector<std::string>& given) {
  static const char* const kGridFlags[] = {
      "--profiles", "--ranks",          "--overlap",          "--exchange",
      "--models",   "--quick",          "--iterations",       "--warmup",
      "--batch",    "--ranks-per-host", "--bench-iterations", "--repeats"};
  return std::any_of(given.begin(), given.end(), [](const std::string& g) {
    return std::find(std::begin(kGridFlags), std::end(kGridFlags), g) != std::end(kGridFlags);
  });
}

}  // namespace dagsgd::validate
