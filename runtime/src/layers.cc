// Layer kernels on Eigen GEMMs: dense, ReLU, im2col convolution, 2x2 max pooling, softmax loss.
#include "dagsgd/runtime/layers.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "dagsgd/model/check.h"

namespace dagsgd::runtime {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapMat = Eigen::Map<RowMat>;
using CMapMat = Eigen::Map<const RowMat>;
using CMapVec = Eigen::Map<const Eigen::VectorXf>;
using MapVec = Eigen::Map<Eigen::VectorXf>;

// Rows of dW computed between two progress calls: large enough to keep the GEMM efficient,
// small enough that a multi-millisecond backward calls MPI_Test several times.
constexpr std::int64_t kProgressRows = 256;

void he_init(float* w, std::int64_t n, std::int64_t fan_in, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, std::sqrt(2.0f / static_cast<float>(fan_in)));
  for (std::int64_t i = 0; i < n; ++i) w[i] = dist(rng);
}

class Dense final : public Layer {
 public:
  Dense(std::string name, std::int64_t in, std::int64_t out)
      : Layer(std::move(name)), in_(in), out_(out) {}
  const char* type() const override { return "fc"; }
  std::int64_t in_size() const override { return in_; }
  std::int64_t out_size() const override { return out_; }
  std::int64_t param_count() const override { return out_ * in_ + out_; }
  double forward_flops() const override { return 2.0 * static_cast<double>(in_ * out_); }
  void init_params(float* p, std::mt19937_64& rng) const override {
    he_init(p, out_ * in_, in_, rng);
    std::fill(p + out_ * in_, p + out_ * in_ + out_, 0.0f);
  }
  void forward(const float* p, const float* x, float* y, int batch) override {
    CMapMat w(p, out_, in_);
    CMapVec b(p + out_ * in_, out_);
    CMapMat xm(x, batch, in_);
    MapMat ym(y, batch, out_);
    ym.noalias() = xm * w.transpose();
    ym.rowwise() += b.transpose();
  }
  void backward(const float* p, const float* x, const float* /*y*/, const float* dy, float* dx,
                float* dp, int batch, const ProgressFn& progress) override {
    CMapMat xm(x, batch, in_);
    CMapMat dym(dy, batch, out_);
    MapMat dw(dp, out_, in_);
    for (std::int64_t r = 0; r < out_; r += kProgressRows) {
      std::int64_t rows = std::min(kProgressRows, out_ - r);
      dw.middleRows(r, rows).noalias() = dym.middleCols(r, rows).transpose() * xm;
      if (progress) progress();
    }
    MapVec db(dp + out_ * in_, out_);
    db = dym.colwise().sum().transpose();
    if (dx != nullptr) {
      CMapMat w(p, out_, in_);
      MapMat dxm(dx, batch, in_);
      dxm.noalias() = dym * w;
    }
  }

 private:
  std::int64_t in_;
  std::int64_t out_;
};

class Relu final : public Layer {
 public:
  Relu(std::string name, std::int64_t size) : Layer(std::move(name)), size_(size) {}
  const char* type() const override { return "relu"; }
  std::int64_t in_size() const override { return size_; }
  std::int64_t out_size() const override { return size_; }
  void forward(const float* /*p*/, const float* x, float* y, int batch) override {
    std::int64_t n = size_ * batch;
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  }
  void backward(const float* /*p*/, const float* /*x*/, const float* y, const float* dy, float* dx,
                float* /*dp*/, int batch, const ProgressFn& /*progress*/) override {
    if (dx == nullptr) return;
    std::int64_t n = size_ * batch;
    for (std::int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
  }

 private:
  std::int64_t size_;
};

// Visits the im2col layout of one sample in memory order: `visit(col, pixel)` for each entry of
// cols (channel c, kernel offset ki, kj, output position oi, oj) and the input pixel it reads,
// -1 where it reads the zero padding.
template <class Visit>
void for_each_patch_entry(std::int64_t c_in, std::int64_t h, std::int64_t w, std::int64_t k,
                          std::int64_t pad, Visit visit) {
  std::int64_t ho = h + 2 * pad - k + 1;
  std::int64_t wo = w + 2 * pad - k + 1;
  std::int64_t col = 0;
  for (std::int64_t c = 0; c < c_in; ++c) {
    for (std::int64_t ki = 0; ki < k; ++ki) {
      for (std::int64_t kj = 0; kj < k; ++kj) {
        for (std::int64_t oi = 0; oi < ho; ++oi) {
          std::int64_t ii = oi + ki - pad;
          for (std::int64_t oj = 0; oj < wo; ++oj, ++col) {
            std::int64_t jj = oj + kj - pad;
            bool inside = ii >= 0 && ii < h && jj >= 0 && jj < w;
            visit(col, inside ? (c * h + ii) * w + jj : std::int64_t{-1});
          }
        }
      }
    }
  }
}

// col2im: the adjoint of im2col, accumulating into dx.
void col2im(const float* cols, std::int64_t c_in, std::int64_t h, std::int64_t w, std::int64_t k,
            std::int64_t pad, float* dx) {
  for_each_patch_entry(c_in, h, w, k, pad, [&](std::int64_t col, std::int64_t pixel) {
    if (pixel >= 0) dx[pixel] += cols[col];
  });
}

class Conv final : public Layer {
 public:
  Conv(std::string name, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t f,
       std::int64_t k, std::int64_t pad)
      : Layer(std::move(name)), c_(c), h_(h), w_(w), f_(f), k_(k), pad_(pad) {
    ho_ = h + 2 * pad - k + 1;
    wo_ = w + 2 * pad - k + 1;
    DAGSGD_CHECK(ho_ > 0 && wo_ > 0);
    cols_.resize(static_cast<std::size_t>(c_ * k_ * k_ * ho_ * wo_));
  }
  const char* type() const override { return "conv"; }
  std::int64_t in_size() const override { return c_ * h_ * w_; }
  std::int64_t out_size() const override { return f_ * ho_ * wo_; }
  std::int64_t param_count() const override { return f_ * c_ * k_ * k_ + f_; }
  double forward_flops() const override {
    return 2.0 * static_cast<double>(f_ * c_ * k_ * k_ * ho_ * wo_);
  }
  void init_params(float* p, std::mt19937_64& rng) const override {
    he_init(p, f_ * c_ * k_ * k_, c_ * k_ * k_, rng);
    std::fill(p + f_ * c_ * k_ * k_, p + param_count(), 0.0f);
  }
  void forward(const float* p, const float* x, float* y, int batch) override {
    std::int64_t ckk = c_ * k_ * k_;
    std::int64_t hw = ho_ * wo_;
    CMapMat wm(p, f_, ckk);
    CMapVec b(p + f_ * ckk, f_);
    MapMat cols(cols_.data(), ckk, hw);
    for (int s = 0; s < batch; ++s) {
      im2col(x + s * in_size(), c_, h_, w_, k_, pad_, cols_.data());
      MapMat ym(y + s * out_size(), f_, hw);
      ym.noalias() = wm * cols;
      ym.colwise() += b;
    }
  }
  void backward(const float* p, const float* x, const float* /*y*/, const float* dy, float* dx,
                float* dp, int batch, const ProgressFn& progress) override {
    std::int64_t ckk = c_ * k_ * k_;
    std::int64_t hw = ho_ * wo_;
    CMapMat wm(p, f_, ckk);
    MapMat dw(dp, f_, ckk);
    MapVec db(dp + f_ * ckk, f_);
    dw.setZero();
    db.setZero();
    MapMat cols(cols_.data(), ckk, hw);
    dcols_.resize(cols_.size());
    MapMat dcols(dcols_.data(), ckk, hw);
    if (dx != nullptr) std::fill(dx, dx + batch * in_size(), 0.0f);
    for (int s = 0; s < batch; ++s) {
      CMapMat dym(dy + s * out_size(), f_, hw);
      im2col(x + s * in_size(), c_, h_, w_, k_, pad_, cols_.data());
      dw.noalias() += dym * cols.transpose();
      db += dym.rowwise().sum();
      if (dx != nullptr) {
        dcols.noalias() = wm.transpose() * dym;
        col2im(dcols_.data(), c_, h_, w_, k_, pad_, dx + s * in_size());
      }
      if (progress && s % 8 == 7) progress();
    }
  }

 private:
  std::int64_t c_, h_, w_, f_, k_, pad_, ho_ = 0, wo_ = 0;
  std::vector<float> cols_;
  std::vector<float> dcols_;
};

class MaxPool2 final : public Layer {
 public:
  MaxPool2(std::string name, std::int64_t c, std::int64_t h, std::int64_t w)
      : Layer(std::move(name)), c_(c), h_(h), w_(w) {
    DAGSGD_CHECK(h % 2 == 0 && w % 2 == 0);
  }
  const char* type() const override { return "pool"; }
  std::int64_t in_size() const override { return c_ * h_ * w_; }
  std::int64_t out_size() const override { return c_ * (h_ / 2) * (w_ / 2); }
  void forward(const float* /*p*/, const float* x, float* y, int batch) override {
    std::int64_t n_out = out_size() * batch;
    argmax_.resize(static_cast<std::size_t>(n_out));
    std::int64_t ho = h_ / 2;
    std::int64_t wo = w_ / 2;
    std::int64_t o = 0;
    for (std::int64_t sc = 0; sc < batch * c_; ++sc) {
      const float* plane = x + sc * h_ * w_;
      for (std::int64_t i = 0; i < ho; ++i) {
        for (std::int64_t j = 0; j < wo; ++j, ++o) {
          std::int64_t best = (2 * i) * w_ + 2 * j;
          for (std::int64_t d : {std::int64_t{1}, w_, w_ + 1}) {
            if (plane[(2 * i) * w_ + 2 * j + d] > plane[best]) best = (2 * i) * w_ + 2 * j + d;
          }
          y[o] = plane[best];
          argmax_[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(best);
        }
      }
    }
  }
  void backward(const float* /*p*/, const float* /*x*/, const float* /*y*/, const float* dy,
                float* dx, float* /*dp*/, int batch, const ProgressFn& /*progress*/) override {
    if (dx == nullptr) return;
    std::fill(dx, dx + batch * in_size(), 0.0f);
    std::int64_t per_plane = (h_ / 2) * (w_ / 2);
    std::int64_t n_out = out_size() * batch;
    for (std::int64_t o = 0; o < n_out; ++o) {
      std::int64_t plane = o / per_plane;
      dx[plane * h_ * w_ + argmax_[static_cast<std::size_t>(o)]] += dy[o];
    }
  }

 private:
  std::int64_t c_, h_, w_;
  std::vector<std::int32_t> argmax_;
};

}  // namespace

void im2col(const float* x, std::int64_t c_in, std::int64_t h, std::int64_t w, std::int64_t k,
            std::int64_t pad, float* cols) {
  for_each_patch_entry(c_in, h, w, k, pad, [&](std::int64_t col, std::int64_t pixel) {
    cols[col] = pixel >= 0 ? x[pixel] : 0.0f;
  });
}

std::unique_ptr<Layer> make_dense(std::string name, std::int64_t in, std::int64_t out) {
  return std::make_unique<Dense>(std::move(name), in, out);
}
std::unique_ptr<Layer> make_relu(std::string name, std::int64_t size) {
  return std::make_unique<Relu>(std::move(name), size);
}
std::unique_ptr<Layer> make_conv(std::string name, std::int64_t channels, std::int64_t height,
                                 std::int64_t width, std::int64_t filters, std::int64_t kernel,
                                 std::int64_t pad) {
  return std::make_unique<Conv>(std::move(name), channels, height, width, filters, kernel, pad);
}
std::unique_ptr<Layer> make_maxpool2(std::string name, std::int64_t channels, std::int64_t height,
                                     std::int64_t width) {
  return std::make_unique<MaxPool2>(std::move(name), channels, height, width);
}

double softmax_xent(const float* logits, const std::int32_t* labels, int batch, int classes,
                    float* dlogits, std::int64_t* correct) {
  double loss = 0;
  std::int64_t hits = 0;
  for (int s = 0; s < batch; ++s) {
    const float* z = logits + static_cast<std::ptrdiff_t>(s) * classes;
    int arg = 0;
    for (int c = 1; c < classes; ++c) {
      if (z[c] > z[arg]) arg = c;
    }
    float zmax = z[arg];
    double sum = 0;
    for (int c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - zmax));
    int y = labels[s];
    if (arg == y) ++hits;
    loss += std::log(sum) - static_cast<double>(z[y] - zmax);
    if (dlogits != nullptr) {
      float* d = dlogits + static_cast<std::ptrdiff_t>(s) * classes;
      for (int c = 0; c < classes; ++c) {
        double p = std::exp(static_cast<double>(z[c] - zmax)) / sum;
        d[c] = static_cast<float>((p - (c == y ? 1.0 : 0.0)) / batch);
      }
    }
  }
  if (correct != nullptr) *correct = hits;
  return loss / batch;
}

}  // namespace dagsgd::runtime
