// The CUDA backend's host side: device/stream/cuBLAS handles, memory, and the dense layer as
// cuBLAS SGEMMs around the element-wise kernels.
#include "dagsgd/runtime/cuda/cuda_ops.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <stdexcept>
#include <utility>

#include "cuda_kernels.h"

namespace dagsgd::runtime::cuda {

namespace {

model::Error cuda_error(const char* what, cudaError_t e) {
  return model::Error{std::string("CUDA: ") + what + ": " + cudaGetErrorName(e) + " (" +
                      cudaGetErrorString(e) + ")"};
}

model::Expected<void> check(const char* what, cudaError_t e) {
  if (e != cudaSuccess) return cuda_error(what, e);
  return model::ok();
}

model::Expected<void> check_blas(const char* what, cublasStatus_t s) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    return model::Error{std::string("cuBLAS: ") + what + ": " + cublasGetStatusName(s) + " (" +
                        cublasGetStatusString(s) + ")"};
  }
  return model::ok();
}

cudaStream_t stream_of(const CudaContext& ctx) { return static_cast<cudaStream_t>(ctx.stream()); }
cublasHandle_t blas_of(const CudaContext& ctx) { return static_cast<cublasHandle_t>(ctx.cublas()); }

void require(bool ok, const char* what) {
  if (!ok) throw std::invalid_argument(std::string("dagsgd cuda op: ") + what);
}

// C (m x n) = op(A) (m x k) * op(B) (k x n), column-major, overwriting C.
model::Expected<void> gemm(const CudaContext& ctx, const char* what, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k, const float* a, int lda,
                           const float* b, int ldb, float* c, int ldc) {
  const float one = 1.f;
  const float zero = 0.f;
  return check_blas(
      what, cublasSgemm(blas_of(ctx), ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc));
}

}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error for later calls
    return 0;
  }
  return n;
}

model::Expected<DeviceInfo> device_info(int device) {
  cudaDeviceProp prop{};
  DAGSGD_TRY(check("cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, device)));
  DeviceInfo info;
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.memory_bytes = prop.totalGlobalMem;
  info.multiprocessors = prop.multiProcessorCount;
  return info;
}

// ---- CudaContext ----

model::Expected<CudaContext> CudaContext::create(int device) {
  int count = device_count();
  if (device < 0 || device >= count) {
    return model::Error{"CUDA: device " + std::to_string(device) + " does not exist (" +
                        std::to_string(count) + " device(s) visible)"};
  }
  DAGSGD_TRY(check("cudaSetDevice", cudaSetDevice(device)));
  CudaContext ctx;
  ctx.device_ = device;
  cudaStream_t stream = nullptr;
  DAGSGD_TRY(check("cudaStreamCreateWithFlags",
                   cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)));
  ctx.stream_ = stream;
  cublasHandle_t handle = nullptr;
  DAGSGD_TRY(check_blas("cublasCreate", cublasCreate(&handle)));
  ctx.cublas_ = handle;
  DAGSGD_TRY(check_blas("cublasSetStream", cublasSetStream(handle, stream)));
  // Deterministic results run to run (no atomics-based split-K reductions).
  DAGSGD_TRY(
      check_blas("cublasSetAtomicsMode", cublasSetAtomicsMode(handle, CUBLAS_ATOMICS_NOT_ALLOWED)));
  return ctx;
}

CudaContext::~CudaContext() { reset(); }

CudaContext::CudaContext(CudaContext&& other) noexcept { *this = std::move(other); }

CudaContext& CudaContext::operator=(CudaContext&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, -1);
    stream_ = std::exchange(other.stream_, nullptr);
    cublas_ = std::exchange(other.cublas_, nullptr);
  }
  return *this;
}

void CudaContext::reset() noexcept {
  if (cublas_ != nullptr) (void)cublasDestroy(static_cast<cublasHandle_t>(cublas_));
  if (stream_ != nullptr) (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  cublas_ = nullptr;
  stream_ = nullptr;
  device_ = -1;
}

model::Expected<void> CudaContext::synchronize() const {
  return check("cudaStreamSynchronize", cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
}

// ---- DeviceBuffer ----

model::Expected<DeviceBuffer> DeviceBuffer::allocate(std::size_t bytes) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, bytes); e != cudaSuccess) {
    return model::Error{cuda_error("cudaMalloc", e).message + " for " + std::to_string(bytes) +
                        " bytes"};
  }
  b.data_ = p;
  b.bytes_ = bytes;
  return b;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) (void)cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) (void)cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

// ---- copies ----

model::Expected<void> copy_h2d(const CudaContext& ctx, void* dst, const void* src,
                               std::size_t bytes) {
  return check("cudaMemcpyAsync(HtoD)",
               cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_of(ctx)));
}

model::Expected<void> copy_d2h(const CudaContext& ctx, void* dst, const void* src,
                               std::size_t bytes) {
  return check("cudaMemcpyAsync(DtoH)",
               cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_of(ctx)));
}

model::Expected<void> copy_d2d(const CudaContext& ctx, void* dst, const void* src,
                               std::size_t bytes) {
  return check("cudaMemcpyAsync(DtoD)",
               cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(ctx)));
}

model::Expected<void> memset_zero(const CudaContext& ctx, void* dst, std::size_t bytes) {
  return check("cudaMemsetAsync", cudaMemsetAsync(dst, 0, bytes, stream_of(ctx)));
}

// ---- dense layer ----
// cuBLAS is column-major. A row-major r x c matrix is the column-major c x r matrix (its
// transpose) with leading dimension c, so: x -> X^T (in x batch), w -> W^T (in x out),
// y -> Y^T (out x batch).

model::Expected<void> dense_forward(const CudaContext& ctx, const float* x, const float* w,
                                    const float* b, float* y, int batch, int in, int out) {
  require(batch > 0 && in > 0 && out > 0, "dense_forward: sizes must be positive");
  // Y^T (out x batch) = (W^T)^T (out x in) * X^T (in x batch)
  DAGSGD_TRY(gemm(ctx, "cublasSgemm(dense forward)", CUBLAS_OP_T, CUBLAS_OP_N, out, batch, in, w,
                  in, x, in, y, out));
  if (b != nullptr) {
    DAGSGD_TRY(check("bias_add", kernels::bias_add(stream_of(ctx), y, b, batch, out)));
  }
  return model::ok();
}

model::Expected<void> dense_backward(const CudaContext& ctx, const float* x, const float* w,
                                     const float* dy, float* dw, float* db, float* dx, int batch,
                                     int in, int out) {
  require(batch > 0 && in > 0 && out > 0, "dense_backward: sizes must be positive");
  // dW^T (in x out) = X^T (in x batch) * (dY^T)^T (batch x out)
  DAGSGD_TRY(gemm(ctx, "cublasSgemm(weight grad)", CUBLAS_OP_N, CUBLAS_OP_T, in, out, batch, x, in,
                  dy, out, dw, in));
  if (db != nullptr) {
    DAGSGD_TRY(check("bias_grad", kernels::bias_grad(stream_of(ctx), dy, db, batch, out)));
  }
  if (dx != nullptr) {
    // dX^T (in x batch) = W^T (in x out) * dY^T (out x batch)
    DAGSGD_TRY(gemm(ctx, "cublasSgemm(input grad)", CUBLAS_OP_N, CUBLAS_OP_N, in, batch, out, w, in,
                    dy, out, dx, in));
  }
  return model::ok();
}

model::Expected<void> relu_forward(const CudaContext& ctx, float* y, std::size_t n) {
  return check("relu_forward", kernels::relu_forward(stream_of(ctx), y, n));
}

model::Expected<void> relu_backward(const CudaContext& ctx, const float* y, float* dy,
                                    std::size_t n) {
  return check("relu_backward", kernels::relu_backward(stream_of(ctx), y, dy, n));
}

model::Expected<void> softmax_cross_entropy(const CudaContext& ctx, const float* logits,
                                            const std::int32_t* labels, int batch, int classes,
                                            float* dlogits, float* loss, float* correct) {
  require(batch > 0 && classes > 0, "softmax_cross_entropy: sizes must be positive");
  return check("softmax_cross_entropy",
               kernels::softmax_cross_entropy(stream_of(ctx), logits, labels, batch, classes,
                                              dlogits, loss, correct));
}

model::Expected<void> sgd_update(const CudaContext& ctx, float* params, const float* grads,
                                 std::size_t n, float lr) {
  return check("sgd_update", kernels::axpy_inplace(stream_of(ctx), params, grads, n, -lr));
}

model::Expected<void> scale(const CudaContext& ctx, float* x, std::size_t n, float alpha) {
  return check("scale", kernels::scale(stream_of(ctx), x, n, alpha));
}

model::Expected<void> f32_to_f16(const CudaContext& ctx, const float* src, std::uint16_t* dst,
                                 std::size_t n) {
  return check("f32_to_f16", kernels::f32_to_f16(stream_of(ctx), src, dst, n));
}

model::Expected<void> f16_to_f32(const CudaContext& ctx, const std::uint16_t* src, float* dst,
                                 std::size_t n) {
  return check("f16_to_f32", kernels::f16_to_f32(stream_of(ctx), src, dst, n));
}

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }
NvtxRange::~NvtxRange() { nvtxRangePop(); }

}  // namespace dagsgd::runtime::cuda
