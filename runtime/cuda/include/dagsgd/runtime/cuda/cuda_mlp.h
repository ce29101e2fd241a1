// A multi-layer perceptron on one GPU (dense + ReLU layers, softmax cross-entropy head): the unit a
// data-parallel trainer drives per rank. Parameters and gradients are one device buffer each, with
// every layer's part contiguous, so a layer (or a bucket of adjacent layers) is one MPI message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/cuda/cuda_layer_scope.h"
#include "dagsgd/runtime/cuda/cuda_ops.h"

namespace dagsgd::runtime::cuda {

struct CudaMlpConfig {
  std::vector<int> widths;         // input features, hidden widths..., classes (at least 2 entries)
  int max_batch = 0;               // activations are allocated for this many samples
  std::uint64_t seed = 1;          // parameter initialisation
  std::vector<std::string> names;  // per layer, for attribution; empty: "fc1", "fc2", ...
};

struct LossStats {
  double mean_loss = 0;
  double accuracy = 0;  // fraction of samples whose argmax is the label
};

class CudaMlp {
 public:
  // Checks a config without touching a device.
  static model::Expected<void> validate(const CudaMlpConfig& config);
  // The initial parameters create() uploads, in the device layout: per layer the weights
  // (out x in, row-major), then the bias; He-uniform weights from `seed`, zero biases.
  // Deterministic, so a CPU reference can start from the same point.
  static std::vector<float> initial_params(const CudaMlpConfig& config);

  // Uploads the initial parameters. `ctx` must outlive the MLP and stay where it is (not moved).
  static model::Expected<CudaMlp> create(const CudaContext& ctx, const CudaMlpConfig& config);
  CudaMlp() = default;

  int num_layers() const { return static_cast<int>(widths_.size()) - 1; }
  int in_features(int layer) const { return widths_.at(static_cast<std::size_t>(layer)); }
  int out_features(int layer) const { return widths_.at(static_cast<std::size_t>(layer) + 1); }
  int max_batch() const { return max_batch_; }
  // config.names[layer], or "fc1", "fc2", ... (1-based, as in the network specs).
  std::string layer_name(int layer) const;

  std::size_t param_count() const { return params_.bytes() / sizeof(float); }
  std::size_t layer_offset(int layer) const { return offsets_.at(static_cast<std::size_t>(layer)); }
  std::size_t layer_param_count(int layer) const;
  float* params() const { return params_.as<float>(); }
  float* layer_params(int layer) const { return params() + layer_offset(layer); }
  // Same layout as the parameters: layer l's gradient is [weights | bias], contiguous.
  float* grads() const { return grads_.as<float>(); }
  float* layer_grads(int layer) const { return grads() + layer_offset(layer); }
  const float* output() const { return acts_.empty() ? nullptr : acts_.back().as<float>(); }

  // Kernels launched by forward/loss/backward/update are attributed to the layer and phase
  // (e.g. by the CUPTI collector). Null: no attribution. NVTX ranges are always emitted.
  void set_layer_sink(LayerScopeSink* sink) { sink_ = sink; }

  // x: device, batch x in_features(0), row-major; 0 < batch <= max_batch.
  model::Expected<void> forward(const float* x, int batch);
  // One layer of forward(), for trainers that time layers on the host: call for 0 .. L-1 in
  // order; x (the network input) is read by layer 0 only.
  model::Expected<void> forward_layer(int layer, const float* x, int batch);
  // After forward(): the loss gradient for backward() and per-sample loss/accuracy.
  // labels: device, `batch` int32 class indices.
  model::Expected<void> loss(const std::int32_t* labels, int batch);
  // Mean loss and accuracy of the last loss() (waits for the stream).
  model::Expected<LossStats> read_loss(int batch) const;
  // Back-propagates the last loss() from the output layer down. on_layer_done(l) runs on the host
  // right after layer l's gradient work was enqueued (layers L-1 .. 0), where a wait-free-backprop
  // trainer starts that layer's exchange; its error stops the backward pass.
  model::Expected<void> backward(
      const float* x, int batch,
      const std::function<model::Expected<void>(int layer)>& on_layer_done = {});
  // params -= lr * grads, for all layers or one.
  model::Expected<void> update(float lr);
  model::Expected<void> update_layer(int layer, float lr);

  // Host copies; they wait for the stream.
  model::Expected<std::vector<float>> download_params() const;
  model::Expected<std::vector<float>> download_grads() const;
  model::Expected<void> upload_params(const std::vector<float>& host);

 private:
  const CudaContext* ctx_ = nullptr;
  std::vector<int> widths_;
  std::vector<std::string> names_;
  int max_batch_ = 0;
  std::vector<std::size_t> offsets_;  // per layer, into params_/grads_ (in floats)
  DeviceBuffer params_;
  DeviceBuffer grads_;
  std::vector<DeviceBuffer> acts_;   // per layer output, max_batch x out
  std::vector<DeviceBuffer> dacts_;  // gradient w.r.t. each layer's output
  DeviceBuffer loss_;                // per sample
  DeviceBuffer correct_;             // per sample, 1/0
  LayerScopeSink* sink_ = nullptr;
};

}  // namespace dagsgd::runtime::cuda
