// `dagsgd train`: synchronous data-parallel SGD over MPI ranks on Fashion-MNIST, optionally traced
// into a run directory (run.manifest + rank-<r>.trace.json, see docs/runtime.md).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/layers.h"
#include "dagsgd/runtime/model_builder.h"
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

// The training loop with in-memory data, for benchmarks: `step()` runs one iteration. With
// `tracing`, spans are recorded (and counted) but go to no file.
class Trainer {
 public:
  // Collective (the exchange duplicates communicators). `train_set` is this rank's shard.
  static model::Expected<std::unique_ptr<Trainer>> create(const TrainConfig& cfg,
                                                          struct Dataset train_set, bool tracing);
  ~Trainer();
  // From now on, spans (tracing must be on) go to a rank trace at `path` after every iteration,
  // as with `dagsgd train --trace`: the streaming cost shows in step().
  model::Expected<void> stream_trace(const std::string& path);
  // One iteration; returns its duration in ns on this rank's clock.
  std::int64_t step();
  std::int64_t events_recorded() const;

 private:
  Trainer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  friend class TrainingRun;  // train()'s steps (runtime/src/train.cc)
};

}  // namespace dagsgd::runtime
