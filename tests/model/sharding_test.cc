// Sharded data parallelism's closed forms: the ZeRO paper's memory per GPU and the prefetched
// parameter all-gathers of ZeRO-3 / FSDP, against values computed by hand.
#include <gtest/gtest.h>

#include "dagsgd/model/sharding.h"

namespace dagsgd::model {
namespace {

TEST(Sharding, NamesParseAndUnknownOnesListTheValidOnes) {
  for (const auto& name : sharding_names()) {
    auto s = parse_sharding(name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_EQ(sharding_name(*s), name);
  }
  auto bad = parse_sharding("zero4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("none, zero1, zero2, zero3, fsdp"), std::string::npos)
      << bad.error().message;
  EXPECT_FALSE(shards_optimizer(Sharding::kNone));
  EXPECT_TRUE(shards_optimizer(Sharding::kZero1) && !shards_gradients(Sharding::kZero1));
  EXPECT_TRUE(shards_gradients(Sharding::kZero2) && !shards_parameters(Sharding::kZero2));
  EXPECT_TRUE(shards_parameters(Sharding::kZero3) && shards_parameters(Sharding::kFsdp));
}

// The ZeRO paper's Figure 1 (Rajbhandari et al. 2020): a 7.5B-parameter model on 64 GPUs with
// mixed-precision Adam (K = 12) holds 120 GB (baseline), 31.4 GB (P_os), 16.6 GB (P_os+g) and
// 1.9 GB (P_os+g+p) of model states per GPU.
TEST(Sharding, MemoryPerGpuIsTheZeroPapersFormulas) {
  const std::int64_t psi = 7'500'000'000;
  auto states = [&](Sharding s) { return gpu_memory(s, psi, 64, Precision::kFp16, 0, 0).total(); };
  EXPECT_DOUBLE_EQ(states(Sharding::kNone), (2 + 2 + 12) * 7.5e9);                // 120 GB
  EXPECT_DOUBLE_EQ(states(Sharding::kZero1), (2 + 2) * 7.5e9 + 12 * 7.5e9 / 64);  // 31.4 GB
  EXPECT_DOUBLE_EQ(states(Sharding::kZero2), 2 * 7.5e9 + (2 + 12) * 7.5e9 / 64);  // 16.6 GB
  EXPECT_DOUBLE_EQ(states(Sharding::kZero3), (2 + 2 + 12) * 7.5e9 / 64);          // 1.9 GB
  EXPECT_NEAR(states(Sharding::kZero1) / 1e9, 31.4, 0.05);
  EXPECT_NEAR(states(Sharding::kZero2) / 1e9, 16.6, 0.05);
  EXPECT_NEAR(states(Sharding::kFsdp) / 1e9, 1.875, 1e-9);
  // Each part as the stage divides it.
  const GpuMemory z2 = gpu_memory(Sharding::kZero2, psi, 64, Precision::kFp16, 0, 0);
  EXPECT_DOUBLE_EQ(z2.parameters, 2 * 7.5e9);
  EXPECT_DOUBLE_EQ(z2.gradients, 2 * 7.5e9 / 64);
  EXPECT_DOUBLE_EQ(z2.optimizer, 12 * 7.5e9 / 64);
  // fp32 training with Adam: 4 + 4 + 8 bytes per parameter.
  EXPECT_DOUBLE_EQ(gpu_memory(Sharding::kNone, 1000, 8, Precision::kFp32, 0, 0).total(), 16000);
  // ZeRO-3 also holds the units in flight, whole; activations come on top, undivided.
  const GpuMemory z3 = gpu_memory(Sharding::kZero3, 1000, 4, Precision::kFp16, 300, 5e6);
  EXPECT_DOUBLE_EQ(z3.gathered, 2 * 300);
  EXPECT_DOUBLE_EQ(z3.activations, 5e6);
  EXPECT_DOUBLE_EQ(z3.total(), 16 * 1000 / 4.0 + 600 + 5e6);
  // One GPU gathers nothing.
  EXPECT_DOUBLE_EQ(gpu_memory(Sharding::kZero3, 1000, 1, Precision::kFp16, 300, 0).total(), 16000);
}

TEST(Sharding, MemoryTextNamesTheParts) {
  const GpuMemory m =
      gpu_memory(Sharding::kZero2, std::int64_t{1} << 30, 2, Precision::kFp16, 0, kGiB);
  // 2 + 1 + 6 GiB of states and 1 GiB of activations.
  EXPECT_EQ(memory_text(m),
            "10.00 GiB (parameters 2.00, gradients 1.00, optimizer state 6.00, activations 1.00 "
            "GiB)");
}

// Three units, forward 10 each, backward 20 each, all-gathers of 4, 30 and 4 (ns).
// Forward: gather 0 ends at 4: unit 0 runs 4-14 (waits 4). Gather 1 starts with unit 0's
// forward at 4 and ends at 34: unit 1 runs 34-44 (waits 20). Gather 2 starts at 34 (gather 1's
// end, unit 1 began then too), ends at 38: unit 2 runs 44-54 (no wait).
// Backward from units 2 to 0: gather 2 ends at 4, unit 2 runs 4-24 (waits 4); gather 1 runs
// 4-34, unit 1 34-54 (waits 10); gather 0 runs 34-38, unit 0 54-74 (no wait).
TEST(Sharding, PrefetchedGathersWaitOnlyWhereComputeCannotHideThem) {
  const GatherWaits w = gather_waits({10, 10, 10}, {20, 20, 20}, {4, 30, 4});
  EXPECT_EQ(w.forward, (std::vector<Nanos>{4, 20, 0}));
  EXPECT_EQ(w.backward, (std::vector<Nanos>{0, 10, 4}));
  EXPECT_EQ(w.total(), 38);
  // Gathers faster than compute: only the first of each pass is exposed.
  const GatherWaits fast = gather_waits({10, 10, 10}, {20, 20, 20}, {3, 3, 3});
  EXPECT_EQ(fast.forward, (std::vector<Nanos>{3, 0, 0}));
  EXPECT_EQ(fast.backward, (std::vector<Nanos>{0, 0, 3}));
  // Compute free: the gathers run back to back, every one waited for in full.
  const GatherWaits serial = gather_waits({0, 0}, {0, 0}, {5, 7});
  EXPECT_EQ(serial.total(), 2 * (5 + 7));
}

TEST(Sharding, ActivationsAreEachLayersOutputForTheBatch) {
  Network net;
  net.layers.resize(2);
  net.layers[0].activation_elements = 100;
  net.layers[1].activation_elements = 50;
  EXPECT_DOUBLE_EQ(activation_bytes(net, 8, Precision::kFp16), 150 * 8 * 2);
  EXPECT_DOUBLE_EQ(activation_bytes(net, 8, Precision::kFp32), 150 * 8 * 4);
}

}  // namespace
}  // namespace dagsgd::model
