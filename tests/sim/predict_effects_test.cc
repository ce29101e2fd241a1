// The effects around the wire in predict (docs/gpu-effects.md): hand-computed stragglers, and
// which ranks get them (GPUs by default, CPU nodes only when told).
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

TEST(PredictEffects, GpuRanksGetTheBundledNoiseCpuNodesNone) {
  const auto& catalogs = testing::bundled_catalogs();
  auto scenario = resolve_scenario({2, 4, "nvlink2", "ib-edr"}, {}, catalogs);
  ASSERT_TRUE(scenario.ok()) << scenario.error().message;
  const double bundled = model::load_default_job_effects()->noise->iteration_cv;
  auto cv_of = [&](NetworkSpec n) {
    n.network = "resnet50";
    auto w = NetworkWorkload::resolve(n, catalogs);
    EXPECT_TRUE(w.ok()) << w.error().message;
    return (*w)->request(*scenario)->noise_cv;
  };
  NetworkSpec gpu;
  EXPECT_EQ(cv_of(gpu), bundled);
  NetworkSpec cpu;
  cpu.gpu = "xeon-16c";
  EXPECT_EQ(cv_of(cpu), 0);
  cpu.noise_cv = 0.05;  // measured there: given
  EXPECT_EQ(cv_of(cpu), 0.05);
  gpu.effects_off = "stragglers";
  EXPECT_EQ(cv_of(gpu), 0);
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
