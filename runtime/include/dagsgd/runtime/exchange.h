// Gradient exchange strategies over MPI_COMM_WORLD: non-blocking averaging of gradient groups
// (a layer or a bucket of layers) by allreduce, parameter server, alltoall-sum-allgather,
// reduce-scatter-allgather (the communication of sharded data parallelism) or top-k allgather,
// in fp32 or fp16 on the wire. mpi.h stays in exchange.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/runtime/train_config.h"

namespace dagsgd::runtime {

struct ExchangeConfig {
  ExchangeKind kind = ExchangeKind::kAllreduce;
  Precision precision = Precision::kFp32;
  double topk = 0;  // 0: dense
};

// A contiguous range of the flat gradient buffer exchanged as one message.
struct GroupRange {
  std::int64_t offset = 0;
  std::int64_t count = 0;
};

class GradientExchange {
 public:
  // Collective over MPI_COMM_WORLD: gives each group its own duplicated communicator, so stages
  // of different groups (e.g. ps's reply, asa's allgather) may interleave freely across ranks.
  GradientExchange(ExchangeConfig cfg, std::vector<GroupRange> groups);
  ~GradientExchange();
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  int rank() const;
  int ranks() const;
  int groups() const;

  // Starts replacing group g of `base` (the whole flat buffer) by its average over ranks.
  // The buffer must stay untouched until the group completes. One operation per group at a time.
  void start(int g, float* base);
  // Advances every operation in flight (MPI_Test on each); cheap when nothing is in flight.
  void progress();
  bool in_flight() const;
  bool done(int g) const;
  // Blocks until group g completes.
  void wait(int g);
  // Local clock (now_ns) at which group g's completion was observed.
  std::int64_t completed_ns(int g) const;

  // What the trace says about group g's collective.
  const char* collective() const;
  const char* algorithm() const;
  std::int64_t wire_bytes(int g) const;  // bytes this rank puts on the wire per start

  // Residual of the error feedback (top-k only; empty otherwise), for the tests.
  const std::vector<float>& topk_residual(int g) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One synchronous elastic-averaging step (EASGD, Zhang et al. 2015, in its synchronous form):
// d_i = alpha (x_i - center); x_i -= d_i; center += sum_i d_i. The sum goes through `ex`, which
// must have a single group covering all `n` parameters. `center` is replicated on every rank.
void elastic_average(GradientExchange& ex, float* params, float* center, std::int64_t n,
                     double alpha, std::vector<float>& scratch);

}  // namespace dagsgd::runtime
