// The parts of the CUDA backend that run without a GPU: config validation, the deterministic
// parameter initialisation the GPU tests and CPU references share, and clean failure without a
// device.
#include <gtest/gtest.h>

#include <cmath>

#include "dagsgd/runtime/cuda/cuda_mlp.h"

namespace dagsgd::runtime::cuda {
namespace {

TEST(CudaMlpConfig, RejectsBadShapesWithAClearMessage) {
  auto few = CudaMlp::validate(CudaMlpConfig{{784}, 32, 1});
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.error().message.find("at least 2 widths"), std::string::npos);
  auto zero = CudaMlp::validate(CudaMlpConfig{{784, 0, 10}, 32, 1});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("width 1 is 0"), std::string::npos);
  auto batch = CudaMlp::validate(CudaMlpConfig{{784, 10}, 0, 1});
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.error().message.find("max_batch"), std::string::npos);
  EXPECT_TRUE(CudaMlp::validate(CudaMlpConfig{{784, 128, 10}, 64, 1}).ok());
}

TEST(CudaMlpConfig, InitialParamsAreDeterministicHeUniformWithZeroBias) {
  CudaMlpConfig c{{6, 4, 3}, 8, 42};
  auto a = CudaMlp::initial_params(c);
  auto b = CudaMlp::initial_params(c);
  ASSERT_EQ(a.size(), std::size_t{6 * 4 + 4 + 4 * 3 + 3});
  EXPECT_EQ(a, b);
  c.seed = 43;
  EXPECT_NE(a, CudaMlp::initial_params(c));
  // Layer 1: 24 weights within sqrt(6/6) = 1, then 4 zero biases.
  for (int i = 0; i < 24; ++i) EXPECT_LE(std::fabs(a[static_cast<std::size_t>(i)]), 1.f);
  for (int i = 24; i < 28; ++i) EXPECT_EQ(a[static_cast<std::size_t>(i)], 0.f);
  // Layer 2: 12 weights within sqrt(6/4), then 3 zero biases.
  for (int i = 28; i < 40; ++i) {
    EXPECT_LE(std::fabs(a[static_cast<std::size_t>(i)]), std::sqrt(1.5f));
  }
  for (int i = 40; i < 43; ++i) EXPECT_EQ(a[static_cast<std::size_t>(i)], 0.f);
}

TEST(CudaDevice, MissingDeviceIsAnErrorNotACrash) {
  int n = device_count();
  EXPECT_GE(n, 0);
  auto ctx = CudaContext::create(n);  // one past the last device
  ASSERT_FALSE(ctx.ok());
  EXPECT_NE(ctx.error().message.find("does not exist"), std::string::npos) << ctx.error().message;
}

}  // namespace
}  // namespace dagsgd::runtime::cuda
