// The effects around the wire in predict (docs/gpu-effects.md): hand-computed stragglers and
// interference, and which ranks get them (GPUs by default, CPU nodes only when told).
#include <gtest/gtest.h>

#include <cmath>

#include "common/sweep_fixtures.h"
#include "common/text.h"
#include "dagsgd/model/job_effects.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/scenario.h"

namespace dagsgd::sim {
namespace {

using model::Nanos;

// One layer, 1 ms forward and 2 ms backward, two workers on a link fast enough that
// communication is a few microseconds, exchange after backward: the iteration is
// forward + backward + comm + update, so compute added by stragglers shows in full.
PredictRequest two_workers(double cv) {
  PredictRequest r;
  r.layers = {{model::from_micros(1000), model::from_micros(2000), 1000}};
  r.update = model::from_micros(100);
  r.topology.nodes = 1;
  r.topology.gpus_per_node = 2;
  r.topology.intra.alpha_ns = 1000;
  r.topology.intra.beta_ns_per_byte = 1e-3;
  r.topology.inter = r.topology.intra;
  r.overlap.kind = model::OverlapPolicy::Kind::kNone;
  r.noise_cv = cv;
  return r;
}

TEST(PredictEffects, StragglersOfTwoRanksWithKnownNoise) {
  auto quiet = predict(two_workers(0));
  auto noisy = predict(two_workers(0.1));
  ASSERT_TRUE(quiet.ok() && noisy.ok());
  EXPECT_TRUE(quiet->effects.empty());
  // The slower of two ranks with 10% noise: 3 ms x 0.1 / sqrt(pi) = 169.26 us more compute.
  const double expected_ns = 3e6 * 0.1 / std::sqrt(M_PI);
  ASSERT_EQ(noisy->effects.size(), 1U);
  EXPECT_EQ(noisy->effects[0].effect, "stragglers");
  EXPECT_NEAR(static_cast<double>(noisy->effects[0].time), expected_ns, 2);
  EXPECT_NEAR(static_cast<double>(noisy->iteration - quiet->iteration), expected_ns, 2);
  // One GPU waits for nobody.
  EXPECT_EQ(noisy->single_gpu_iteration, quiet->single_gpu_iteration);
  EXPECT_TRUE(testing::contains(noisy->bottleneck, "stragglers at 2 GPUs 0.17 ms"))
      << noisy->bottleneck;
}

TEST(PredictEffects, FrameworkCopiesAtTheMemoryRate) {
  PredictRequest r = two_workers(0);
  r.layers[0].param_elements = 1'000'000;
  auto plain = predict(r);
  r.copy_in_bytes = 8;
  r.copy_back_bytes = 8;
  r.memory_bandwidth = 1e12;
  auto copied = predict(r);
  ASSERT_TRUE(plain.ok() && copied.ok());
  // 1M elements x (8 + 8) bytes at 1 TB/s: 16 us on the compute stream, 8 in backward and 8
  // before the update, with the collective unchanged.
  ASSERT_EQ(copied->effects.size(), 1U);
  EXPECT_EQ(copied->effects[0].effect, "copies");
  EXPECT_EQ(copied->effects[0].time, 16'000);
  EXPECT_EQ(copied->iteration - plain->iteration, 16'000);
  EXPECT_EQ(copied->single_gpu_iteration, plain->single_gpu_iteration);
  EXPECT_TRUE(testing::contains(copied->bottleneck, "framework copies 0.02 ms"))
      << copied->bottleneck;
}

TEST(PredictEffects, CopiesComeFromTheStacksFramework) {
  const auto& catalogs = testing::bundled_catalogs();
  ExchangeSpec ddp;
  ddp.stack = "pytorch-ddp-nccl-2.7-ib";
  auto scenario = resolve_scenario({2, 4, "nvlink2", "ib-edr"}, ddp, catalogs);
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  NetworkSpec n;
  n.network = "resnet50";
  auto request = [&](const NetworkSpec& spec) {
    auto w = NetworkWorkload::resolve(spec, catalogs);
    EXPECT_TRUE(w.ok()) << w.error().message;
    return *(*w)->request(*scenario);
  };
  PredictRequest r = request(n);
  EXPECT_EQ(r.copy_in_bytes, 8);
  EXPECT_EQ(r.copy_back_bytes, 8);
  EXPECT_EQ(r.memory_bandwidth, 900e9);  // v100's HBM2
  n.effects_off = "copies";
  EXPECT_EQ(request(n).memory_bandwidth, 0);
  n.effects_off = "";
  n.gpu = "xeon-16c";
  EXPECT_EQ(request(n).memory_bandwidth, 0);
}

// Two layers under WFBP: b[1] (1 ms) ends and its collective (2 x 100 us of startup latency on
// two ranks, plus a few bytes) runs beside b[0] (2 ms), wholly inside it; c[0] follows b[0]
// with no compute beside it. So the compute beside communication is c[1]'s length, and slowed
// by s it makes b[0], and the iteration, (s - 1) x c[1] longer.
PredictRequest overlapping(double slowdown) {
  PredictRequest r = two_workers(0);
  r.layers = {{model::from_micros(1000), model::from_micros(2000), 1000},
              {model::from_micros(1000), model::from_micros(1000), 1000}};
  for (auto* link : {&r.topology.intra, &r.topology.inter}) link->alpha_ns = 100'000;
  r.overlap.kind = model::OverlapPolicy::Kind::kWfbp;
  r.compute_slowdown = slowdown;
  return r;
}

TEST(PredictEffects, InterferenceSlowsTheBackwardBesideACollective) {
  auto alone = predict(overlapping(1));
  auto slowed = predict(overlapping(1.25));
  ASSERT_TRUE(alone.ok() && slowed.ok());
  EXPECT_TRUE(alone->effects.empty());
  ASSERT_EQ(alone->groups.size(), 2U);
  Nanos c0 = 0;
  Nanos c1 = 0;  // the collective of layer 1, issued first
  for (const auto& g : alone->groups) (g.first == 1 ? c1 : c0) = g.comm;
  ASSERT_GT(c1, model::from_micros(200));
  ASSERT_LT(c1, model::from_micros(2000));  // inside b[0]
  const Nanos expected = std::llround(0.25 * static_cast<double>(c1));
  ASSERT_EQ(slowed->effects.size(), 1U);
  EXPECT_EQ(slowed->effects[0].effect, "interference");
  EXPECT_EQ(slowed->effects[0].time, expected);
  EXPECT_EQ(slowed->iteration - alone->iteration, expected);
  // The closed form: forward, b[1], b[0] slowed beside c[1], c[0], update.
  EXPECT_EQ(slowed->iteration, model::from_micros(2000 + 1000 + 2000 + 100) + expected + c0);
  // One GPU communicates with nobody.
  EXPECT_EQ(slowed->single_gpu_iteration, alone->single_gpu_iteration);
  EXPECT_TRUE(testing::contains(slowed->bottleneck, "compute slowed beside communication"))
      << slowed->bottleneck;
}

TEST(PredictEffects, InterferenceNeedsComputeBesideCommunication) {
  // Exchange after backward: nothing computes while the collective runs.
  PredictRequest r = overlapping(1.25);
  r.overlap.kind = model::OverlapPolicy::Kind::kNone;
  auto none = predict(r);
  r.compute_slowdown = 1;
  auto off = predict(r);
  ASSERT_TRUE(none.ok() && off.ok());
  EXPECT_TRUE(none->effects.empty());
  EXPECT_EQ(none->iteration, off->iteration);
}

TEST(PredictEffects, GpuRanksGetTheBundledEffectsCpuNodesNone) {
  const auto& catalogs = testing::bundled_catalogs();
  auto scenario = resolve_scenario({2, 4, "nvlink2", "ib-edr"}, {}, catalogs);
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  const auto bundled = model::load_default_job_effects();
  ASSERT_TRUE(bundled.ok() && bundled->noise && bundled->interference);
  EXPECT_GT(bundled->interference->compute_slowdown, 1);
  auto request = [&](NetworkSpec n) {
    n.network = "resnet50";
    auto w = NetworkWorkload::resolve(n, catalogs);
    EXPECT_TRUE(w.ok()) << w.error().message;
    return *(*w)->request(*scenario);
  };
  NetworkSpec gpu;
  EXPECT_EQ(request(gpu).noise_cv, bundled->noise->iteration_cv);
  EXPECT_EQ(request(gpu).compute_slowdown, bundled->interference->compute_slowdown);
  NetworkSpec cpu;
  cpu.gpu = "xeon-16c";
  EXPECT_EQ(request(cpu).noise_cv, 0);
  EXPECT_EQ(request(cpu).compute_slowdown, 1);
  cpu.noise_cv = 0.05;  // measured there: given
  EXPECT_EQ(request(cpu).noise_cv, 0.05);
  gpu.effects_off = "stragglers";
  EXPECT_EQ(request(gpu).noise_cv, 0);
  EXPECT_GT(request(gpu).compute_slowdown, 1);
  gpu.effects_off = "interference";
  EXPECT_EQ(request(gpu).compute_slowdown, 1);
  NetworkSpec bad;
  bad.network = "resnet50";
  bad.effects_off = "sunspots";
  auto w = NetworkWorkload::resolve(bad, catalogs);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(testing::contains(w.error().message, "unknown effect 'sunspots'"))
      << w.error().message;
}

}  // namespace
}  // namespace dagsgd::sim
