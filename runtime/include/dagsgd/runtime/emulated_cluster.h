// Real runs on the emulated cluster (tools/emucluster: network namespaces joined by tc-shaped
// links): the allreduce micro-benchmark and traced `dagsgd train` runs under each fabric
// profile, what `dagsgd validate` measures before it predicts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::runtime {

// One shaped fabric (datasets/hardware/emucluster_profiles.json).
struct ClusterProfile {
  std::string name;
  std::string tc_rate;    // what tc shapes each host's link to ("600mbit")
  double rate_gbps = 0;   // the same in Gbit/s
  double latency_us = 0;  // the link's natural latency as MPI sees it
  std::string source;
  // What a rested shaped link passes without waiting for the rate (`tools/emucluster burst`).
  long long burst_bytes = 0;
};
// Errors name the file and the profile.
// The software stack the emulated cluster's ranks run (datasets/stacks/): Debian's Open MPI 4.1
// over TCP between the namespaces, with dagsgd's own training runtime on top.
inline constexpr const char* kEmulatedClusterStack = "openmpi-4.1-tcp";

model::Expected<std::vector<ClusterProfile>> load_cluster_profiles(const std::string& path);

// A model the experiments train: a short name for tables and the `dagsgd train` flags.
struct TrainingModel {
  std::string name;
  std::string kind;  // "compute-heavy", "communication-heavy", ...
  std::vector<std::string> train_args;
  // A run trains --iterations x this many iterations (the warm-up unchanged): models with short
  // iterations get more of them, so every run measures seconds, not a fraction of one. The
  // machine's stalls (the hypervisor takes a vCPU for ~100 ms at a time) then average out
  // instead of deciding a run's mean (docs/validation.md, "Short runs").
  int iteration_factor = 1;
};
// cnn, mlp-wide, mlp-mid, fc-small, fc-wide.
const std::vector<TrainingModel>& training_models();

struct ExperimentSettings {
  std::string out;            // runs/, bench/, logs/ go below it
  std::string cluster;        // the cluster script (tools/emucluster)
  std::string profiles_file;  // its profiles
  std::string dagsgd;         // the dagsgd binary that trains
  std::string bench;          // dagsgd-allreduce-bench
  int ranks_per_host = 1;
  int iterations = 20;
  int warmup = 4;
  int batch = 64;
  int bench_iterations = 10;
  // Training runs per configuration, in rounds over the whole grid (`validate --repeats`); a
  // configuration is measured as its repeats' median iteration and predicted from the repeat of
  // median compute (sim::MeasuredRun::repeats).
  int repeats = 1;
  bool reuse = false;  // keep run directories and benchmark logs already in `out`
};

// One training run of the grid.
struct ExperimentRun {
  std::string profile;
  int ranks = 0;
  std::string overlap;
  const TrainingModel* model = nullptr;
  std::string exchange = "allreduce";  // `dagsgd train --exchange`
  // "emu-600m_p2_wfbp_mlp-wide"; another exchange than allreduce follows the overlap:
  // "emu-600m_p2_wfbp_rsag_mlp-wide".
  std::string id() const;
  // Its directory below runs/ for repeat `repeat` (from 0): id(), then id() + ".r2", ".r3", ...
  std::string dir_name(int repeat) const;
};
inline constexpr int kMaxRepeats = 20;

struct Measurement {
  bool ok = false;
  double mean_s = 0;  // mean iteration after the warm-up (the manifest's)
  double p50_s = 0;
  int cpus = 0;  // CPUs of the machine the ranks shared (manifest), 0 when not recorded
  std::string run_dir;
  std::string error;
};

// The experiments by name, as the user asks for them.
struct ExperimentNames {
  std::vector<std::string> profiles{"emu-600m", "emu-250m", "emu-100m"};
  std::vector<int> ranks{2, 4};
  std::vector<std::string> overlaps{"none", "wfbp"};
  std::vector<std::string> models{"cnn", "mlp-wide"};
  // Gradient exchanges of `dagsgd train` (kValidatedExchanges).
  std::vector<std::string> exchanges{"allreduce"};
  // The short CI version: emu-600m and emu-250m, 2 ranks, wfbp, mlp-wide, 15 iterations (3 of
  // them warm-up); replaces the lists above and the settings' iterations.
  bool quick = false;
};

// The exchanges a grid can measure: those whose collectives replay prices by a plan of the model
// (`ps`, one server on rank 0, has none: its spans stay measured, nothing would be predicted).
inline constexpr const char* kValidatedExchanges[] = {"allreduce", "rsag", "asa"};

// The names resolved: every training run is one model x rank count x overlap x exchange x
// profile.
struct ExperimentGrid {
  std::vector<ClusterProfile> profiles;
  std::vector<int> ranks;
  std::vector<std::string> overlaps;
  std::vector<const TrainingModel*> models;
  std::vector<std::string> exchanges{"allreduce"};
  // In that order, the profiles innermost (the runs one prediction compares stand together).
  std::vector<ExperimentRun> runs() const;
};

// Checks the names against the profile file and training_models() (an unknown one lists the
// valid ones) and completes `s`: the bundled profile file, the cluster script of the source tree
// and the benchmark found beside this dagsgd, where `s` names none.
model::Expected<ExperimentGrid> resolve_experiments(ExperimentNames names, ExperimentSettings& s);

// Mode (a) of validation: every profile as a fabric catalog entry "<name>-profile" with its tc
// rate and its measured natural latency, written to `path`.
model::Expected<void> write_profile_fabrics(const std::string& path,
                                            const std::vector<ClusterProfile>& profiles);

// The grid an output directory was measured with, kept as OUT/grid.json (kGridFile) so that a
// later `validate --reuse` on it re-predicts the same runs: the resolved names (profiles, ranks,
// overlaps, models, exchanges: a file without exchanges measured allreduce) and the settings that
// change a measurement (iterations, warm-up, batch, ranks per host, benchmark iterations, repeats).
inline constexpr const char* kGridFile = "grid.json";
model::Expected<void> write_grid(const std::string& path, const ExperimentGrid& g,
                                 const ExperimentSettings& s);
// Reads `path` into `n` and `s` (other fields of `s` untouched); false when there is no such file.
// Errors name the file and the field.
model::Expected<bool> read_grid(const std::string& path, ExperimentNames& n, ExperimentSettings& s);

class Experiments {
 public:
  explicit Experiments(ExperimentSettings s) : s_(std::move(s)) {}
  // Takes out/.validate.lock (flock), held while this object lives: a second `validate` on the
  // same directory is refused instead of reading runs the first is still writing.
  model::Expected<void> lock_out();
  // Whether the cluster can run here (root, iproute2, netns, mpirun); the error holds the
  // cluster script's explanation.
  model::Expected<void> check_cluster() const;
  // Creates out/{runs,bench,logs}.
  model::Expected<void> make_directories() const;
  // The in-place non-blocking allreduce benchmark (what the runtime issues) on `profile` with
  // `ranks` ranks, from 32 KiB to 8 MiB; its log's path.
  // With --repeats, one per round (`repeat` from 0): bench/<profile>_p<ranks>.log, then
  // .r2.log, .r3.log, ...
  model::Expected<std::string> benchmark(const ClusterProfile& profile, int ranks,
                                         int repeat = 0) const;
  // Trains `run` (its repeat `repeat`, from 0) with --trace; the manifest's statistics.
  // A run of one that is not in this grid's shape (its iterations, its warm-up) is an error.
  Measurement train(const ExperimentRun& run, int repeat = 0) const;
  // --iterations x the model's iteration factor.
  int run_iterations(const ExperimentRun& run) const;
  std::string log_path(const std::string& name) const;

 private:
  std::vector<std::string> on_cluster(const std::string& profile, int ranks) const;
  ExperimentSettings s_;
  std::shared_ptr<const int> lock_;  // the lock file's descriptor, closed with the last copy
};

}  // namespace dagsgd::runtime
