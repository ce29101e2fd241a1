// Top-k selection by magnitude with nth_element, plus the error-feedback residual.
#include "dagsgd/runtime/topk.h"

#include <algorithm>
#include <cmath>

#include "dagsgd/model/check.h"

namespace dagsgd::runtime {

std::int64_t topk_count(std::int64_t n, double ratio) {
  if (n <= 0) return 0;
  auto k = static_cast<std::int64_t>(std::ceil(ratio * static_cast<double>(n)));
  return std::clamp<std::int64_t>(k, 1, n);
}

void TopKCompressor::select(const float* grad, std::int64_t k, std::vector<std::int32_t>& indices,
                            std::vector<float>& values) {
  auto n = static_cast<std::int64_t>(residual_.size());
  k = std::clamp<std::int64_t>(k, 0, n);
  for (std::int64_t i = 0; i < n; ++i) residual_[static_cast<std::size_t>(i)] += grad[i];
  order_.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    order_[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  const auto& acc = residual_;
  auto larger = [&acc](std::int32_t a, std::int32_t b) {
    float ma = std::fabs(acc[static_cast<std::size_t>(a)]);
    float mb = std::fabs(acc[static_cast<std::size_t>(b)]);
    return ma > mb || (ma == mb && a < b);
  };
  if (k < n) std::nth_element(order_.begin(), order_.begin() + k, order_.end(), larger);
  indices.assign(order_.begin(), order_.begin() + k);
  std::sort(indices.begin(), indices.end());
  values.resize(indices.size());
  for (std::size_t j = 0; j < indices.size(); ++j) {
    auto i = static_cast<std::size_t>(indices[j]);
    values[j] = residual_[i];
    residual_[i] = 0.0f;
  }
}

}  // namespace dagsgd::runtime
