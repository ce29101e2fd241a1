// CPU layers of the training runtime: dense, ReLU, convolution (im2col + GEMM), max pooling, and
// the softmax cross-entropy loss. Activations are row-major [batch x features]; an image sample is
// laid out C x H x W. Eigen stays inside layers.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace dagsgd::runtime {

// Called between blocks of a long backward computation so in-flight non-blocking collectives keep
// moving (Open MPI progresses them only inside MPI calls). May be empty.
using ProgressFn = std::function<void()>;

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  virtual const char* type() const = 0;
  virtual std::int64_t in_size() const = 0;   // per sample
  virtual std::int64_t out_size() const = 0;  // per sample
  virtual std::int64_t param_count() const { return 0; }
  // Fills this layer's parameters (He initialization for weights, zero biases).
  virtual void init_params(float* /*params*/, std::mt19937_64& /*rng*/) const {}
  // Forward FLOPs per sample (a multiply-add counts 2), for the trace.
  virtual double forward_flops() const { return 0; }

  // y = f(x). Layers may keep scratch (e.g. pooling's argmax) for the matching backward.
  virtual void forward(const float* params, const float* x, float* y, int batch) = 0;
  // Given dy, writes dparams (overwrites, param_count() floats) and dx (if not null).
  virtual void backward(const float* params, const float* x, const float* y, const float* dy,
                        float* dx, float* dparams, int batch, const ProgressFn& progress) = 0;

 private:
  std::string name_;
};

std::unique_ptr<Layer> make_dense(std::string name, std::int64_t in, std::int64_t out);
std::unique_ptr<Layer> make_relu(std::string name, std::int64_t size);
// Square kernel, stride 1, zero padding `pad`; input channels x height x width.
std::unique_ptr<Layer> make_conv(std::string name, std::int64_t channels, std::int64_t height,
                                 std::int64_t width, std::int64_t filters, std::int64_t kernel,
                                 std::int64_t pad);
// 2x2 max pooling with stride 2 (height and width must be even).
std::unique_ptr<Layer> make_maxpool2(std::string name, std::int64_t channels, std::int64_t height,
                                     std::int64_t width);

// Mean softmax cross-entropy over the batch; writes d(loss)/d(logits) into dlogits (if not
// null) and returns the loss. `correct` (if not null) gets the number of argmax hits.
double softmax_xent(const float* logits, const std::int32_t* labels, int batch, int classes,
                    float* dlogits, std::int64_t* correct);

// im2col for one sample, exposed for the tests: cols is (C*k*k) x (H_out*W_out), row-major.
void im2col(const float* x, std::int64_t channels, std::int64_t height, std::int64_t width,
            std::int64_t kernel, std::int64_t pad, float* cols);

}  // namespace dagsgd::runtime
