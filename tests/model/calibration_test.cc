// Calibration recovers known link parameters from latencies the cost model itself produced.
#include "dagsgd/model/calibration.h"

#include <gtest/gtest.h>

#include <cmath>

namespace dagsgd::model {
namespace {

// Latencies of an allreduce of each size under `algorithm` on `ranks` workers (one per node).
std::vector<TimingPoint> synthetic(const LinkCost& l, const std::string& algorithm, int ranks,
                                   double noise = 0) {
  Topology t;
  t.nodes = ranks;
  t.inter = l;
  ExchangeConfig c;
  c.algorithm = algorithm;
  auto m = make_comm_model(t, c);
  EXPECT_TRUE(m.ok());
  std::vector<TimingPoint> pts;
  int i = 0;
  for (Bytes b = 4; b <= (1 << 20); b *= 2, ++i) {
    // Deterministic +-noise, alternating sign.
    const double factor = 1 + ((i % 2) != 0 ? noise : -noise);
    pts.push_back({b, static_cast<double>((*m)->exchange_time(b / 4)) * factor});
  }
  return pts;
}

LinkCost link(double alpha_ns, double beta_ns_per_byte) {
  LinkCost l;
  l.alpha_ns = alpha_ns;
  l.beta_ns_per_byte = beta_ns_per_byte;
  return l;
}

// The ring formula fitted to `l`'s synthetic latencies on `ranks` workers.
Expected<CalibrationResult> fit_ring(const LinkCost& l, int ranks, double noise = 0) {
  CalibrationOptions o;
  o.ranks = ranks;
  return calibrate_allreduce(synthetic(l, "ring", ranks, noise), o);
}

TEST(Calibration, RecoversAlphaBetaWithoutStep) {
  const LinkCost l = link(25'000, 0.8);
  for (const char* algo : {"ring", "recursive_doubling", "rabenseifner", "tree"}) {
    CalibrationOptions o;
    o.algorithm = algo;
    o.ranks = 4;
    auto r = calibrate_allreduce(synthetic(l, algo, 4), o);
    ASSERT_TRUE(r.ok()) << r.error().message;
    // Model times are rounded to whole ns; the fit is that close.
    EXPECT_NEAR(r->link.alpha_ns, 25'000, 5) << algo;
    EXPECT_NEAR(r->link.beta_ns_per_byte, 0.8, 1e-4) << algo;
    EXPECT_FALSE(r->has_step()) << algo;
    EXPECT_LT(r->max_relative_error, 1e-4) << algo;
    EXPECT_EQ(r->points.size(), 19u);
  }
}

TEST(Calibration, FindsTheEagerRendezvousStep) {
  LinkCost l = link(20'000, 1.0);
  l.eager_limit = 10'000;  // ring messages are M/8: sizes up to 65536 (8192 each) are eager
  l.rendezvous_ns = 40'000;
  auto r = fit_ring(l, 8);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->has_step());
  // The split lies between 65536 and 131072 bytes: the limit is the largest eager message.
  EXPECT_EQ(r->link.eager_limit, 8192);
  EXPECT_NEAR(r->link.alpha_ns, 20'000, 5);
  EXPECT_NEAR(r->link.rendezvous_ns, 40'000, 10);
  EXPECT_NEAR(r->link.beta_ns_per_byte, 1.0, 1e-4);
  EXPECT_NEAR(r->bandwidth(), 1e9, 1e5);
}

// A log of thousands of sizes (more step positions than are fitted one by one): the coarse
// pass and its refinement still find the exact step.
TEST(Calibration, FindsTheStepAmongThousandsOfSizes) {
  LinkCost l = link(20'000, 1.0);
  l.eager_limit = 10'000;
  l.rendezvous_ns = 40'000;
  Topology t;
  t.nodes = 8;
  t.inter = l;
  ExchangeConfig c;
  c.algorithm = "ring";
  auto m = make_comm_model(t, c);
  ASSERT_TRUE(m.ok());
  std::vector<TimingPoint> pts;
  // 2,000 sizes, 512 bytes apart: ring messages of 64 to 128,000 bytes, 64 apart.
  for (Bytes b = 512; b <= 2000 * 512; b += 512) {
    pts.push_back({b, static_cast<double>((*m)->exchange_time(b / 4))});
  }
  CalibrationOptions o;
  o.ranks = 8;
  auto r = calibrate_allreduce(pts, o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_TRUE(r->has_step());
  EXPECT_EQ(r->link.eager_limit, 9984) << "the largest eager message, 156 x 64 bytes";
  EXPECT_NEAR(r->link.rendezvous_ns, 40'000, 10);
  EXPECT_NEAR(r->link.alpha_ns, 20'000, 5);
}

TEST(Calibration, ToleratesNoiseAndReportsIt) {
  auto r = fit_ring(link(30'000, 0.9), 2, 0.02);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->link.alpha_ns, 30'000, 30'000 * 0.05);
  EXPECT_NEAR(r->link.beta_ns_per_byte, 0.9, 0.9 * 0.05);
  EXPECT_GT(r->rms_relative, 0.01);
  EXPECT_LT(r->max_relative_error, 0.05);
  EXPECT_GT(r->rms_ns, 0);
}

TEST(Calibration, FabricEntryFromFit) {
  auto r = fit_ring(link(20'000, 1.0), 4);
  ASSERT_TRUE(r.ok());
  auto f = fabric_from_calibration(*r, "lab", "inter", "lab cluster", "fit", 1.25e9);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR(f->achievable_bandwidth, 1e9, 1e5);
  EXPECT_DOUBLE_EQ(f->nominal_bandwidth, 1.25e9);
  EXPECT_NEAR(static_cast<double>(f->latency), 20'000, 5);
  EXPECT_TRUE(LinkCost::from_fabric(*f).beta_ns_per_byte > 0);
}

TEST(Calibration, SeveralRankCountsTellFormulasApart) {
  LinkCost l = link(30'000, 1.5);
  l.eager_limit = 8192;
  l.rendezvous_ns = 60'000;
  std::vector<TimingSeries> series;
  for (int p : {2, 4, 8}) series.push_back({p, synthetic(l, "recursive_doubling", p)});
  CalibrationOptions o;
  o.algorithm = "recursive_doubling";
  auto rd = calibrate_allreduce(series, o);
  ASSERT_TRUE(rd.ok()) << rd.error().message;
  EXPECT_EQ(rd->ranks, 0);
  EXPECT_EQ(rd->points.size(), 3 * 19u);
  EXPECT_EQ(rd->points.back().ranks, 8);
  EXPECT_NEAR(rd->link.alpha_ns, 30'000, 5);
  EXPECT_NEAR(rd->link.beta_ns_per_byte, 1.5, 1e-4);
  EXPECT_EQ(rd->link.eager_limit, 8192);
  EXPECT_NEAR(rd->link.rendezvous_ns, 60'000, 10);
  // The ring's 2(p-1) messages cannot follow recursive doubling's lg p across p = 2, 4, 8.
  o.algorithm = "ring";
  auto ring = calibrate_allreduce(series, o);
  ASSERT_TRUE(ring.ok());
  EXPECT_GT(ring->rms_relative, 100 * rd->rms_relative + 0.01);
}

TEST(Calibration, BadInput) {
  CalibrationOptions o;
  o.ranks = 4;
  std::vector<TimingPoint> two = {{4, 10'000}, {8, 11'000}};
  EXPECT_FALSE(calibrate_allreduce(two, o).ok());
  std::vector<TimingPoint> neg = {{4, 10'000}, {8, -1}, {16, 12'000}};
  EXPECT_FALSE(calibrate_allreduce(neg, o).ok());
  std::vector<TimingPoint> ok = {{4, 10'000}, {8, 11'000}, {16, 12'000}};
  o.algorithm = "hier";
  auto r = calibrate_allreduce(ok, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("rabenseifner"), std::string::npos) << r.error().message;
  o.algorithm = "ring";
  o.ranks = 1;
  EXPECT_FALSE(calibrate_allreduce(ok, o).ok());
}

}  // namespace
}  // namespace dagsgd::model
