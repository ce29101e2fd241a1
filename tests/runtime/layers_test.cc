// Numeric gradient checks of the CPU layers (dense, conv via im2col, pooling, ReLU) and the
// softmax cross-entropy loss, in double-checked float arithmetic.
#include "dagsgd/runtime/layers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace dagsgd::runtime {
namespace {

std::vector<float> randn(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Loss L = sum(y * r) for a fixed random r, so dL/dy = r. Compares the layer's backward with
// central differences of L in every parameter and input.
void gradient_check(Layer& layer, int batch, unsigned seed, bool spaced = false) {
  const double tol = 2e-2;
  std::mt19937_64 rng(seed);
  std::vector<float> params(static_cast<std::size_t>(layer.param_count()));
  layer.init_params(params.data(), rng);
  // Non-zero biases, so the check covers them too.
  for (auto& p : params) p += 0.05f;
  auto x = randn(static_cast<std::size_t>(layer.in_size() * batch), seed + 1);
  if (spaced) {
    // Distinct values 0.1 apart: the finite difference step cannot change which input wins a
    // max-pooling window.
    std::vector<std::size_t> order(x.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    for (std::size_t i = 0; i < x.size(); ++i) x[order[i]] = 0.1f * static_cast<float>(i) - 1.0f;
  }
  auto r = randn(static_cast<std::size_t>(layer.out_size() * batch), seed + 2);
  std::vector<float> y(r.size());
  auto loss = [&]() {
    layer.forward(params.data(), x.data(), y.data(), batch);
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * r[i];
    return s;
  };
  loss();
  std::vector<float> dparams(params.size(), 0.0f);
  std::vector<float> dx(x.size(), 0.0f);
  int progress_calls = 0;
  layer.backward(params.data(), x.data(), y.data(), r.data(), dx.data(), dparams.data(), batch,
                 [&] { ++progress_calls; });
  const float h = 1e-2f;
  auto check = [&](std::vector<float>& v, const std::vector<float>& grad, const char* what) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      float keep = v[i];
      v[i] = keep + h;
      double up = loss();
      v[i] = keep - h;
      double down = loss();
      v[i] = keep;
      double numeric = (up - down) / (2.0 * h);
      ASSERT_NEAR(grad[i], numeric, tol * (1.0 + std::fabs(numeric)))
          << layer.type() << " " << what << "[" << i << "]";
    }
  };
  check(params, dparams, "param");
  check(x, dx, "input");
}

TEST(Layers, DenseGradient) {
  auto l = make_dense("fc", 7, 5);
  EXPECT_EQ(l->param_count(), 7 * 5 + 5);
  gradient_check(*l, 3, 11);
}

TEST(Layers, DenseCallsProgressBetweenBlocks) {
  auto l = make_dense("fc", 3, 600);  // 600 output rows: three blocks of dW
  std::vector<float> p(static_cast<std::size_t>(l->param_count()), 0.1f);
  std::vector<float> x(3, 1.0f), y(600), dy(600, 1.0f), dx(3), dp(p.size());
  l->forward(p.data(), x.data(), y.data(), 1);
  int calls = 0;
  l->backward(p.data(), x.data(), y.data(), dy.data(), dx.data(), dp.data(), 1, [&] { ++calls; });
  EXPECT_EQ(calls, 3);
}

TEST(Layers, ConvGradient) {
  auto l = make_conv("conv", 2, 5, 6, 3, 3, 1);
  EXPECT_EQ(l->out_size(), 3 * 5 * 6);
  gradient_check(*l, 2, 21);
}

TEST(Layers, ConvWithoutPaddingGradient) {
  auto l = make_conv("conv", 1, 6, 6, 2, 5, 0);
  EXPECT_EQ(l->out_size(), 2 * 2 * 2);
  gradient_check(*l, 2, 22);
}

TEST(Layers, ReluAndPoolGradient) {
  // Random inputs have no ties or zeros, where these are not differentiable.
  auto relu = make_relu("relu", 12);
  gradient_check(*relu, 2, 31);
  auto pool = make_maxpool2("pool", 2, 4, 6);
  EXPECT_EQ(pool->out_size(), 2 * 2 * 3);
  gradient_check(*pool, 2, 32, true);
}

TEST(Layers, Im2colMatchesDirectConvolution) {
  // 1 channel 3x3 input, 2x2 kernel, no padding: cols is 4 x 4.
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> cols(16);
  im2col(x.data(), 1, 3, 3, 2, 0, cols.data());
  std::vector<float> want{1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9};
  EXPECT_EQ(cols, want);
  // Padding 1: the corner of a 3x3 output sees zeros.
  std::vector<float> padded(std::size_t{9} * 9);
  im2col(x.data(), 1, 3, 3, 3, 1, padded.data());
  EXPECT_EQ(padded[0], 0.0f);          // kernel (0,0) at output (0,0) reads x[-1][-1]
  EXPECT_EQ(padded[4 * 9 + 4], 5.0f);  // kernel centre at output centre reads x[1][1]
}

TEST(Layers, SoftmaxXentGradientAndValue) {
  const int batch = 3;
  const int classes = 4;
  auto z = randn(static_cast<std::size_t>(batch) * classes, 41);
  std::vector<std::int32_t> labels{0, 3, 2};
  std::vector<float> dz(z.size());
  std::int64_t correct = -1;
  double loss = softmax_xent(z.data(), labels.data(), batch, classes, dz.data(), &correct);
  EXPECT_GE(correct, 0);
  // Uniform logits: loss is log(classes) and nothing is "correct" beyond ties at index 0.
  std::vector<float> flat(z.size(), 0.0f);
  EXPECT_NEAR(softmax_xent(flat.data(), labels.data(), batch, classes, nullptr, nullptr),
              std::log(4.0), 1e-6);
  const float h = 1e-3f;
  for (std::size_t i = 0; i < z.size(); ++i) {
    float keep = z[i];
    z[i] = keep + h;
    double up = softmax_xent(z.data(), labels.data(), batch, classes, nullptr, nullptr);
    z[i] = keep - h;
    double down = softmax_xent(z.data(), labels.data(), batch, classes, nullptr, nullptr);
    z[i] = keep;
    EXPECT_NEAR(dz[i], (up - down) / (2.0 * h), 1e-3) << i;
  }
  EXPECT_GT(loss, 0.0);
}

}  // namespace
}  // namespace dagsgd::runtime
