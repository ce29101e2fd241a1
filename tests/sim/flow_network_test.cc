// The flow-level tier's sharing rule, by hand: max-min fair rates with transfers that cross a
// link several times, per-connection caps and incast.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

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

// Max-min fairness by its definition, on random groups over random links (a link crossed
// several times, caps, groups on no link): every link carries at most its capacity, and every
// group is held by its cap or by a full link on which no other group moves faster. Calls one
// after another (the filling keeps a table between calls) give the same rates.
TEST(MaxMinRates, RandomGroupsGetMaxMinFairRates) {
  std::uint64_t seed = 12345;
  auto next = [&seed](int n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((seed >> 33) % static_cast<std::uint64_t>(n));
  };
  for (int trial = 0; trial < 300; ++trial) {
    const int links = 1 + next(12);
    std::vector<double> capacity;
    for (int l = 0; l < links; ++l) capacity.push_back(1 + next(100));
    std::vector<LinkUsage> usage(static_cast<std::size_t>(1 + next(8)));
    std::vector<double> cap;
    for (auto& u : usage) {
      for (int l = 0; l < links; ++l) {
        if (next(3) == 0) u.emplace_back(l, 1 + next(3));
      }
      cap.push_back(next(4) == 0 ? 1 + next(50) : 0);
    }
    const auto r = rates(usage, capacity, cap);
    ASSERT_EQ(r, rates(usage, capacity, cap)) << "trial " << trial;
    std::vector<double> load(capacity.size(), 0);
    for (std::size_t g = 0; g < usage.size(); ++g) {
      for (const auto& [l, count] : usage[g]) load[static_cast<std::size_t>(l)] += count * r[g];
    }
    for (std::size_t l = 0; l < capacity.size(); ++l) {
      EXPECT_LE(load[l], capacity[l] * (1 + 1e-9)) << "trial " << trial << " link " << l;
    }
    for (std::size_t g = 0; g < usage.size(); ++g) {
      if (cap[g] > 0 && r[g] == cap[g]) continue;
      if (usage[g].empty()) {
        EXPECT_TRUE(std::isinf(r[g])) << "trial " << trial << " group " << g;
        continue;
      }
      bool held = false;
      for (const auto& [l, count] : usage[g]) {
        const auto li = static_cast<std::size_t>(l);
        if (load[li] < capacity[li] * (1 - 1e-9)) continue;
        bool fastest = true;
        for (std::size_t o = 0; o < usage.size(); ++o) {
          for (const auto& [lo, co] : usage[o]) {
            if (lo == l && r[o] > r[g] * (1 + 1e-9)) fastest = false;
          }
        }
        held = held || fastest;
      }
      EXPECT_TRUE(held) << "trial " << trial << " group " << g << " rate " << r[g];
    }
  }
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
