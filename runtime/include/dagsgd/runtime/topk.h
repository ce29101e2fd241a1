// Top-k gradient sparsification with error feedback (the residual is added back next iteration).
#pragma once

#include <cstdint>
#include <vector>

namespace dagsgd::runtime {

// Number of entries kept out of n for a ratio in (0, 1]: ceil(ratio * n), at least 1.
std::int64_t topk_count(std::int64_t n, double ratio);

// Keeps a residual per gradient element. select() adds the residual to `grad`, picks the k entries
// of largest magnitude (ties broken by the lower index, so every run picks the same set), returns
// them sorted by index, and keeps everything not sent as the new residual.
class TopKCompressor {
 public:
  explicit TopKCompressor(std::int64_t n = 0) : residual_(static_cast<std::size_t>(n), 0.0f) {}
  void select(const float* grad, std::int64_t k, std::vector<std::int32_t>& indices,
              std::vector<float>& values);
  const std::vector<float>& residual() const { return residual_; }

 private:
  std::vector<float> residual_;
  std::vector<std::int32_t> order_;
};

}  // namespace dagsgd::runtime
