// The flags of a network spec (scenario.h): one row per field of NetworkSpec.
#include <limits>

#include "dagsgd/model/job_effects.h"
#include "dagsgd/sim/scenario.h"

namespace dagsgd::sim {

const std::vector<model::FlagSpec<NetworkSpec>>& network_spec_flags() {
  using N = NetworkSpec;
  using model::flag_field;
  static const std::vector<model::FlagSpec<N>> table = {
      {.name = "--network",
       .field = flag_field(&N::network),
       .help = "Bundled network name (alexnet, googlenet, resnet50, vgg16, bert-base, ...) or a "
               "network definition file"},
      {.name = "--batch",
       .field = flag_field(&N::batch),
       .help = "Samples per GPU per iteration (a traced run: per rank; default: its manifest)",
       .range = model::whole_number_range(1, std::numeric_limits<int>::max()),
       .show_default = true},
      {.name = "--gpu",
       .field = flag_field(&N::gpu),
       .help = "GPU (or CPU node) from the catalog: k80, p100, v100, a100, ...",
       .show_default = true},
      {.name = "--step-time",
       .field = flag_field(&N::step_time_s),
       .help = "Measured single-GPU iteration time in seconds; layer times are scaled to it",
       .range = model::duration_seconds_range(false)},
      {.name = "--layer-profile",
       .field = flag_field(&N::layer_profile),
       .help = "Per-layer backward profile (B-Caffe log format) for the network's layers",
       .existing_file = true},
      {.name = "--sync",
       .field = flag_field(&N::sync),
       .help = "bsp, or easgd:TAU,ALPHA (elastic averaging every TAU steps)",
       .show_default = true},
      {.name = "--io-time",
       .field = flag_field(&N::io_time_s),
       .help = "Seconds to read one batch into host memory",
       .range = model::duration_seconds_range(true)},
      {.name = "--input-rate",
       .field = flag_field(&N::input_rate),
       .help = "Samples/s one node's host input pipeline (decode, augmentation) delivers to all "
               "its GPUs: each GPU loads a batch in batch x gpus-per-node / RATE seconds, "
               "overlapped with the previous iteration unless --prefetch off (default: no limit)",
       .range = model::positive_finite_range()},
      {.name = "--iterations",
       .field = flag_field(&N::iterations),
       .help = "Iterations to simulate (the last is reported)",
       .range = model::whole_number_range(2, 1000),
       .show_default = true},
      // Effects around the wire, on by default for GPU ranks (docs/gpu-effects.md).
      {.name = "--effects",
       .field = flag_field(&N::effects_file),
       .help = "Job-effects file ('dagsgd analyze --effects-out'): its measured compute noise and "
               "compute slowdown beside communication replace the bundled ones",
       .existing_file = true},
      {.name = "--noise-cv",
       .field = flag_field(&N::noise_cv),
       .help = "Per-rank, per-iteration compute noise (std / mean, 0 to 1): each iteration waits "
               "for the slowest rank (default: --effects', else the bundled measurement for a "
               "GPU, none for a CPU node)",
       .range = model::fraction_range()},
      {.name = "--no-effects",
       .field = flag_field(&N::effects_off),
       .help = "Effects around the wire to leave out, comma-separated: " + model::effect_names()},
  };
  return table;
}

}  // namespace dagsgd::sim
