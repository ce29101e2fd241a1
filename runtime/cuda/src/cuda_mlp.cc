// CudaMlp: forward, loss, backward and SGD of a dense+ReLU network on one GPU, one NVTX range and
// one layer scope (for CUPTI attribution) per layer and phase.
#include "dagsgd/runtime/cuda/cuda_mlp.h"

#include <cmath>
#include <random>
#include <stdexcept>

namespace dagsgd::runtime::cuda {

namespace {

std::size_t layer_size(int in, int out) {
  return static_cast<std::size_t>(in) * static_cast<std::size_t>(out) +
         static_cast<std::size_t>(out);
}

// The layer scope (CUPTI) and the NVTX range of one layer's work.
class Scope {
 public:
  Scope(LayerScopeSink* sink, const std::string& layer, trace::Phase phase)
      : label_(layer + " " + trace::phase_name(phase)),
        nvtx_(label_.c_str()),
        scope_(sink, layer, phase) {}

 private:
  std::string label_;
  NvtxRange nvtx_;
  LayerScope scope_;
};

// Allocates `bytes` of device memory into `to`.
model::Expected<void> allocate_into(DeviceBuffer& to, std::size_t bytes) {
  auto b = DeviceBuffer::allocate(bytes);
  if (!b) return b.error();
  to = std::move(*b);
  return model::ok();
}

}  // namespace

model::Expected<void> CudaMlp::validate(const CudaMlpConfig& config) {
  if (config.widths.size() < 2) {
    return model::Error{"mlp: need at least 2 widths (inputs and classes), got " +
                        std::to_string(config.widths.size())};
  }
  for (std::size_t i = 0; i < config.widths.size(); ++i) {
    if (config.widths[i] <= 0) {
      return model::Error{"mlp: width " + std::to_string(i) + " is " +
                          std::to_string(config.widths[i]) + "; widths must be positive"};
    }
  }
  if (!config.names.empty() && config.names.size() + 1 != config.widths.size()) {
    return model::Error{"mlp: " + std::to_string(config.names.size()) + " layer names for " +
                        std::to_string(config.widths.size() - 1) + " layers"};
  }
  if (config.max_batch <= 0) {
    return model::Error{"mlp: max_batch is " + std::to_string(config.max_batch) +
                        "; it must be positive"};
  }
  return model::ok();
}

std::vector<float> CudaMlp::initial_params(const CudaMlpConfig& config) {
  std::vector<float> out;
  std::mt19937_64 rng(config.seed);
  for (std::size_t l = 0; l + 1 < config.widths.size(); ++l) {
    int in = config.widths[l];
    int out_n = config.widths[l + 1];
    // He-uniform: keeps ReLU activations' variance roughly constant across layers.
    float limit = std::sqrt(6.f / static_cast<float>(in));
    std::uniform_real_distribution<float> dist(-limit, limit);
    for (std::size_t i = 0; i < static_cast<std::size_t>(in) * static_cast<std::size_t>(out_n);
         ++i) {
      out.push_back(dist(rng));
    }
    out.insert(out.end(), static_cast<std::size_t>(out_n), 0.f);
  }
  return out;
}

model::Expected<CudaMlp> CudaMlp::create(const CudaContext& ctx, const CudaMlpConfig& config) {
  DAGSGD_TRY(validate(config));
  CudaMlp m;
  m.ctx_ = &ctx;
  m.widths_ = config.widths;
  m.names_ = config.names;
  m.max_batch_ = config.max_batch;
  std::size_t total = 0;
  for (int l = 0; l < m.num_layers(); ++l) {
    m.offsets_.push_back(total);
    total += layer_size(m.in_features(l), m.out_features(l));
  }
  auto batch = static_cast<std::size_t>(config.max_batch);
  DAGSGD_TRY(allocate_into(m.params_, total * sizeof(float)));
  DAGSGD_TRY(allocate_into(m.grads_, total * sizeof(float)));
  for (int l = 0; l < m.num_layers(); ++l) {
    std::size_t bytes = batch * static_cast<std::size_t>(m.out_features(l)) * sizeof(float);
    DAGSGD_TRY(allocate_into(m.acts_.emplace_back(), bytes));
    DAGSGD_TRY(allocate_into(m.dacts_.emplace_back(), bytes));
  }
  DAGSGD_TRY(allocate_into(m.loss_, batch * sizeof(float)));
  DAGSGD_TRY(allocate_into(m.correct_, batch * sizeof(float)));

  DAGSGD_TRY(m.upload_params(initial_params(config)));
  DAGSGD_TRY(memset_zero(ctx, m.grads_.data(), m.grads_.bytes()));
  DAGSGD_TRY(ctx.synchronize());
  return m;
}

std::string CudaMlp::layer_name(int layer) const {
  if (!names_.empty()) return names_.at(static_cast<std::size_t>(layer));
  return "fc" + std::to_string(layer + 1);
}

std::size_t CudaMlp::layer_param_count(int layer) const {
  return layer_size(in_features(layer), out_features(layer));
}

model::Expected<void> CudaMlp::forward(const float* x, int batch) {
  if (batch <= 0 || batch > max_batch_) {
    throw std::invalid_argument("CudaMlp::forward: batch " + std::to_string(batch) +
                                " outside 1.." + std::to_string(max_batch_));
  }
  for (int l = 0; l < num_layers(); ++l) DAGSGD_TRY(forward_layer(l, x, batch));
  return model::ok();
}

model::Expected<void> CudaMlp::forward_layer(int l, const float* x, int batch) {
  if (batch <= 0 || batch > max_batch_ || l < 0 || l >= num_layers()) {
    throw std::invalid_argument("CudaMlp::forward_layer: layer " + std::to_string(l) +
                                " or batch " + std::to_string(batch) + " out of range");
  }
  Scope scope(sink_, layer_name(l), trace::Phase::kForward);
  const float* in = l == 0 ? x : acts_[static_cast<std::size_t>(l) - 1].as<float>();
  float* out = acts_[static_cast<std::size_t>(l)].as<float>();
  const float* w = layer_params(l);
  const float* b = w + static_cast<std::size_t>(in_features(l)) * out_features(l);
  DAGSGD_TRY(dense_forward(*ctx_, in, w, b, out, batch, in_features(l), out_features(l)));
  if (l + 1 < num_layers()) {
    DAGSGD_TRY(relu_forward(*ctx_, out, static_cast<std::size_t>(batch) * out_features(l)));
  }
  return model::ok();
}

model::Expected<void> CudaMlp::loss(const std::int32_t* labels, int batch) {
  if (batch <= 0 || batch > max_batch_) {
    throw std::invalid_argument("CudaMlp::loss: batch " + std::to_string(batch) + " outside 1.." +
                                std::to_string(max_batch_));
  }
  Scope scope(sink_, "loss", trace::Phase::kForward);
  return softmax_cross_entropy(*ctx_, acts_.back().as<float>(), labels, batch, widths_.back(),
                               dacts_.back().as<float>(), loss_.as<float>(), correct_.as<float>());
}

model::Expected<LossStats> CudaMlp::read_loss(int batch) const {
  if (batch <= 0 || batch > max_batch_) {
    throw std::invalid_argument("CudaMlp::read_loss: batch outside 1..max_batch");
  }
  std::vector<float> loss(static_cast<std::size_t>(batch));
  std::vector<float> correct(static_cast<std::size_t>(batch));
  DAGSGD_TRY(copy_d2h(*ctx_, loss.data(), loss_.data(), loss.size() * sizeof(float)));
  DAGSGD_TRY(copy_d2h(*ctx_, correct.data(), correct_.data(), correct.size() * sizeof(float)));
  DAGSGD_TRY(ctx_->synchronize());
  LossStats s;
  for (std::size_t i = 0; i < loss.size(); ++i) {
    s.mean_loss += loss[i];
    s.accuracy += correct[i];
  }
  s.mean_loss /= static_cast<double>(batch);
  s.accuracy /= static_cast<double>(batch);
  return s;
}

model::Expected<void> CudaMlp::backward(
    const float* x, int batch, const std::function<model::Expected<void>(int)>& on_layer_done) {
  if (batch <= 0 || batch > max_batch_) {
    throw std::invalid_argument("CudaMlp::backward: batch " + std::to_string(batch) +
                                " outside 1.." + std::to_string(max_batch_));
  }
  for (int l = num_layers() - 1; l >= 0; --l) {
    {
      Scope scope(sink_, layer_name(l), trace::Phase::kBackward);
      auto li = static_cast<std::size_t>(l);
      float* dy = dacts_[li].as<float>();
      if (l + 1 < num_layers()) {
        // dacts_[l] holds d(loss)/d(ReLU output); the mask turns it into d/d(pre-activation).
        DAGSGD_TRY(relu_backward(*ctx_, acts_[li].as<float>(), dy,
                                 static_cast<std::size_t>(batch) * out_features(l)));
      }
      const float* in = l == 0 ? x : acts_[li - 1].as<float>();
      float* dx = l == 0 ? nullptr : dacts_[li - 1].as<float>();
      const float* w = layer_params(l);
      float* dw = layer_grads(l);
      float* db = dw + static_cast<std::size_t>(in_features(l)) * out_features(l);
      DAGSGD_TRY(
          dense_backward(*ctx_, in, w, dy, dw, db, dx, batch, in_features(l), out_features(l)));
    }
    if (on_layer_done) DAGSGD_TRY(on_layer_done(l));
  }
  return model::ok();
}

model::Expected<void> CudaMlp::update(float lr) {
  Scope scope(sink_, "all", trace::Phase::kUpdate);
  return sgd_update(*ctx_, params(), grads(), param_count(), lr);
}

model::Expected<void> CudaMlp::update_layer(int layer, float lr) {
  Scope scope(sink_, layer_name(layer), trace::Phase::kUpdate);
  return sgd_update(*ctx_, layer_params(layer), layer_grads(layer), layer_param_count(layer), lr);
}

model::Expected<std::vector<float>> CudaMlp::download_params() const {
  std::vector<float> host(param_count());
  DAGSGD_TRY(copy_d2h(*ctx_, host.data(), params_.data(), params_.bytes()));
  DAGSGD_TRY(ctx_->synchronize());
  return host;
}

model::Expected<std::vector<float>> CudaMlp::download_grads() const {
  std::vector<float> host(param_count());
  DAGSGD_TRY(copy_d2h(*ctx_, host.data(), grads_.data(), grads_.bytes()));
  DAGSGD_TRY(ctx_->synchronize());
  return host;
}

model::Expected<void> CudaMlp::upload_params(const std::vector<float>& host) {
  if (host.size() != param_count()) {
    throw std::invalid_argument("CudaMlp::upload_params: " + std::to_string(host.size()) +
                                " values for " + std::to_string(param_count()) + " parameters");
  }
  DAGSGD_TRY(copy_h2d(*ctx_, params_.data(), host.data(), params_.bytes()));
  return ctx_->synchronize();
}

}  // namespace dagsgd::runtime::cuda
