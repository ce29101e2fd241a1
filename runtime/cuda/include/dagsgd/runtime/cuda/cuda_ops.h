// Device ops for a data-parallel MLP trainer: buffers, copies, cuBLAS dense layers, activations,
// loss, SGD and fp16 packing. Plain pointers and ints only: no CUDA header leaks from here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/model/expected.h"

namespace dagsgd::runtime::cuda {

// Number of usable devices; 0 when there is no driver or no GPU (never fails).
int device_count();

struct DeviceInfo {
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  std::size_t memory_bytes = 0;
  int multiprocessors = 0;
};
model::Expected<DeviceInfo> device_info(int device);

// Owns the device this thread uses, one stream and a cuBLAS handle bound to that stream.
// All ops below are asynchronous on that stream unless they say otherwise.
class CudaContext {
 public:
  static model::Expected<CudaContext> create(int device = 0);
  CudaContext() = default;
  ~CudaContext();
  CudaContext(CudaContext&& other) noexcept;
  CudaContext& operator=(CudaContext&& other) noexcept;
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device() const { return device_; }
  void* stream() const { return stream_; }  // a cudaStream_t
  void* cublas() const { return cublas_; }  // a cublasHandle_t
  // Waits for the stream; returns the first asynchronous error, if any.
  model::Expected<void> synchronize() const;

 private:
  void reset() noexcept;
  int device_ = -1;
  void* stream_ = nullptr;
  void* cublas_ = nullptr;
};

// Device memory (cudaMalloc), freed on destruction.
class DeviceBuffer {
 public:
  static model::Expected<DeviceBuffer> allocate(std::size_t bytes);
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Copies on the context's stream. Host memory that is not pinned makes them synchronous.
model::Expected<void> copy_h2d(const CudaContext& ctx, void* dst, const void* src,
                               std::size_t bytes);
model::Expected<void> copy_d2h(const CudaContext& ctx, void* dst, const void* src,
                               std::size_t bytes);
model::Expected<void> copy_d2d(const CudaContext& ctx, void* dst, const void* src,
                               std::size_t bytes);
model::Expected<void> memset_zero(const CudaContext& ctx, void* dst, std::size_t bytes);

// Row-major tensors: x is batch x in, y is batch x out, w is out x in (row = output unit), b has
// `out` entries.
// y = x w^T + b
model::Expected<void> dense_forward(const CudaContext& ctx, const float* x, const float* w,
                                    const float* b, float* y, int batch, int in, int out);
// dw = dy^T x, db = column sums of dy, dx = dy w (skipped when dx is null, e.g. the first layer).
// dw and db are overwritten, not accumulated.
model::Expected<void> dense_backward(const CudaContext& ctx, const float* x, const float* w,
                                     const float* dy, float* dw, float* db, float* dx, int batch,
                                     int in, int out);
// y = max(y, 0) in place.
model::Expected<void> relu_forward(const CudaContext& ctx, float* y, std::size_t n);
// dy *= (y > 0), with y the ReLU's output.
model::Expected<void> relu_backward(const CudaContext& ctx, const float* y, float* dy,
                                    std::size_t n);
// Mean softmax cross-entropy over the batch. Writes dlogits = (softmax - onehot) / batch, and per
// sample the loss and 1/0 for "argmax == label". Labels outside [0, classes) give loss NaN.
model::Expected<void> softmax_cross_entropy(const CudaContext& ctx, const float* logits,
                                            const std::int32_t* labels, int batch, int classes,
                                            float* dlogits, float* loss, float* correct);
// params -= lr * grads
model::Expected<void> sgd_update(const CudaContext& ctx, float* params, const float* grads,
                                 std::size_t n, float lr);
// x *= alpha (e.g. 1/world_size after a sum-allreduce)
model::Expected<void> scale(const CudaContext& ctx, float* x, std::size_t n, float alpha);
// IEEE half precision packing for fp16 gradient exchange (round to nearest even).
model::Expected<void> f32_to_f16(const CudaContext& ctx, const float* src, std::uint16_t* dst,
                                 std::size_t n);
model::Expected<void> f16_to_f32(const CudaContext& ctx, const std::uint16_t* src, float* dst,
                                 std::size_t n);

// An NVTX range for Nsight Systems (no-op without a tool attached).
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace dagsgd::runtime::cuda
