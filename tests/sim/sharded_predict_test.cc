// Sharded data parallelism in predict: ZeRO-1/2 and ZeRO-3/FSDP against the closed forms of
// their plans (docs/communication.md), and the memory check.
#include <gtest/gtest.h>

#include "common/sweep_fixtures.h"
#include "common/text.h"
#include "dagsgd/model/comm_model.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/scenario.h"
#include "dagsgd/sim/sweep.h"

namespace dagsgd::sim {
namespace {

using model::CollectiveOp;
using model::Nanos;
using model::Sharding;

// One layer of 1M parameters, 1 ms forward and 2 ms backward, 4 workers on one link class
// (alpha 10 us, 1 GB/s), the exchange after backward (one gradient group: one unit), fp32.
PredictRequest one_unit(Sharding s) {
  PredictRequest r;
  r.layers = {{model::from_micros(1000), model::from_micros(2000), 1'000'000}};
  r.update = model::from_micros(400);
  r.topology.nodes = 4;
  r.topology.gpus_per_node = 1;
  r.topology.intra.alpha_ns = 10'000;
  r.topology.intra.beta_ns_per_byte = 1;
  r.topology.inter = r.topology.intra;
  r.exchange.algorithm = "ring";
  r.overlap.kind = model::OverlapPolicy::Kind::kNone;
  r.sharding = s;
  return r;
}

Nanos priced(const PredictRequest& r, CollectiveOp op) {
  auto t = model::collective_time(r.topology, op, "ring", 4e6);
  EXPECT_TRUE(t.ok());
  return t.ok() ? *t : 0;
}

TEST(ShardedPredict, ZeroOneAndTwoReduceScatterThenGatherAfterTheStepOnTheShard) {
  const PredictRequest base = one_unit(Sharding::kNone);
  const Nanos rs = priced(base, CollectiveOp::kReduceScatter);
  const Nanos ag = priced(base, CollectiveOp::kAllgather);
  const Nanos ar = priced(base, CollectiveOp::kAllreduce);
  // A ring reduce-scatter and a ring all-gather are a ring allreduce, to the rounding.
  EXPECT_NEAR(static_cast<double>(rs + ag), static_cast<double>(ar), 1);
  auto none = predict(base);
  ASSERT_TRUE(none.ok()) << none.error().message;
  // f + b + allreduce + update.
  EXPECT_NEAR(static_cast<double>(none->iteration),
              static_cast<double>(model::from_micros(3400) + ar), 1);
  EXPECT_EQ(none->gathers_per_iteration, 0);
  for (Sharding s : {Sharding::kZero1, Sharding::kZero2}) {
    auto z = predict(one_unit(s));
    ASSERT_TRUE(z.ok()) << z.error().message;
    // f + b + reduce-scatter + update / 4 + all-gather of the parameters.
    EXPECT_EQ(z->iteration, model::from_micros(3000) + rs + model::from_micros(100) + ag);
    EXPECT_EQ(z->gathers_per_iteration, 1);
    // The gather is communication, not update, in the breakdown.
    EXPECT_EQ(z->breakdown.update, model::from_micros(100));
    EXPECT_EQ(z->breakdown.comm_total, rs + ag);
    EXPECT_EQ(z->breakdown.comm_exposed, rs + ag);
    EXPECT_EQ(z->sharding, model::sharding_name(s));
  }
}

TEST(ShardedPredict, ZeroThreeAddsOneParameterAllGatherPerForwardAndPerBackward) {
  const PredictRequest base = one_unit(Sharding::kNone);
  const Nanos rs = priced(base, CollectiveOp::kReduceScatter);
  const Nanos ag = priced(base, CollectiveOp::kAllgather);
  auto zero2 = predict(one_unit(Sharding::kZero2));
  for (Sharding s : {Sharding::kZero3, Sharding::kFsdp}) {
    auto z = predict(one_unit(s));
    ASSERT_TRUE(z.ok() && zero2.ok());
    // One unit: gather, forward, gather, backward, reduce-scatter, update / 4.
    EXPECT_EQ(z->iteration, ag + model::from_micros(1000) + ag + model::from_micros(2000) + rs +
                                model::from_micros(100));
    // ZeRO-2 gathers once per iteration (after the step), ZeRO-3 once per forward and once per
    // backward: one all-gather more.
    EXPECT_EQ(z->gathers_per_iteration, 2);
    EXPECT_EQ(z->iteration - zero2->iteration, ag);
    EXPECT_EQ(z->breakdown.forward, model::from_micros(1000));
    EXPECT_EQ(z->breakdown.backward, model::from_micros(2000));
    EXPECT_EQ(z->breakdown.comm_total, rs + 2 * ag);
  }
}

TEST(ShardedPredict, ZeroThreePrefetchHidesGathersBehindCompute) {
  // Four layers of 1M parameters, one unit each (wfbp), 10 ms of forward and 20 ms of backward
  // each: every gather but the first of each pass hides behind the unit before it.
  PredictRequest r = one_unit(Sharding::kZero3);
  r.layers.assign(4, {model::from_micros(10'000), model::from_micros(20'000), 1'000'000});
  r.overlap.kind = model::OverlapPolicy::Kind::kWfbp;
  auto z = predict(r);
  ASSERT_TRUE(z.ok()) << z.error().message;
  const Nanos rs = priced(r, CollectiveOp::kReduceScatter);
  const Nanos ag = priced(r, CollectiveOp::kAllgather);
  EXPECT_EQ(z->gathers_per_iteration, 8);
  // Exposed: the first unit's forward gather, the last unit's backward gather and the input
  // layer's reduce-scatter after backward.
  EXPECT_EQ(z->iteration, model::from_micros(40'000 + 80'000 + 100) + 2 * ag + rs);
}

TEST(ShardedPredict, AJobThatDoesNotFitTheGpuIsRefusedAndShardingMakesItFit) {
  PredictRequest r = one_unit(Sharding::kNone);
  // 1M parameters in fp32 with Adam: 16 MB of model states per GPU unsharded, 4 MB with zero3.
  r.gpu_memory = 10e6;
  auto none = predict(r);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(testing::contains(none.error().message, "does not fit the GPU's memory"))
      << none.error().message;
  r.sharding = Sharding::kZero3;
  auto z3 = predict(r);
  ASSERT_TRUE(z3.ok()) << z3.error().message;
  // Model states divided by 4, plus the one unit gathered whole (4 MB of fp32 parameters).
  EXPECT_DOUBLE_EQ(z3->memory.total(), 16e6 / 4 + 4e6);
  EXPECT_DOUBLE_EQ(z3->gpu_memory, 10e6);
}

TEST(ShardedPredict, ScenariosCarryTheLevelAndTheGpusMemory) {
  const auto& catalogs = testing::bundled_catalogs();
  ExchangeSpec e;
  e.sharding = "zero4";
  auto bad = resolve_scenario({2, 4, "nvlink2", "ib-edr"}, e, catalogs);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(testing::contains(bad.error().message, "valid sharding levels"))
      << bad.error().message;
  e.sharding = "zero2";
  e.topk = 0.01;
  EXPECT_FALSE(resolve_scenario({2, 4, "nvlink2", "ib-edr"}, e, catalogs).ok());
  e.topk = 0;
  auto s = resolve_scenario({2, 4, "nvlink2", "ib-edr"}, e, catalogs);
  ASSERT_TRUE(s.ok()) << s.error().message;
  NetworkSpec n;
  n.network = "resnet50";
  auto w = NetworkWorkload::resolve(n, catalogs);
  ASSERT_TRUE(w.ok()) << w.error().message;
  auto r = (*w)->request(*s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->sharding, Sharding::kZero2);
  EXPECT_DOUBLE_EQ(r->gpu_memory, 32.0 * model::kGiB);  // v100: 32 GB of HBM2
  EXPECT_GT(r->activation_bytes, 0);
  auto p = (*w)->evaluate(*s, false);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->sharding, "zero2");
  EXPECT_GT(p->memory.total(), p->memory.activations);
}

// The flow-level tier prices the reduce-scatters and all-gathers by their transfers on the
// cluster's links: on a plain cluster every link carries what the ring formula assumes, so both
// tiers agree (to the rounding of each collective).
TEST(ShardedPredict, BothTiersAgreeOnAPlainCluster) {
  auto w = NetworkWorkload::resolve({"resnet50"}, testing::bundled_catalogs());
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (const char* sharding : {"zero2", "fsdp"}) {
    ExchangeSpec e;
    e.sharding = sharding;
    HardwareSpec h{4, 4, "pcie3", "10gbe"};
    auto analytic = resolve_scenario(h, e, testing::bundled_catalogs());
    h.network_model = "flow";
    auto flow = resolve_scenario(h, e, testing::bundled_catalogs());
    ASSERT_TRUE(analytic.ok() && flow.ok());
    auto a = (*w)->evaluate(*analytic, false);
    auto f = (*w)->evaluate(*flow, false);
    ASSERT_TRUE(a.ok() && f.ok());
    EXPECT_EQ(f->network_model, "flow");
    EXPECT_GT(f->gathers_per_iteration, 0);
    EXPECT_NEAR(static_cast<double>(f->iteration), static_cast<double>(a->iteration),
                1e-5 * static_cast<double>(a->iteration))
        << sharding;
    EXPECT_NEAR(static_cast<double>(f->breakdown.comm_total),
                static_cast<double>(a->breakdown.comm_total),
                1e-5 * static_cast<double>(a->breakdown.comm_total))
        << sharding;
    // A faster fabric makes the sharded job's collectives faster.
    EXPECT_LT(f->if_double_bandwidth, f->iteration) << sharding;
  }
}

// A sweep split across processes carries the sharding figures with each result.
TEST(ShardedPredict, ResultsCarryShardingAndMemoryOverTheWire) {
  ExchangeSpec e;
  e.sharding = "zero3";
  auto s = resolve_scenario({2, 4, "nvlink2", "ib-edr"}, e, testing::bundled_catalogs());
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto w = NetworkWorkload::resolve({"resnet50"}, testing::bundled_catalogs());
  ASSERT_TRUE(w.ok()) << w.error().message;
  auto r = (*w)->evaluate(*s, false);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto back = result_from_wire(result_to_wire(*r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->sharding, "zero3");
  EXPECT_EQ(back->gathers_per_iteration, r->gathers_per_iteration);
  EXPECT_GT(back->gathers_per_iteration, 0);
  EXPECT_EQ(back->memory.total(), r->memory.total());  // bit-exact doubles
  EXPECT_EQ(back->memory.gathered, r->memory.gathered);
  EXPECT_EQ(back->gpu_memory, r->gpu_memory);
}

}  // namespace
}  // namespace dagsgd::sim
