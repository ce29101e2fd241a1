// The flow-level tier's sharing rule, by hand: max-min fair rates with transfers that cross a
// link several times, per-connection caps and incast.
#include <gtest/gtest.h>

#include "dagsgd/sim/flow_network.h"

namespace dagsgd::sim {
namespace {

std::vector<double> rates(const std::vector<LinkUsage>& usage, const std::vector<double>& capacity,
                          std::vector<double> cap = {}) {
  std::vector<const LinkUsage*> u;
  for (const auto& x : usage) u.push_back(&x);
  cap.resize(usage.size(), 0);
  return max_min_rates(u, cap, capacity);
}

TEST(MaxMinRates, TwoTransfersOnOneLinkGetHalfEach) {
  auto r = rates({{{0, 1}}, {{0, 1}}}, {10});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_DOUBLE_EQ(r[0], 5);
  EXPECT_DOUBLE_EQ(r[1], 5);
}

// A ring through two PCIe switches crosses the socket link twice: its transfers move at half
// the socket link's rate.
TEST(MaxMinRates, ACollectiveThatCrossesALinkTwiceGetsHalfOfIt) {
  auto r = rates({{{0, 1}, {1, 2}}}, {10, 8});
  EXPECT_DOUBLE_EQ(r[0], 4);
}

// Progressive filling: the tightest link fixes its groups first; the others share the rest.
TEST(MaxMinRates, TheBottleneckLinkIsFilledFirst) {
  auto r = rates({{{0, 1}}, {{0, 1}, {1, 1}}}, {10, 4});
  EXPECT_DOUBLE_EQ(r[1], 4);
  EXPECT_DOUBLE_EQ(r[0], 6);
}

TEST(MaxMinRates, PerConnectionCapsBoundARateAndFreeTheRest) {
  auto r = rates({{{0, 1}}, {{0, 1}}}, {10}, {1, 0});
  EXPECT_DOUBLE_EQ(r[0], 1);
  EXPECT_DOUBLE_EQ(r[1], 9);
}

// Three workers push to one parameter server: its link is shared three ways.
TEST(MaxMinRates, IncastSharesTheServerLink) {
  auto r = rates({{{0, 1}, {3, 1}}, {{1, 1}, {3, 1}}, {{2, 1}, {3, 1}}}, {10, 10, 10, 9});
  for (double x : r) EXPECT_DOUBLE_EQ(x, 3);
}

TEST(MaxMinRates, FourGpusBehindOneNicShareIt) {
  // Each GPU's own link (0..3) is fast; the NIC (4) carries all four.
  std::vector<LinkUsage> u;
  for (int g = 0; g < 4; ++g) u.push_back({{g, 1}, {4, 1}});
  auto r = rates(u, {100, 100, 100, 100, 12});
  for (double x : r) EXPECT_DOUBLE_EQ(x, 3);
}

TEST(MaxMinRates, NoLinkAndNoCapIsUnbounded) {
  auto r = rates({{}}, {1});
  EXPECT_TRUE(std::isinf(r[0]));
  r = rates({{}}, {1}, {2.5});
  EXPECT_DOUBLE_EQ(r[0], 2.5);
}

}  // namespace
}  // namespace dagsgd::sim
