// The flags of `dagsgd calibrate` (calibrate_run.h): one row per setting of a CalibrationRequest.
#include "dagsgd/model/registry.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/sim/calibrate_run.h"

namespace dagsgd::sim {

const std::vector<model::FlagSpec<CalibrationRequest>>& calibration_flags() {
  using R = CalibrationRequest;
  using model::flag_field;
  static const std::vector<model::FlagSpec<R>> table = {
      {.name = "logs",
       .field = flag_field(&R::logs),
       .help = "benchmark logs (OSU '# Size Avg Latency(us)' or nccl-tests); several logs (one "
               "per rank count) are fitted together"},
      {.name = "--trace",
       .field = flag_field(&R::trace),
       .help = "with --stack: fit to a traced run's own allreduces instead (those alone in flight "
               "after the warm-up; --call defaults to the stack framework's call)"},
      {.name = "--ranks",
       .field = flag_field(&R::ranks),
       .help = "ranks of the allreduce, for one log (default: the trailing number of the file "
               "name, e.g. allreduce4.log -> 4, or the count the log states)",
       .range = model::worker_count_range()},
      {.name = "--algorithm",
       .field = flag_field(&R::algorithm),
       .help = "the formula to fit: " +
               model::NameRegistry("", model::calibration_algorithm_names()).list() +
               " (default ring)"},
      {.name = "--name",
       .field = flag_field(&R::name),
       .help = "the fabric entry's name (default: the logs' file stems joined by '+')"},
      {.name = "--description",
       .field = flag_field(&R::description),
       .help = "what the link is (the entry's description says what was fitted after it)"},
      {.name = "--scope",
       .field = flag_field(&R::scope),
       .help = "the entry's scope: intra, inter (default) or both"},
      {.name = "--nominal-gbps",
       .field = flag_field(&R::nominal_gbps),
       .help = "the link's line rate in Gbit/s for the entry (default: the fitted bandwidth)",
       .range = model::positive_finite_range()},
      {.name = "--no-step",
       .field = flag_field(&R::no_step),
       .help = "fit alpha and beta only, without a step"},
      {.name = "--statistic",
       .field = flag_field(&R::statistic),
       .help = "which latency to use: max (the slowest rank; a replayed collective ends when its "
               "last rank has the result), avg, or auto (default: max when the log has a 'Max "
               "Latency(us)' column, as OSU's -f table and dagsgd-allreduce-bench do)"},
      {.name = "--no-measured",
       .field = flag_field(&R::no_measured),
       .help = "leave the log's latencies out of the entry (by default they are kept as "
               "'allreduce_measured' and price allreduces of that rank count in place of the "
               "fit)"},
      {.name = "--stack",
       .field = flag_field(&R::stack),
       .help = "transfer calibration: fit this software stack's library parameters (" +
               model::bundled_stacks().list() +
               ", a name of 'dagsgd stack list', or a stack file) on the known --link and write "
               "a stack file for --stack FILE on predict, whatif and replay "
               "(docs/communication.md)"},
      {.name = "--link",
       .field = flag_field(&R::link),
       .help = "with --stack: the fabric the benchmark crossed (a catalog name, or one of "
               "--fabric-file)"},
      {.name = "--fabric-file",
       .field = flag_field(&R::fabric_file),
       .help = "with --stack: extra fabric definitions",
       .existing_file = true},
      {.name = "--ranks-per-node",
       .field = flag_field(&R::ranks_per_node),
       .help = "with --stack: the benchmark's ranks per node (default 1: every rank on its own "
               "node; equal to the rank count: one node)",
       .range = model::worker_count_range()},
      {.name = "--call",
       .field = flag_field(&R::call),
       .help = "with --stack: the call the benchmark timed: allreduce (OSU osu_allreduce, "
               "nccl-tests; default), iallreduce, iallreduce_in_place"},
  };
  return table;
}

}  // namespace dagsgd::sim
