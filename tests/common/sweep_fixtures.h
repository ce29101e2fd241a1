// What the scenario, sweep and report tests share: the bundled catalogs loaded once and a small
// grid over intra-node, paired and inter-node fabrics.
#pragma once

#include <gtest/gtest.h>

#include "dagsgd/sim/scenario.h"
#include "dagsgd/sim/sweep.h"

namespace dagsgd::testing {

inline const sim::Catalogs& bundled_catalogs() {
  static const sim::Catalogs kCatalogs = [] {
    auto c = sim::Catalogs::load();
    EXPECT_TRUE(c.ok()) << c.error().message;
    return *c;
  }();
  return kCatalogs;
}

// 3 fabrics (pcie3, nvlink2+ib-edr, 10gbe) x 1, 4, 8 GPUs (4 per node) x fp32, fp16.
inline sim::SweepGrid small_grid() {
  sim::SweepGrid g;
  g.fabrics = {"pcie3", "nvlink2+ib-edr", "10gbe"};
  g.gpus = {1, 4, 8};
  g.gpus_per_node = 4;
  g.default_intra = "pcie3";
  g.default_inter = "10gbe";
  g.precisions = {"fp32", "fp16"};
  return g;
}

}  // namespace dagsgd::testing
