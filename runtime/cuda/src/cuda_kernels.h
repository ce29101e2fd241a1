// Launchers for the element-wise kernels of cuda_kernels.cu (private: CUDA types allowed here).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dagsgd::runtime::cuda::kernels {

// Each returns the launch error (cudaGetLastError) and runs asynchronously on `stream`.
cudaError_t bias_add(cudaStream_t stream, float* y, const float* b, int batch, int out);
cudaError_t bias_grad(cudaStream_t stream, const float* dy, float* db, int batch, int out);
cudaError_t relu_forward(cudaStream_t stream, float* y, std::size_t n);
cudaError_t relu_backward(cudaStream_t stream, const float* y, float* dy, std::size_t n);
cudaError_t softmax_cross_entropy(cudaStream_t stream, const float* logits,
                                  const std::int32_t* labels, int batch, int classes,
                                  float* dlogits, float* loss, float* correct);
cudaError_t axpy_inplace(cudaStream_t stream, float* x, const float* g, std::size_t n, float a);
cudaError_t scale(cudaStream_t stream, float* x, std::size_t n, float alpha);
cudaError_t f32_to_f16(cudaStream_t stream, const float* src, std::uint16_t* dst, std::size_t n);
cudaError_t f16_to_f32(cudaStream_t stream, const std::uint16_t* src, float* dst, std::size_t n);

}  // namespace dagsgd::runtime::cuda::kernels
