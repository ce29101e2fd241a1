// Real runs on the emulated cluster (tools/emucluster: network namespaces joined by tc-shaped
// links): the allreduce micro-benchmark and traced `dagsgd train` runs under each fabric
// profile, what `dagsgd validate` measures before it predicts.
#pragma once

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
};
// Errors name the file and the profile.
model::Expected<std::vector<ClusterProfile>> load_cluster_profiles(const std::string& path);

// A model the experiments train: a short name for tables and the `dagsgd train` flags.
struct TrainingModel {
  std::string name;
  std::string kind;  // "compute-heavy", "communication-heavy", ...
  std::vector<std::string> train_args;
};
// cnn, mlp-wide, fc-small, fc-wide.
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
  bool reuse = false;  // keep run directories and benchmark logs already in `out`
};

// One training run of the grid.
struct ExperimentRun {
  std::string profile;
  int ranks = 0;
  std::string overlap;
  const TrainingModel* model = nullptr;
  std::string id() const;  // "emu-600m_p2_wfbp_mlp-wide"
};

struct Measurement {
  bool ok = false;
  double mean_s = 0;  // mean iteration after the warm-up (the manifest's)
  double p50_s = 0;
  int cpus = 0;  // CPUs of the machine the ranks shared (manifest), 0 when not recorded
  std::string run_dir;
  std::string error;
};

class Experiments {
 public:
  explicit Experiments(ExperimentSettings s) : s_(std::move(s)) {}
  // Whether the cluster can run here (root, iproute2, netns, mpirun); the error holds the
  // cluster script's explanation.
  model::Expected<void> check_cluster() const;
  // Creates out/{runs,bench,logs}.
  model::Expected<void> make_directories() const;
  // The in-place non-blocking allreduce benchmark (what the runtime issues) on `profile` with
  // `ranks` ranks, from 32 KiB to 8 MiB; its log's path.
  model::Expected<std::string> benchmark(const ClusterProfile& profile, int ranks) const;
  // Trains `run` with --trace; the manifest's statistics.
  Measurement train(const ExperimentRun& run) const;
  std::string log_path(const std::string& name) const;

 private:
  std::vector<std::string> on_cluster(const std::string& profile, int ranks) const;
  ExperimentSettings s_;
};

}  // namespace dagsgd::runtime
