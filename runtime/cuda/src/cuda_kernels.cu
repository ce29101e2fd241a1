// The element-wise kernels of the CUDA backend, all in one translation unit because nvcc is slow.
// Matrix products are cuBLAS (cuda_ops.cc); these are the glue around them.
#include <cuda_fp16.h>

#include <cmath>

#include "cuda_kernels.h"

namespace dagsgd::runtime::cuda::kernels {

namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;  // grid-stride loops cover the rest

unsigned blocks_for(std::size_t n) {
  std::size_t b = (n + kThreads - 1) / kThreads;
  if (b == 0) b = 1;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

__global__ void bias_add_kernel(float* y, const float* b, std::size_t n, int out) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    y[i] += b[i % static_cast<std::size_t>(out)];
  }
}

// One thread per output column; batches are small enough that a serial sum per column is fine
// and keeps the result deterministic (no atomics).
__global__ void bias_grad_kernel(const float* dy, float* db, int batch, int out) {
  for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < out; j += gridDim.x * blockDim.x) {
    float s = 0.f;
    for (int r = 0; r < batch; ++r) s += dy[static_cast<std::size_t>(r) * out + j];
    db[j] = s;
  }
}

__global__ void relu_forward_kernel(float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    y[i] = y[i] > 0.f ? y[i] : 0.f;
  }
}

__global__ void relu_backward_kernel(const float* y, float* dy, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    if (!(y[i] > 0.f)) dy[i] = 0.f;
  }
}

// One thread per sample: MLP heads have few classes.
__global__ void softmax_xent_kernel(const float* logits, const std::int32_t* labels, int batch,
                                    int classes, float* dlogits, float* loss, float* correct) {
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < batch; r += gridDim.x * blockDim.x) {
    const float* z = logits + static_cast<std::size_t>(r) * classes;
    float* dz = dlogits + static_cast<std::size_t>(r) * classes;
    int label = labels[r];
    float m = z[0];
    int arg = 0;
    for (int c = 1; c < classes; ++c) {
      if (z[c] > m) {
        m = z[c];
        arg = c;
      }
    }
    float sum = 0.f;
    for (int c = 0; c < classes; ++c) sum += expf(z[c] - m);
    float inv_batch = 1.f / static_cast<float>(batch);
    for (int c = 0; c < classes; ++c) {
      float p = expf(z[c] - m) / sum;
      dz[c] = (p - (c == label ? 1.f : 0.f)) * inv_batch;
    }
    bool valid = label >= 0 && label < classes;
    loss[r] = valid ? logf(sum) + m - z[label] : nanf("");
    correct[r] = valid && arg == label ? 1.f : 0.f;
  }
}

__global__ void axpy_kernel(float* x, const float* g, std::size_t n, float a) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    x[i] += a * g[i];
  }
}

__global__ void scale_kernel(float* x, std::size_t n, float alpha) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    x[i] *= alpha;
  }
}

__global__ void f32_to_f16_kernel(const float* src, std::uint16_t* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    dst[i] = __half_as_ushort(__float2half_rn(src[i]));
  }
}

__global__ void f16_to_f32_kernel(const std::uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    dst[i] = __half2float(__ushort_as_half(src[i]));
  }
}

}  // namespace

cudaError_t bias_add(cudaStream_t stream, float* y, const float* b, int batch, int out) {
  std::size_t n = static_cast<std::size_t>(batch) * static_cast<std::size_t>(out);
  if (n == 0) return cudaSuccess;
  bias_add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, b, n, out);
  return cudaGetLastError();
}

cudaError_t bias_grad(cudaStream_t stream, const float* dy, float* db, int batch, int out) {
  if (out <= 0) return cudaSuccess;
  bias_grad_kernel<<<blocks_for(static_cast<std::size_t>(out)), kThreads, 0, stream>>>(dy, db,
                                                                                       batch, out);
  return cudaGetLastError();
}

cudaError_t relu_forward(cudaStream_t stream, float* y, std::size_t n) {
  if (n == 0) return cudaSuccess;
  relu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, n);
  return cudaGetLastError();
}

cudaError_t relu_backward(cudaStream_t stream, const float* y, float* dy, std::size_t n) {
  if (n == 0) return cudaSuccess;
  relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, dy, n);
  return cudaGetLastError();
}

cudaError_t softmax_cross_entropy(cudaStream_t stream, const float* logits,
                                  const std::int32_t* labels, int batch, int classes,
                                  float* dlogits, float* loss, float* correct) {
  if (batch <= 0) return cudaSuccess;
  softmax_xent_kernel<<<blocks_for(static_cast<std::size_t>(batch)), kThreads, 0, stream>>>(
      logits, labels, batch, classes, dlogits, loss, correct);
  return cudaGetLastError();
}

cudaError_t axpy_inplace(cudaStream_t stream, float* x, const float* g, std::size_t n, float a) {
  if (n == 0) return cudaSuccess;
  axpy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, g, n, a);
  return cudaGetLastError();
}

cudaError_t scale(cudaStream_t stream, float* x, std::size_t n, float alpha) {
  if (n == 0) return cudaSuccess;
  scale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(x, n, alpha);
  return cudaGetLastError();
}

cudaError_t f32_to_f16(cudaStream_t stream, const float* src, std::uint16_t* dst, std::size_t n) {
  if (n == 0) return cudaSuccess;
  f32_to_f16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

cudaError_t f16_to_f32(cudaStream_t stream, const std::uint16_t* src, float* dst, std::size_t n) {
  if (n == 0) return cudaSuccess;
  f16_to_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, dst, n);
  return cudaGetLastError();
}

}  // namespace dagsgd::runtime::cuda::kernels
