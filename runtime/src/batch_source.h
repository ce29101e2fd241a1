// This rank's shard of the training set served as mini-batches: an order of batches shuffled
// per epoch with the same seed on every rank, so all ranks take their part of one global batch.
#pragma once

#include <cstdint>
#include <vector>

#include "dagsgd/runtime/dataset.h"

namespace dagsgd::runtime {

class BatchSource {
 public:
  BatchSource(Dataset data, int batch, std::uint64_t seed);

  const Dataset& data() const { return data_; }
  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }
  // Every rank must run as many batches per epoch (shards differ by a sample): the count that
  // the smallest shard allows. Starts epoch 0 again.
  void set_batches_per_epoch(std::int64_t n);
  // Reshuffles the batch order for `epoch` and starts at its first batch.
  void start_epoch(std::int64_t epoch);
  // Copies the next batch into x()/y(); past the epoch's last batch, the next epoch begins.
  void next();
  const std::vector<float>& x() const { return x_; }
  const std::vector<std::int32_t>& y() const { return y_; }

 private:
  Dataset data_;
  int batch_ = 1;
  std::uint64_t seed_ = 1;
  std::int64_t batches_per_epoch_ = 0;
  std::vector<std::int64_t> order_;
  std::int64_t epoch_ = 0;
  std::int64_t pos_ = 0;  // batch position within the epoch
  std::vector<float> x_;  // the io stage's staging buffer
  std::vector<std::int32_t> y_;
};

}  // namespace dagsgd::runtime
