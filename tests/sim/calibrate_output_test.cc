// What calibrate keeps of its logs is what its own --fabric-file loader accepts: curves of two
// ranks or more, a Max column never below the Avg one, every number in the loader's ranges.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "dagsgd/model/hardware.h"
#include "dagsgd/sim/calibrate.h"

namespace dagsgd::sim {
namespace {

// A log of `ranks` ranks with the given (bytes, avg us, max us) rows.
BenchmarkLog latency_log(int ranks, const std::vector<std::array<double, 3>>& rows) {
  BenchmarkLog l;
  l.path = "osu" + std::to_string(ranks) + ".log";
  l.series.ranks = ranks;
  for (const auto& r : rows) {
    trace::LatencyPoint p;
    p.bytes = static_cast<model::Bytes>(r[0]);
    p.latency_us = r[1];
    p.max_latency_us = r[2];
    l.log.points.push_back(p);
  }
  return l;
}

TEST(CalibrateOutput, KeptCurvesLoadAsAFabricFile) {
  // Two logs of 4 ranks whose Max is just above Avg (means that round apart), one of 1 rank.
  const std::vector<BenchmarkLog> logs = {
      latency_log(4, {{8, 10.0004, 10.0006}, {1024, 20.0, 20.0}, {1 << 20, 400.25, 400.26}}),
      latency_log(4, {{8, 10.0005, 10.0005}, {1024, 20.0, 21.0}, {1 << 20, 400.25, 400.25}}),
      latency_log(1, {{8, 1.0, 1.0}, {1024, 2.0, 2.0}})};
  const auto curves = measured_curves(logs);
  ASSERT_EQ(curves.size(), 1U) << "a curve of one rank is not a collective's";
  EXPECT_EQ(curves[0].ranks, 4);
  ASSERT_EQ(curves[0].slowest.size(), curves[0].points.size());
  for (std::size_t k = 0; k < curves[0].points.size(); ++k) {
    EXPECT_GE(curves[0].slowest[k], curves[0].points[k].second) << k;
  }
  model::FabricSpec f;
  f.name = "fitted";
  f.description = "d";
  f.source = "s";
  f.scope = "inter";
  f.nominal_bandwidth = f.achievable_bandwidth = 1.25e9;
  f.latency = 5000;
  f.measured_allreduce = curves;
  model::HardwareCatalog catalog;
  auto loads = catalog.add_fabric_json(model::fabric_to_json(f), "calibrated.json");
  EXPECT_TRUE(loads.ok()) << loads.error().message;
}

}  // namespace
}  // namespace dagsgd::sim
