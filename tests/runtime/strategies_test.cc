// fp16 conversion, top-k selection with error feedback, strategy flag parsing and data sharding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "dagsgd/runtime/dataset.h"
#include "dagsgd/runtime/fp16.h"
#include "dagsgd/runtime/topk.h"
#include "dagsgd/runtime/train_config.h"

namespace dagsgd::runtime {
namespace {

TEST(Fp16, KnownBitPatterns) {
  EXPECT_EQ(float_to_half(0.0f), 0x0000);
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(float_to_half(1e6f), 0x7C00);      // overflow -> inf
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::nanf("")))));
  EXPECT_EQ(float_to_half(5.960464477539063e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(half_to_float(0x0001), 5.960464477539063e-8f);
  EXPECT_EQ(half_to_float(0x3555), 0.333251953125f);
}

TEST(Fp16, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // 1 + 3 * 2^-11 is halfway between odd 1+2^-10 and even 1+2^-9: rounds up.
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    auto hh = static_cast<std::uint16_t>(h);
    if ((hh & 0x7C00) == 0x7C00 && (hh & 0x3FF) != 0) continue;  // NaN payloads
    ASSERT_EQ(float_to_half(half_to_float(hh)), hh) << std::hex << h;
  }
  std::vector<float> in{0.1f, -3.5f, 1000.25f};
  std::vector<std::uint16_t> mid(3);
  std::vector<float> out(3);
  floats_to_halves(in.data(), mid.data(), 3);
  halves_to_floats(mid.data(), out.data(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[i], in[i], std::fabs(in[i]) * 1e-3);
}

TEST(TopK, CountRoundsUpAndClamps) {
  EXPECT_EQ(topk_count(1000, 0.01), 10);
  EXPECT_EQ(topk_count(1001, 0.01), 11);
  EXPECT_EQ(topk_count(5, 0.001), 1);
  EXPECT_EQ(topk_count(5, 1.0), 5);
  EXPECT_EQ(topk_count(0, 0.5), 0);
}

TEST(TopK, SelectsLargestMagnitudesAndFeedsBackTheRest) {
  TopKCompressor c(6);
  std::vector<float> g{0.1f, -5.0f, 0.3f, 2.0f, -0.2f, 0.05f};
  std::vector<std::int32_t> idx;
  std::vector<float> val;
  c.select(g.data(), 2, idx, val);
  EXPECT_EQ(idx, (std::vector<std::int32_t>{1, 3}));
  EXPECT_EQ(val, (std::vector<float>{-5.0f, 2.0f}));
  EXPECT_EQ(c.residual(), (std::vector<float>{0.1f, 0.0f, 0.3f, 0.0f, -0.2f, 0.05f}));
  // Next round: the residual is added first, so small persistent entries eventually go out.
  std::vector<float> g2{0.1f, 0.0f, 0.3f, 0.0f, -0.2f, 0.05f};
  c.select(g2.data(), 2, idx, val);
  EXPECT_EQ(idx, (std::vector<std::int32_t>{2, 4}));
  EXPECT_FLOAT_EQ(val[0], 0.6f);
  EXPECT_FLOAT_EQ(val[1], -0.4f);
  EXPECT_FLOAT_EQ(c.residual()[0], 0.2f);
  EXPECT_FLOAT_EQ(c.residual()[5], 0.1f);
  // Conservation: what was sent plus what is left equals everything that came in.
  double in = 0;
  for (float x : g) in += x;
  for (float x : g2) in += x;
  double out = -5.0 + 2.0 + 0.6 - 0.4;
  for (float x : c.residual()) out += x;
  EXPECT_NEAR(in, out, 1e-6);
}

TEST(TopK, TiesBreakByLowerIndex) {
  TopKCompressor c(4);
  std::vector<float> g{1.0f, -1.0f, 1.0f, 1.0f};
  std::vector<std::int32_t> idx;
  std::vector<float> val;
  c.select(g.data(), 2, idx, val);
  EXPECT_EQ(idx, (std::vector<std::int32_t>{0, 1}));
}

TEST(TrainConfig, ParsesStrategies) {
  TrainConfig c;
  ASSERT_TRUE(parse_overlap("bucket:2.5", c).ok());
  EXPECT_EQ(c.overlap, OverlapKind::kBucket);
  EXPECT_DOUBLE_EQ(c.bucket_mib, 2.5);
  EXPECT_EQ(overlap_name(c), "bucket:2.5");
  ASSERT_TRUE(parse_sync("easgd:4,0.25", c).ok());
  EXPECT_EQ(c.sync, SyncKind::kEasgd);
  EXPECT_EQ(c.easgd_tau, 4);
  EXPECT_DOUBLE_EQ(c.easgd_alpha, 0.25);
  EXPECT_EQ(*parse_exchange("asa"), ExchangeKind::kAsa);
  EXPECT_EQ(*parse_exchange("rsag"), ExchangeKind::kRsag);
  EXPECT_EQ(*parse_precision("fp16"), Precision::kFp16);
  EXPECT_EQ(*parse_widths("256,128"), (std::vector<std::int64_t>{256, 128}));
}

TEST(TrainConfig, RejectsBadValuesWithClearMessages) {
  TrainConfig c;
  EXPECT_NE(parse_exchange("nccl").error().message.find("valid: allreduce, ps, asa"),
            std::string::npos);
  EXPECT_FALSE(parse_overlap("bucket:", c).ok());
  EXPECT_FALSE(parse_overlap("bucket:-1", c).ok());
  EXPECT_FALSE(parse_overlap("layerwise", c).ok());
  EXPECT_FALSE(parse_sync("easgd:0,0.5", c).ok());
  EXPECT_FALSE(parse_sync("easgd:2,1.5", c).ok());
  EXPECT_FALSE(parse_sync("easgd:2", c).ok());
  EXPECT_FALSE(parse_widths("256,,128").ok());
  EXPECT_FALSE(parse_widths("256,x").ok());
  EXPECT_FALSE(parse_precision("bf16").ok());
  TrainConfig t;
  t.topk = 0.1;
  t.exchange = ExchangeKind::kPs;
  EXPECT_FALSE(validate(t).ok());
  TrainConfig e;
  e.sync = SyncKind::kEasgd;
  e.overlap = OverlapKind::kWfbp;
  EXPECT_FALSE(validate(e).ok());
  TrainConfig b;
  b.batch = 0;
  EXPECT_FALSE(validate(b).ok());
}

TEST(Dataset, ShardsPartitionTheDataAndStackIntoTheSameGlobalBatches) {
  auto one = shard_indices(1000, 0, 1, 7);
  auto a = shard_indices(1000, 0, 2, 7);
  auto b = shard_indices(1000, 1, 2, 7);
  std::set<std::int64_t> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  EXPECT_EQ(all.size(), 1000u);
  EXPECT_EQ(a.size() + b.size(), 1000u);
  // Global batch j of size 8 on one rank == batch j of size 4 on each of two ranks.
  for (std::ptrdiff_t j = 0; j < 10; ++j) {
    std::set<std::int64_t> g1(one.begin() + 8 * j, one.begin() + 8 * j + 8);
    std::set<std::int64_t> g2(a.begin() + 4 * j, a.begin() + 4 * j + 4);
    g2.insert(b.begin() + 4 * j, b.begin() + 4 * j + 4);
    EXPECT_EQ(g1, g2) << "batch " << j;
  }
}

TEST(Dataset, ParseIdxChecksHeaderAndSize) {
  std::vector<std::int64_t> dims;
  std::string good("\0\0\x08\x01\0\0\0\x03\x05\x06\x07", 11);
  auto ok = parse_idx(good, "f", dims);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(dims, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(*ok, (std::vector<std::uint8_t>{5, 6, 7}));
  std::string short_data("\0\0\x08\x01\0\0\0\x04\x05", 9);
  EXPECT_NE(parse_idx(short_data, "'x.gz'", dims).error().message.find("'x.gz'"),
            std::string::npos);
  std::string bad_magic("\x1f\x8b\x08\x01\0\0\0\x01\x05", 9);
  EXPECT_FALSE(parse_idx(bad_magic, "f", dims).ok());
}

TEST(Dataset, MissingFileIsNamed) {
  auto d = load_idx("/nonexistent-dir", "train", 0, 1, 1);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("/nonexistent-dir/train-images-idx3-ubyte.gz"),
            std::string::npos);
}

}  // namespace
}  // namespace dagsgd::runtime
