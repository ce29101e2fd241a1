// Every collective's formulas (the rows of model/src/collective_algorithms.cc beyond allreduce)
// against values computed by hand; arithmetic in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dagsgd/model/comm_model.h"

namespace dagsgd::model {
namespace {

// alpha 10 us, beta 1 ns/byte (1 GB/s), gamma 0.5 ns/byte, on both link classes.
Topology one_per_node(int p) {
  LinkCost l;
  l.alpha_ns = 10'000;
  l.beta_ns_per_byte = 1;
  l.gamma_ns_per_byte = 0.5;
  Topology t;
  t.nodes = p;
  t.intra = l;
  t.inter = l;
  return t;
}

constexpr double kM = 8e6;  // bytes: the whole vector

Nanos priced(const Topology& t, CollectiveOp op, const std::string& algorithm, double bytes = kM) {
  auto r = collective_time(t, op, algorithm, bytes);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? *r : -1;
}

TEST(Collectives, RingReduceScatterThenAllgatherMoveTheBytesOfARingAllreduce) {
  for (int p : {2, 3, 8, 64}) {
    const Topology t = one_per_node(p);
    const auto rs = static_cast<double>(priced(t, CollectiveOp::kReduceScatter, "ring"));
    const auto ag = static_cast<double>(priced(t, CollectiveOp::kAllgather, "ring"));
    // (p-1)α + (p-1)/p·Mβ + (p-1)/p·Mγ  and  (p-1)α + (p-1)/p·Mβ
    const double f = (p - 1.0) / p;
    EXPECT_NEAR(rs, (p - 1) * 10'000.0 + f * kM * 1.5, 1) << p;
    EXPECT_NEAR(ag, (p - 1) * 10'000.0 + f * kM, 1) << p;
    EXPECT_NEAR(rs + ag, static_cast<double>(priced(t, CollectiveOp::kAllreduce, "ring")), 1) << p;
  }
}

TEST(Collectives, AllToAllBroadcastReduceAndSendRecvByHand) {
  const Topology t = one_per_node(8);
  // Pairwise all-to-all: 7α + 7/8·Mβ = 70 us + 7 ms.
  EXPECT_EQ(priced(t, CollectiveOp::kAlltoall, "pairwise"), 70'000 + 7'000'000);
  // Ring broadcast, a pipelined chain: 7α + Mβ = 70 us + 8 ms.
  EXPECT_EQ(priced(t, CollectiveOp::kBroadcast, "ring"), 70'000 + 8'000'000);
  // Binomial broadcast: 3(α + Mβ) = 30 us + 24 ms.
  EXPECT_EQ(priced(t, CollectiveOp::kBroadcast, "binomial"), 30'000 + 24'000'000);
  // Ring reduce: 7α + Mβ + Mγ; binomial reduce: 3(α + Mβ + Mγ).
  EXPECT_EQ(priced(t, CollectiveOp::kReduce, "ring"), 70'000 + 8'000'000 + 4'000'000);
  EXPECT_EQ(priced(t, CollectiveOp::kReduce, "binomial"), 30'000 + 36'000'000);
  // libnbc's reduce-scatter: binomial reduce 3(α + Mβ + Mγ), then the root's 7 chunks,
  // 7α + 7/8·Mβ; its linear all-gather moves the ring's bytes: 7α + 7/8·Mβ.
  EXPECT_EQ(priced(t, CollectiveOp::kReduceScatter, "binomial"),
            30'000 + 36'000'000 + 70'000 + 7'000'000);
  EXPECT_EQ(priced(t, CollectiveOp::kAllgather, "linear"), 70'000 + 7'000'000);
  // One message: α + Mβ.
  EXPECT_EQ(priced(t, CollectiveOp::kSendRecv, "direct"), 10'000 + 8'000'000);
}

TEST(Collectives, AutoTakesTheCheapestRow) {
  const Topology t = one_per_node(8);
  // 1 KB: binomial 3(α + 1 us) = 33 us beats the chain's 7α + 1 us = 71 us; 8 MB: the chain.
  EXPECT_EQ(priced(t, CollectiveOp::kBroadcast, "auto", 1000), 33'000);
  EXPECT_EQ(priced(t, CollectiveOp::kBroadcast, "auto"),
            priced(t, CollectiveOp::kBroadcast, "ring"));
  // Allreduce's auto is make_comm_model's (tree or ring, as NCCL decides).
  ExchangeConfig c;
  auto m = make_comm_model(t, c);
  ASSERT_TRUE(m.ok());
  for (std::int64_t elements : {100LL, 2'000'000LL}) {
    EXPECT_EQ(priced(t, CollectiveOp::kAllreduce, "auto", static_cast<double>(elements) * 4),
              (*m)->exchange_time(elements))
        << elements;
  }
}

TEST(Collectives, OneRankOrNoBytesCostNothing) {
  EXPECT_EQ(priced(one_per_node(1), CollectiveOp::kAlltoall, "pairwise"), 0);
  EXPECT_EQ(priced(one_per_node(4), CollectiveOp::kAllgather, "ring", 0), 0);
}

TEST(Collectives, BadNamesAndSizesAreErrorsThatListTheValidOnes) {
  auto op = parse_collective_op("all_to_all");
  ASSERT_FALSE(op.ok());
  EXPECT_NE(op.error().message.find("alltoall"), std::string::npos) << op.error().message;
  EXPECT_EQ(*parse_collective_op("reduce_scatter"), CollectiveOp::kReduceScatter);
  for (CollectiveOp o :
       {CollectiveOp::kAllreduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllgather,
        CollectiveOp::kAlltoall, CollectiveOp::kBroadcast, CollectiveOp::kReduce,
        CollectiveOp::kSendRecv}) {
    EXPECT_EQ(*parse_collective_op(collective_op_name(o)), o);
    EXPECT_FALSE(collective_op_algorithms(o).empty()) << collective_op_name(o);
  }
  auto alg = collective_time(one_per_node(4), CollectiveOp::kAlltoall, "ring", kM);
  ASSERT_FALSE(alg.ok());
  EXPECT_NE(alg.error().message.find("pairwise"), std::string::npos) << alg.error().message;
  for (double bad :
       {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    EXPECT_FALSE(collective_time(one_per_node(4), CollectiveOp::kBroadcast, "ring", bad).ok())
        << bad;
  }
  // A size whose time is out of range is refused, not wrapped.
  EXPECT_FALSE(collective_time(one_per_node(4), CollectiveOp::kAllgather, "ring", 1e30).ok());
}

}  // namespace
}  // namespace dagsgd::model
