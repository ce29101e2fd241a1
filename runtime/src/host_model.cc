// Host-side forward, backward, loss, momentum SGD and evaluation of the layer stack.
#include "host_model.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "dagsgd/runtime/model_builder.h"

namespace dagsgd::runtime {

HostModel::HostModel(std::vector<std::unique_ptr<Layer>> layers, int batch, int eval_batch,
                     std::uint64_t seed)
    : layers_(std::move(layers)), eval_batch_(eval_batch) {
  std::int64_t total = 0;
  for (const auto& l : layers_) {
    offset_.push_back(total);
    total += l->param_count();
  }
  params_.assign(static_cast<std::size_t>(total), 0.0f);
  grads_.assign(params_.size(), 0.0f);
  velocity_.assign(params_.size(), 0.0f);
  std::mt19937_64 rng(seed);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    layers_[l]->init_params(params_.data() + offset_[l], rng);
  }
  const int cap = std::max(batch, eval_batch);
  acts_.resize(layers_.size() + 1);
  dacts_.resize(layers_.size() + 1);
  for (std::size_t l = 0; l <= layers_.size(); ++l) {
    std::int64_t width = l == 0 ? kImageInputs : layers_[l - 1]->out_size();
    acts_[l].assign(static_cast<std::size_t>(width * cap), 0.0f);
    if (l > 0 && l < layers_.size()) {
      dacts_[l].assign(static_cast<std::size_t>(width * batch), 0.0f);
    }
  }
  dlogits_.assign(static_cast<std::size_t>(kImageClasses) * static_cast<std::size_t>(batch), 0.0f);
}

void HostModel::set_input(const std::vector<float>& x) {
  std::memcpy(acts_[0].data(), x.data(), sizeof(float) * x.size());
}

void HostModel::forward(int l, int batch) {
  auto i = static_cast<std::size_t>(l);
  layers_[i]->forward(params_.data() + offset_[i], acts_[i].data(), acts_[i + 1].data(), batch);
}

double HostModel::loss(const std::int32_t* labels, int batch) {
  return softmax_xent(acts_[layers_.size()].data(), labels, batch, kImageClasses, dlogits_.data(),
                      nullptr);
}

void HostModel::backward(int l, int batch, const ProgressFn& progress) {
  auto i = static_cast<std::size_t>(l);
  const float* dy = i + 1 == layers_.size() ? dlogits_.data() : dacts_[i + 1].data();
  float* dx = l > 0 ? dacts_[i].data() : nullptr;
  layers_[i]->backward(params_.data() + offset_[i], acts_[i].data(), acts_[i + 1].data(), dy, dx,
                       grads_.data() + offset_[i], batch, progress);
}

void HostModel::sgd_update(float lr, float momentum) {
  std::size_t n = params_.size();
  for (std::size_t k = 0; k < n; ++k) {
    velocity_[k] = momentum * velocity_[k] + grads_[k];
    params_[k] -= lr * velocity_[k];
  }
}

std::pair<double, std::int64_t> HostModel::evaluate(const Dataset& test, const float* params) {
  double loss = 0;
  std::int64_t correct = 0;
  for (std::int64_t s = 0; s < test.count; s += eval_batch_) {
    int nb = static_cast<int>(std::min<std::int64_t>(eval_batch_, test.count - s));
    std::memcpy(acts_[0].data(), test.images.data() + s * kImageInputs,
                sizeof(float) * static_cast<std::size_t>(nb * kImageInputs));
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      layers_[l]->forward(params + offset_[l], acts_[l].data(), acts_[l + 1].data(), nb);
    }
    std::int64_t hits = 0;
    loss += nb * softmax_xent(acts_[layers_.size()].data(), test.labels.data() + s, nb,
                              kImageClasses, nullptr, &hits);
    correct += hits;
  }
  return {loss, correct};
}

}  // namespace dagsgd::runtime
