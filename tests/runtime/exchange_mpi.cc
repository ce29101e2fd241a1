// Gradient exchange strategies checked against a plain MPI_Allreduce of the same gradients
// (run under mpirun with 2, 3 or 4 ranks; see tests/runtime/tests.cmake).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>
#include <vector>

#include "dagsgd/runtime/exchange.h"
#include "dagsgd/runtime/fp16.h"
#include "dagsgd/runtime/topk.h"
#include "mpi_world.h"  // runtime/src: the trainer's own world_rank/world_size

namespace dagsgd::runtime {
namespace {

float half_round(float x) { return half_to_float(float_to_half(x)); }

std::vector<float> random_grads(std::size_t n, int round) {
  std::mt19937 rng(static_cast<unsigned>(1000 * world_rank() + round));
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

std::vector<float> reference_mean(const std::vector<float>& mine) {
  std::vector<float> sum(mine.size());
  MPI_Allreduce(mine.data(), sum.data(), static_cast<int>(mine.size()), MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
  for (auto& x : sum) x /= static_cast<float>(world_size());
  return sum;
}

// Every rank must hold bit-identical results, or the replicas drift apart.
void expect_same_on_all_ranks(const std::vector<float>& v) {
  std::vector<float> lo(v.size());
  std::vector<float> hi(v.size());
  MPI_Allreduce(v.data(), lo.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_MIN,
                MPI_COMM_WORLD);
  MPI_Allreduce(v.data(), hi.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_MAX,
                MPI_COMM_WORLD);
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(lo[i], hi[i]) << "element " << i;
}

// Groups of uneven sizes, including one smaller than the number of ranks.
std::vector<GroupRange> test_groups() { return {{0, 1}, {1, 300}, {301, 700}}; }
constexpr std::size_t kN = 1001;

void check_dense(ExchangeKind kind, Precision prec, bool interleave) {
  GradientExchange ex(ExchangeConfig{kind, prec, 0.0}, test_groups());
  for (int round = 0; round < 2; ++round) {
    auto g = random_grads(kN, round);
    auto want = reference_mean(g);
    if (interleave) {
      // As under WFBP: issue in backward order, progress, then wait in another order.
      for (int k = ex.groups() - 1; k >= 0; --k) {
        ex.start(k, g.data());
        ex.progress();
      }
      for (int k = 0; k < ex.groups(); ++k) ex.wait(k);
    } else {
      for (int k = 0; k < ex.groups(); ++k) {
        ex.start(k, g.data());
        ex.wait(k);
      }
    }
    // fp16: inputs ~N(0,1) rounded at 2^-11 relative, sums of <= 4 values.
    float tol = prec == Precision::kFp16 ? 4e-3f : 1e-5f;
    for (std::size_t i = 0; i < kN; ++i) {
      ASSERT_NEAR(g[i], want[i], tol * (1.0f + std::fabs(want[i]))) << "element " << i;
    }
    expect_same_on_all_ranks(g);
  }
}

TEST(ExchangeMpi, AllreduceFp32) { check_dense(ExchangeKind::kAllreduce, Precision::kFp32, false); }
TEST(ExchangeMpi, AllreduceFp16) { check_dense(ExchangeKind::kAllreduce, Precision::kFp16, false); }
TEST(ExchangeMpi, AllreduceOverlapped) {
  check_dense(ExchangeKind::kAllreduce, Precision::kFp32, true);
}
TEST(ExchangeMpi, ParameterServerFp32) { check_dense(ExchangeKind::kPs, Precision::kFp32, false); }
TEST(ExchangeMpi, ParameterServerFp16) { check_dense(ExchangeKind::kPs, Precision::kFp16, false); }
TEST(ExchangeMpi, ParameterServerOverlapped) {
  check_dense(ExchangeKind::kPs, Precision::kFp32, true);
}
TEST(ExchangeMpi, AlltoallSumAllgatherFp32) {
  check_dense(ExchangeKind::kAsa, Precision::kFp32, false);
}
TEST(ExchangeMpi, AlltoallSumAllgatherFp16) {
  check_dense(ExchangeKind::kAsa, Precision::kFp16, false);
}
TEST(ExchangeMpi, AlltoallSumAllgatherOverlapped) {
  check_dense(ExchangeKind::kAsa, Precision::kFp16, true);
}

TEST(ExchangeMpi, ReduceScatterAllgatherFp32) {
  check_dense(ExchangeKind::kRsag, Precision::kFp32, false);
}
TEST(ExchangeMpi, ReduceScatterAllgatherFp16) {
  check_dense(ExchangeKind::kRsag, Precision::kFp16, false);
}
TEST(ExchangeMpi, ReduceScatterAllgatherOverlapped) {
  check_dense(ExchangeKind::kRsag, Precision::kFp32, true);
}

void check_topk(Precision prec) {
  const double ratio = 0.05;
  GradientExchange ex(ExchangeConfig{ExchangeKind::kAllreduce, prec, ratio}, test_groups());
  std::vector<std::vector<float>> residual(test_groups().size());
  for (std::size_t k = 0; k < residual.size(); ++k) {
    residual[k].assign(static_cast<std::size_t>(test_groups()[k].count), 0.0f);
  }
  for (int round = 0; round < 3; ++round) {
    auto g = random_grads(kN, round);
    auto original = g;
    for (int k = ex.groups() - 1; k >= 0; --k) ex.start(k, g.data());
    for (int k = 0; k < ex.groups(); ++k) ex.wait(k);
    // What this rank sent: gradient + old residual - new residual; exactly k entries.
    std::vector<float> sent(kN, 0.0f);
    for (int k = 0; k < ex.groups(); ++k) {
      auto r = test_groups()[static_cast<std::size_t>(k)];
      const auto& res = ex.topk_residual(k);
      int nonzero = 0;
      for (std::int64_t i = 0; i < r.count; ++i) {
        auto at = static_cast<std::size_t>(r.offset + i);
        float acc =
            original[at] + residual[static_cast<std::size_t>(k)][static_cast<std::size_t>(i)];
        float left = res[static_cast<std::size_t>(i)];
        // An entry is either sent whole (residual cleared) or kept whole (not sent).
        if (left == 0.0f) {
          sent[at] = acc;
          ++nonzero;
        } else {
          ASSERT_EQ(left, acc);
        }
      }
      EXPECT_EQ(nonzero, topk_count(r.count, ratio)) << "group " << k;
      residual[static_cast<std::size_t>(k)] = res;
    }
    if (prec == Precision::kFp16) {
      for (auto& x : sent) x = half_round(x);
    }
    auto want = reference_mean(sent);
    for (std::size_t i = 0; i < kN; ++i) ASSERT_NEAR(g[i], want[i], 1e-5f) << "element " << i;
    expect_same_on_all_ranks(g);
  }
}

TEST(ExchangeMpi, TopKFp32) { check_topk(Precision::kFp32); }
TEST(ExchangeMpi, TopKFp16) { check_topk(Precision::kFp16); }

TEST(ExchangeMpi, ElasticAveraging) {
  for (ExchangeKind kind :
       {ExchangeKind::kAllreduce, ExchangeKind::kPs, ExchangeKind::kAsa, ExchangeKind::kRsag}) {
    GradientExchange ex(ExchangeConfig{kind, Precision::kFp32, 0.0}, {{0, kN}});
    auto x = random_grads(kN, 7);
    std::vector<float> center(kN);
    for (std::size_t i = 0; i < kN; ++i) center[i] = 0.1f * static_cast<float>(i % 13);
    const double alpha = 0.3;
    std::vector<float> d(kN);
    for (std::size_t i = 0; i < kN; ++i) d[i] = 0.3f * (x[i] - center[i]);
    std::vector<float> sum(kN);
    MPI_Allreduce(d.data(), sum.data(), static_cast<int>(kN), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    auto x_before = x;
    auto c_before = center;
    std::vector<float> scratch;
    elastic_average(ex, x.data(), center.data(), static_cast<std::int64_t>(kN), alpha, scratch);
    for (std::size_t i = 0; i < kN; ++i) {
      ASSERT_NEAR(x[i], x_before[i] - d[i], 1e-6f);
      ASSERT_NEAR(center[i], c_before[i] + sum[i], 1e-5f);
    }
    expect_same_on_all_ranks(center);
  }
}

}  // namespace
}  // namespace dagsgd::runtime

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    // One report, from rank 0; the others still fail the run through their exit code.
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int rc = RUN_ALL_TESTS();
  int worst = 0;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
