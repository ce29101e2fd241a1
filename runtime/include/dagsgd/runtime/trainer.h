// `dagsgd train`: synchronous data-parallel SGD over MPI ranks on Fashion-MNIST, optionally traced
// into a run directory (manifest.json + rank-<r>.trace.json, see docs/runtime.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/layers.h"
#include "dagsgd/runtime/train_config.h"
#include "dagsgd/trace/manifest.h"

namespace dagsgd::runtime {

// Owns MPI for the process: MPI_Init (a singleton run without mpirun is one rank) and
// MPI_Finalize. Does nothing when MPI is already initialized by someone else.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  bool owns_ = false;
  int rank_ = 0;
  int size_ = 1;
};

// The rank this process will have, from the launcher's environment, before MPI_Init (0 when not
// launched by mpirun): lets only rank 0 report bad flags.
int launcher_rank();

// The layers of `cfg.model` for 28x28 grey images and 10 classes: "mlp" (fc+relu with
// cfg.widths), "cnn" (two conv+relu+pool blocks, then fc+relu+fc), or a network-spec file whose
// layers are fc and relu only.
model::Expected<std::vector<std::unique_ptr<Layer>>> build_model(const TrainConfig& cfg);

struct EpochResult {
  int epoch = 0;                // 1-based
  std::int64_t iterations = 0;  // total so far
  double train_loss = 0;        // mean over this epoch's iterations, all ranks
  double test_loss = 0;
  double test_accuracy = 0;  // fraction in [0, 1]
  double seconds = 0;        // wall time of the epoch's iterations
};

struct TrainResult {
  std::vector<EpochResult> epochs;
  std::int64_t iterations = 0;
  trace::IterationStats iteration_stats;  // rank 0's iteration times
  std::string run_dir;                    // "" when not traced
};

using LogFn = std::function<void(const std::string&)>;

// Runs the whole training. Collective: every rank calls it inside an MpiSession. Every rank
// returns the same error (the one of the lowest failing rank). `log` is called on rank 0 only.
model::Expected<TrainResult> train(const TrainConfig& cfg, const std::vector<std::string>& argv,
                                   const LogFn& log);

// The training loop with in-memory data, for benchmarks: `step()` runs one iteration.
class Trainer {
 public:
  // Collective (the exchange duplicates communicators). `train_set` is this rank's shard.
  static model::Expected<std::unique_ptr<Trainer>> create(const TrainConfig& cfg,
                                                          struct Dataset train_set, bool tracing);
  ~Trainer();
  // One iteration; returns its duration in ns on this rank's clock.
  std::int64_t step();
  std::int64_t events_recorded() const;

 private:
  Trainer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend model::Expected<TrainResult> train(const TrainConfig&, const std::vector<std::string>&,
                                            const LogFn&);
};

}  // namespace dagsgd::runtime
