// Linear clock alignment between two offset samples (the MPI measurement is tested under mpirun).
#include "dagsgd/runtime/clock_sync.h"

#include <gtest/gtest.h>

namespace dagsgd::runtime {
namespace {

TEST(ClockAlignment, InterpolatesDriftLinearly) {
  ClockAlignment a(ClockSample{1'000, 500, 20});
  a.set_end(ClockSample{1'001'000, 1'500, 30});
  EXPECT_EQ(a.offset_at(1'000), 500);
  EXPECT_EQ(a.offset_at(501'000), 1'000);
  EXPECT_EQ(a.to_global(501'000), 500'000);
  EXPECT_EQ(a.residual_ns(), 30);
  EXPECT_DOUBLE_EQ(a.drift_ppm(), 1000.0);
}

TEST(ClockAlignment, SingleSampleIsConstant) {
  ClockAlignment a(ClockSample{10, -7, 3});
  EXPECT_EQ(a.offset_at(1'000'000), -7);
  EXPECT_EQ(a.to_global(100), 107);
  EXPECT_GT(now_ns(), 0);
}

}  // namespace
}  // namespace dagsgd::runtime
