// The flags of `dagsgd train` (train_config.h): one row per field of TrainFlags.
#include "dagsgd/runtime/train_config.h"

namespace dagsgd::runtime {

const std::vector<model::FlagSpec<TrainFlags>>& train_flags() {
  using F = TrainFlags;
  using model::flag_field;
  static const std::vector<model::FlagSpec<F>> table = {
      {.name = "--model",
       .field = flag_field(&F::model),
       .help = "mlp, cnn, or a network-spec JSON file of fc/relu layers",
       .show_default = true},
      {.name = "--widths",
       .field = flag_field(&F::widths),
       .help = "hidden layer widths of the mlp (default 256,128)"},
      {.name = "--epochs",
       .field = flag_field(&F::epochs),
       .help = "epochs to train, 1..1000000 (default 1)"},
      {.name = "--iterations",
       .field = flag_field(&F::iterations),
       .help = "stop after this many iterations (>= 1)"},
      {.name = "--batch",
       .field = flag_field(&F::batch),
       .help = "mini-batch size per rank, 1..65536 (default 64)"},
      {.name = "--lr", .field = flag_field(&F::lr), .help = "learning rate, > 0 (default 0.05)"},
      {.name = "--momentum",
       .field = flag_field(&F::momentum),
       .help = "SGD momentum, in [0, 1) (default 0.9)"},
      {.name = "--seed",
       .field = flag_field(&F::seed),
       .help = "seed of initialization and data order (default 1)"},
      {.name = "--exchange",
       .field = flag_field(&F::exchange),
       .help = "gradient exchange: allreduce, ps, asa (alltoall, sum, allgather), rsag "
               "(reduce-scatter, then all-gather of the averaged shards)",
       .show_default = true},
      {.name = "--overlap",
       .field = flag_field(&F::overlap),
       .help = "none, wfbp, or bucket:MB (MiB)",
       .show_default = true},
      {.name = "--precision",
       .field = flag_field(&F::precision),
       .help = "fp32 or fp16 on the wire",
       .show_default = true},
      {.name = "--topk",
       .field = flag_field(&F::topk),
       .help = "sparsify: exchange this fraction of gradients, in (0, 1]"},
      {.name = "--sync",
       .field = flag_field(&F::sync),
       .help = "bsp, or easgd:TAU,ALPHA",
       .show_default = true},
      {.name = "--trace", .field = flag_field(&F::trace), .help = "write a run directory here"},
      {.name = "--force",
       .field = flag_field(&F::force),
       .help = "overwrite a non-empty --trace directory"},
      {.name = "--data",
       .field = flag_field(&F::data),
       .help = std::string("Fashion-MNIST directory (default ") + kFashionMnistDir + ")"},
      {.name = "--warmup",
       .field = flag_field(&F::warmup),
       .help = "iterations left out of the timing statistics (default 2)"},
      {.name = "--no-eval",
       .field = flag_field(&F::no_eval),
       .help = "skip the test-set evaluation"},
      {.name = "--device",
       .field = flag_field(&F::device),
       .help = "cpu, or cuda (mlp and fc/relu FILE models; one GPU per rank)",
       .show_default = true},
  };
  return table;
}

}  // namespace dagsgd::runtime
