// The collector's behaviour that does not need a GPU: without a device it fails with a CUPTI error
// (no exception, no crash) and leaves nothing behind, so a later start fails the same way.
#include <gtest/gtest.h>

#include "dagsgd/runtime/cuda/cuda_ops.h"
#include "dagsgd/runtime/cuda/cupti_collector.h"

namespace dagsgd::runtime {
namespace {

TEST(CuptiCollectorNoGpu, StartFailsCleanlyWithoutADevice) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "a GPU is present; covered by cuda_gpu_tests";
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto c = CuptiCollector::start();
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.error().message.rfind("CUPTI: ", 0), 0u) << c.error().message;
    // Not "already active": the failed start released the process-wide slot.
    EXPECT_EQ(c.error().message.find("already active"), std::string::npos) << c.error().message;
  }
}

TEST(CuptiCollectorNoGpu, TinyBuffersAreApiMisuse) {
  CuptiCollectorOptions o;
  o.buffer_bytes = 16;
  EXPECT_THROW((void)CuptiCollector::start(o), std::invalid_argument);
}

}  // namespace
}  // namespace dagsgd::runtime
