// Scoring cross-fabric predictions against real runs (`dagsgd validate`): a run traced on one
// fabric is replayed onto another fabric's description and compared with the same run measured
// there. The runs themselves are made by runtime/emulated_cluster.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/sim/scenario.h"
#include "dagsgd/sim/trace_replay.h"

namespace dagsgd::sim {

// One measured training run of the grid.
struct MeasuredRun {
  std::string profile;  // the fabric it ran on
  int ranks = 0;
  std::string overlap;
  std::string model;
  std::string run_dir;
  bool ok = false;
  double mean_s = 0;  // mean iteration after the warm-up
  double p50_s = 0;
  int cpus = 0;  // CPUs the ranks shared, 0 when not recorded
  std::string error;
  std::string exchange = "allreduce";  // `dagsgd train --exchange`
  // With `validate --repeats N`: every repeat of this configuration that ran (its directory, mean
  // iteration and its slowest rank's mean computation per iteration); empty with one repeat.
  // `mean_s` (and p50_s, cpus) are then the repeat of median mean iteration, and `run_dir`, the
  // trace predicted from, the repeat whose slowest rank computes the median time: a repeat whose
  // iteration waits on a slow link can hide a rank slowed by the machine that a faster target
  // would show (docs/validation.md, "Repeats").
  struct Repeat {
    std::string run_dir;
    double mean_s = 0;
    double compute_s = 0;
  };
  std::vector<Repeat> repeats;
  // Runs of one configuration on two fabrics predict each other.
  bool same_config(const MeasuredRun& o) const {
    return ranks == o.ranks && overlap == o.overlap && model == o.model && exchange == o.exchange;
  }
};

// What a prediction knows of the target fabric: a catalog entry (e.g. the profile's rate and
// latency, mode (a), or a fit of a micro-benchmark run there, mode (b)), and for mode (c) the
// software stack calibrated on the source's fabric, for mode (d) the stack as bundled.
struct TargetFabric {
  std::string mode;         // "profile", "calibrated", "transfer", "stack"
  std::string fabric_file;  // holds the entry
  std::string fabric_name;
  // The software stack the prediction assumes (none: the fabric entry alone): mode (c)'s stack
  // fitted on the source; under mode (b)'s measured curve it only says which transfers a
  // collective makes (docs/communication.md).
  std::shared_ptr<const model::StackSpec> stack;
};

struct ValidationPrediction {
  std::size_t source = 0;  // indices into the measured runs
  std::size_t target = 0;
  std::string mode;
  double measured_s = 0;
  double predicted_s = 0;
  double error = 0;  // (predicted - measured) / measured
  bool ok = false;
  std::string failure;
  std::shared_ptr<const ReplayResult> replay;  // when ok
};

// The fabric entries a run can be predicted onto: its profile's (mode (a), written by
// runtime::write_profile_fabrics), where the micro-benchmark ran on the target a fit of it
// (mode (b)), where it ran on the source the target's profile entry with the stack fitted
// on the source (mode (c), "transfer"), and the target's profile entry with the runs' stack as
// bundled, nothing fitted (mode (d), "stack").
struct ValidationTargets {
  std::string profile_fabrics;                    // the file with every "<profile>-profile"
  std::map<std::string, std::string> calibrated;  // "<profile>_p<ranks>" -> its fabric file
  // The software stack the runs used (a bundled name or a file; validate gives the emulated
  // cluster's Open MPI): mode (c) fits it on each source, mode (d) takes it as it is, and with
  // mode (b)'s measured curves it decides the collectives' transfers on the flow-level tier.
  // Empty: modes (a), (b) only.
  std::string stack;
  std::shared_ptr<const model::StackSpec> cluster_stack;  // `stack` as calibrate() loaded it
  // Mode (c): "<profile>_p<ranks>" -> the stack fitted there (its file, and as loaded from it).
  std::map<std::string, std::string> transfer;
  std::map<std::string, std::shared_ptr<const model::StackSpec>> transfer_stacks;
  // `target` predicted from `source` (a run of the same configuration on another profile).
  std::vector<TargetFabric> of(const MeasuredRun& source, const MeasuredRun& target) const;
  // Modes (b) and (c) for each of `profiles` and `ranks`: `benchmark(profile, ranks)` runs the
  // micro-benchmark there and gives its log; its fabric fit (write_calibrated_fabric, with the
  // line rate of the profile's entry in `profile_fabrics`) goes to `dir` and into `calibrated`,
  // its stack fit (write_transfer_stack) to `dir` and into `transfer`; what fails goes to
  // `problems`.
  using Benchmark = std::function<model::Expected<std::string>(std::size_t profile, int ranks)>;
  void calibrate(const std::vector<std::string>& profiles, const std::vector<int>& ranks,
                 const Benchmark& benchmark, const std::string& dir,
                 std::vector<std::string>& problems);
};

// Mode (b): fits the allreduce micro-benchmark `log` of `profile` with `ranks` ranks as
// `dagsgd calibrate LOG --ranks R --algorithm ring --nominal-gbps G` would (G: the profile's
// line rate, `nominal_bytes_per_s`; 0: the fit's) and writes the fabric entry
// "<profile>_p<ranks>-calibrated" to `dir`/<that name>.json; returns the file's path.
model::Expected<std::string> write_calibrated_fabric(const std::string& log,
                                                     const std::string& profile, int ranks,
                                                     const std::string& dir,
                                                     double nominal_bytes_per_s = 0);

// Mode (c): fits `base_stack`'s library to the in-place non-blocking allreduce micro-benchmark
// `log` of `profile` with `ranks` ranks, its link being the profile's entry "<profile>-profile"
// of `profile_fabrics`, as `dagsgd calibrate LOG --ranks R --stack BASE --link <profile>-profile
// --fabric-file PROFILE_FABRICS --call iallreduce_in_place` would with the base's bandwidth
// limit an efficiency (emulated_cluster_stack), and writes the stack to
// `dir`/<profile>_p<ranks>-stack.json (for --stack FILE); returns the file's path.
model::Expected<std::string> write_transfer_stack(const std::string& log,
                                                  const std::string& profile, int ranks,
                                                  const std::string& profile_fabrics,
                                                  const std::string& base_stack,
                                                  const std::string& dir);
// `base_stack` as it runs on the emulated cluster: limited by the shaped links, not by its TCP
// streams (library.bandwidth_limit "efficiency", with the reason as its source).
model::Expected<model::StackSpec> emulated_cluster_stack(const std::string& base_stack);

// The logs of one micro-benchmark's repeats (`logs`, in the order they ran) as one log: the only
// one as it is, else per size each column's median (trace::median_latency_log) written beside the
// first as "<first less .log>.median.log", with `iterations` per size and the repeats named in its
// comment; returns its path. A repeat that failed is the error.
model::Expected<std::string> merge_benchmark_repeats(
    const std::vector<model::Expected<std::string>>& logs, int iterations);

// Replays runs onto target fabrics; each source run is read once.
class Validator {
 public:
  // `host_cpu_model`: replay the ranks' computation on the target run's CPUs (the traced
  // durations divided by the source's ranks per CPU first), as every emulated host shares the
  // machine's cores.
  // `network_model`: analytic, or flow (collectives in flight share the target's links).
  Validator(bool host_cpu_model, std::string network_model)
      : host_cpu_model_(host_cpu_model), network_model_(std::move(network_model)) {}
  ValidationPrediction predict(const std::vector<MeasuredRun>& runs, std::size_t source,
                               std::size_t target, const TargetFabric& fabric);
  // Every run that succeeded predicted from the same configuration on every other profile,
  // onto each of its targets; failures go to `problems`. `keep` sees each replay (with the
  // source it replayed) before it is dropped; what it cannot do goes to `problems` too.
  using KeepReplay = std::function<model::Expected<void>(const ValidationPrediction&,
                                                         const TracedWorkload& source)>;
  std::vector<ValidationPrediction> predict_all(const std::vector<MeasuredRun>& runs,
                                                const ValidationTargets& targets,
                                                const KeepReplay& keep,
                                                std::vector<std::string>& problems);
  // The traced run (read once); nullptr with `error` set when it cannot be read.
  const TracedWorkload* source_run(const std::string& dir, std::string& error);
  // The slowest rank's mean computation per iteration of the traced run in `dir` (s).
  model::Expected<double> slowest_compute_s(const std::string& dir);
  // One configuration measured once per repeat (`repeats`, in the order they ran): the repeat of
  // median mean iteration (choose_median_repeat; the first when none succeeded) and, with several,
  // every one that succeeded with its slowest rank's computation, the trace chosen among them by
  // choose_repeat_trace. A trace that cannot be read goes to `problems`.
  MeasuredRun median_of_repeats(const std::vector<MeasuredRun>& repeats,
                                std::vector<std::string>& problems);

 private:
  bool host_cpu_model_;
  std::string network_model_;
  std::map<std::string, std::unique_ptr<TracedWorkload>> runs_;
};

// The repeat whose mean iteration is the median of those that succeeded (`ok`), the lower of
// the two middle ones for an even count; -1 when none succeeded. Ties keep the earlier repeat.
int choose_median_repeat(const std::vector<double>& mean_s, const std::vector<bool>& ok);

// Picks `run`'s trace among its repeats (their compute_s filled in): the median by compute_s.
void choose_repeat_trace(MeasuredRun& run);

// How far the repeats of one configuration lie from its measured mean iteration: the largest
// |mean - measured| / measured; 0 without repeats.
double repeat_spread(const MeasuredRun& run);
struct RepeatSummary {
  int configurations = 0;  // with two repeats or more that succeeded
  double mean_spread = 0;  // of repeat_spread over those configurations
  double worst_spread = 0;
  std::string worst;  // "<profile> p<ranks> <overlap> <model>" of the worst
};
RepeatSummary summarize_repeats(const std::vector<MeasuredRun>& runs);

struct ModeSummary {
  int predictions = 0;  // that succeeded
  int failed = 0;
  double mean_abs_error = 0;
  double worst_abs_error = 0;
};
// Per mode, in mode name order.
std::map<std::string, ModeSummary> summarize(const std::vector<ValidationPrediction>& p);

}  // namespace dagsgd::sim
