// The layer stack's flat parameter, gradient and momentum buffers and its activations in host
// memory: the whole model for --device cpu; for --device cuda the layer shapes and the host
// staging buffer of the gradient exchange.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "dagsgd/runtime/dataset.h"
#include "dagsgd/runtime/layers.h"

namespace dagsgd::runtime {

class HostModel {
 public:
  // Parameters initialized from `seed`; activations for training batches of `batch` samples and
  // evaluation batches of `eval_batch`.
  HostModel(std::vector<std::unique_ptr<Layer>> layers, int batch, int eval_batch,
            std::uint64_t seed);

  int layer_count() const { return static_cast<int>(layers_.size()); }
  const Layer& layer(int l) const { return *layers_[static_cast<std::size_t>(l)]; }
  const std::vector<std::unique_ptr<Layer>>& layers() const { return layers_; }
  // Where layer l's parameters start in the flat buffers.
  std::int64_t offset(int l) const { return offset_[static_cast<std::size_t>(l)]; }
  std::int64_t param_count() const { return static_cast<std::int64_t>(params_.size()); }
  std::vector<float>& params() { return params_; }
  std::vector<float>& grads() { return grads_; }

  // The training step's pieces, on the batch given to set_input().
  void set_input(const std::vector<float>& x);
  void forward(int l, int batch);
  // Mean softmax cross-entropy of the logits; keeps its gradient for backward().
  double loss(const std::int32_t* labels, int batch);
  void backward(int l, int batch, const ProgressFn& progress);
  // Momentum SGD with the (averaged) gradients.
  void sgd_update(float lr, float momentum);

  // Summed loss and argmax hits over `test` with parameters `params` (e.g. the EASGD center).
  std::pair<double, std::int64_t> evaluate(const Dataset& test, const float* params);

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<std::int64_t> offset_;
  std::vector<float> params_, grads_, velocity_;
  std::vector<std::vector<float>> acts_;   // acts_[l] is layer l's input; acts_[L] the logits
  std::vector<std::vector<float>> dacts_;  // gradient w.r.t. acts_[l]
  std::vector<float> dlogits_;
  int eval_batch_ = 0;
};

}  // namespace dagsgd::runtime
