// Mini-batches of one rank's shard, in a per-epoch order shared by all ranks.
#include "batch_source.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

namespace dagsgd::runtime {

BatchSource::BatchSource(Dataset data, int batch, std::uint64_t seed)
    : data_(std::move(data)), batch_(batch), seed_(seed) {
  x_.assign(static_cast<std::size_t>(data_.features * batch_), 0.0f);
  y_.assign(static_cast<std::size_t>(batch_), 0);
  set_batches_per_epoch(data_.count / batch_);
}

void BatchSource::set_batches_per_epoch(std::int64_t n) {
  batches_per_epoch_ = n;
  start_epoch(0);
}

void BatchSource::start_epoch(std::int64_t epoch) {
  epoch_ = epoch;
  order_.resize(static_cast<std::size_t>(batches_per_epoch_));
  std::iota(order_.begin(), order_.end(), 0);
  // The same seed on every rank: all ranks take their part of the same global batch.
  std::mt19937_64 rng(seed_ * 1000003ULL + static_cast<std::uint64_t>(epoch_));
  std::shuffle(order_.begin(), order_.end(), rng);
  pos_ = 0;
}

void BatchSource::next() {
  if (pos_ >= batches_per_epoch_) start_epoch(epoch_ + 1);
  std::int64_t first = order_[static_cast<std::size_t>(pos_)] * batch_;
  ++pos_;
  std::memcpy(x_.data(), data_.images.data() + first * data_.features,
              sizeof(float) * static_cast<std::size_t>(data_.features * batch_));
  std::memcpy(y_.data(), data_.labels.data() + first,
              sizeof(std::int32_t) * static_cast<std::size_t>(batch_));
}

}  // namespace dagsgd::runtime
