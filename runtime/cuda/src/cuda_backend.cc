// `dagsgd train --device cuda`: the trainer's DeviceBackend on one GPU per rank (CudaMlp), with
// the CUPTI collector attributing kernels and copies to layers when tracing. Built as the plug-in
// libdagsgd-cuda-backend.so (device_backend.h), which the runtime loads on first use.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "dagsgd/runtime/cuda/cuda_mlp.h"
#include "dagsgd/runtime/cuda/cuda_ops.h"
#include "dagsgd/runtime/cuda/cupti_collector.h"
#include "device_backend.h"

namespace dagsgd::runtime {

namespace {

using cuda::CudaContext;
using cuda::CudaMlp;
using cuda::DeviceBuffer;

class CudaBackend final : public DeviceBackend {
 public:
  static model::Expected<std::unique_ptr<DeviceBackend>> create(const DeviceSetup& s) {
    std::unique_ptr<CudaBackend> b(new CudaBackend());
    int count = cuda::device_count();
    if (count < 1) return model::Error{"--device cuda: no CUDA device visible"};
    int device = s.local_rank % count;
    if (s.tracing) {
      // Before the context exists, so that its first copies and kernels are recorded too.
      // CUPTI stamps records with now_ns (CLOCK_MONOTONIC); the trainer maps them to rank 0.
      CuptiCollectorOptions o;
      o.host_clock_ns = s.host_clock_ns;
      o.trace_base_ns = 0;
      o.host_pid = s.rank;
      auto c = CuptiCollector::start(o);
      if (!c) return model::Error{"--device cuda: cannot trace: " + c.error().message};
      b->collector_ = std::move(*c);
    }
    auto ctx = CudaContext::create(device);
    if (!ctx) return ctx.error();
    b->ctx_ = std::make_unique<CudaContext>(std::move(*ctx));
    auto info = cuda::device_info(device);
    b->name_ = "cuda:" + std::to_string(device) + (info ? " (" + info->name + ")" : "");

    cuda::CudaMlpConfig mc;
    mc.widths.push_back(static_cast<int>(s.layers.front().in));
    for (const auto& l : s.layers) {
      mc.widths.push_back(static_cast<int>(l.out));
      mc.names.push_back(l.name);
    }
    mc.max_batch = s.max_batch;
    mc.seed = s.seed;
    auto mlp = CudaMlp::create(*b->ctx_, mc);
    if (!mlp) return mlp.error();
    b->mlp_ = std::move(*mlp);
    b->mlp_.set_layer_sink(b->collector_.get());

    auto alloc = [](std::size_t bytes, DeviceBuffer& out) -> model::Expected<void> {
      auto buf = DeviceBuffer::allocate(bytes);
      if (!buf) return buf.error();
      out = std::move(*buf);
      return model::ok();
    };
    auto batch = static_cast<std::size_t>(s.max_batch);
    DAGSGD_TRY(alloc(batch * static_cast<std::size_t>(s.layers.front().in) * sizeof(float), b->x_));
    DAGSGD_TRY(alloc(batch * sizeof(std::int32_t), b->y_));
    DAGSGD_TRY(alloc(b->mlp_.param_count() * sizeof(float), b->velocity_));
    DAGSGD_TRY(cuda::memset_zero(*b->ctx_, b->velocity_.data(), b->velocity_.bytes()));
    DAGSGD_TRY(b->ctx_->synchronize());
    return std::unique_ptr<DeviceBackend>(std::move(b));
  }

  ~CudaBackend() override {
    // The MLP's buffers go before the context; the collector (if still on) last.
    mlp_ = CudaMlp();
    x_ = DeviceBuffer();
    y_ = DeviceBuffer();
    velocity_ = DeviceBuffer();
    ctx_.reset();
  }

  std::string describe() const override { return name_; }

  void set_iteration(std::int64_t iteration) override {
    if (collector_) collector_->set_iteration(iteration);
  }

  model::Expected<void> upload_batch(const float* x, const std::int32_t* y, int batch) override {
    LayerScope scope(collector_.get(), "input", trace::Phase::kH2D);
    auto n = static_cast<std::size_t>(batch);
    DAGSGD_TRY(cuda::copy_h2d(*ctx_, x_.data(), x,
                              n * static_cast<std::size_t>(mlp_.in_features(0)) * sizeof(float)));
    DAGSGD_TRY(cuda::copy_h2d(*ctx_, y_.data(), y, n * sizeof(std::int32_t)));
    return ctx_->synchronize();
  }

  model::Expected<void> forward(int layer, int batch) override {
    return mlp_.forward_layer(layer, x_.as<float>(), batch);
  }

  model::Expected<void> loss(int batch) override { return mlp_.loss(y_.as<std::int32_t>(), batch); }

  model::Expected<void> backward(int batch, const std::function<void(int)>& on_layer) override {
    return mlp_.backward(x_.as<float>(), batch, [&](int l) -> model::Expected<void> {
      on_layer(l);
      return model::ok();
    });
  }

  model::Expected<void> download_grads(std::int64_t offset, std::int64_t count, float* host,
                                       const std::string& label) override {
    LayerScope scope(collector_.get(), label, trace::Phase::kComm);
    // Host memory is pageable: the copy waits for the stream, then returns with the data.
    DAGSGD_TRY(cuda::copy_d2h(*ctx_, host + offset, mlp_.grads() + offset,
                              static_cast<std::size_t>(count) * sizeof(float)));
    return ctx_->synchronize();
  }

  model::Expected<void> update(const float* host_grads, float lr, float momentum) override {
    std::size_t n = mlp_.param_count();
    {
      LayerScope scope(collector_.get(), "all", trace::Phase::kComm);
      DAGSGD_TRY(cuda::copy_h2d(*ctx_, mlp_.grads(), host_grads, n * sizeof(float)));
    }
    LayerScope scope(collector_.get(), "all", trace::Phase::kUpdate);
    // v = momentum v + g; p -= lr v (as the CPU trainer), from the ops' two primitives.
    auto* v = velocity_.as<float>();
    DAGSGD_TRY(cuda::scale(*ctx_, v, n, momentum));
    DAGSGD_TRY(cuda::sgd_update(*ctx_, v, mlp_.grads(), n, -1.0f));
    return cuda::sgd_update(*ctx_, mlp_.params(), v, n, lr);
  }

  model::Expected<double> read_loss(int batch) override {
    auto s = mlp_.read_loss(batch);
    if (!s) return s.error();
    return s->mean_loss;
  }

  model::Expected<std::pair<double, std::int64_t>> evaluate(const float* x, const std::int32_t* y,
                                                            std::int64_t count) override {
    mlp_.set_layer_sink(nullptr);
    auto r = evaluate_batches(x, y, count);
    mlp_.set_layer_sink(collector_.get());
    return r;
  }

  model::Expected<std::vector<trace::Event>> take_events() override {
    if (!collector_) return std::vector<trace::Event>{};
    return collector_->drain();
  }

  model::Expected<std::vector<trace::Event>> finish_events() override {
    if (!collector_) return std::vector<trace::Event>{};
    auto events = collector_->drain_and_stop();
    collector_.reset();
    mlp_.set_layer_sink(nullptr);
    return events;
  }

 private:
  CudaBackend() = default;

  model::Expected<std::pair<double, std::int64_t>> evaluate_batches(const float* x,
                                                                    const std::int32_t* y,
                                                                    std::int64_t count) {
    double loss = 0;
    std::int64_t hits = 0;
    auto in = static_cast<std::int64_t>(mlp_.in_features(0));
    for (std::int64_t s = 0; s < count; s += mlp_.max_batch()) {
      int nb = static_cast<int>(std::min<std::int64_t>(mlp_.max_batch(), count - s));
      DAGSGD_TRY(cuda::copy_h2d(*ctx_, x_.data(), x + s * in,
                                static_cast<std::size_t>(nb * in) * sizeof(float)));
      DAGSGD_TRY(cuda::copy_h2d(*ctx_, y_.data(), y + s,
                                static_cast<std::size_t>(nb) * sizeof(std::int32_t)));
      DAGSGD_TRY(mlp_.forward(x_.as<float>(), nb));
      DAGSGD_TRY(mlp_.loss(y_.as<std::int32_t>(), nb));
      auto st = mlp_.read_loss(nb);
      if (!st) return st.error();
      loss += st->mean_loss * nb;
      hits += std::llround(st->accuracy * nb);
    }
    return std::pair<double, std::int64_t>{loss, hits};
  }

  // Declared first, destroyed last: CUPTI stays on until the device work is torn down.
  std::unique_ptr<CuptiCollector> collector_;
  std::unique_ptr<CudaContext> ctx_;
  CudaMlp mlp_;
  DeviceBuffer x_;
  DeviceBuffer y_;
  DeviceBuffer velocity_;
  std::string name_;
};

model::Expected<void> probe() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return model::Error{std::string("--device cuda: no CUDA device (cudaGetDeviceCount: ") +
                        cudaGetErrorName(e) + ", " + cudaGetErrorString(e) + ")"};
  }
  if (n < 1) {
    return model::Error{"--device cuda: no CUDA device (cudaGetDeviceCount: 0 devices)"};
  }
  return model::ok();
}

model::Expected<std::unique_ptr<DeviceBackend>> make(const DeviceSetup& setup) {
  if (setup.layers.empty()) return model::Error{"--device cuda: the model has no layers"};
  return CudaBackend::create(setup);
}

}  // namespace

}  // namespace dagsgd::runtime

// The plug-in's one exported symbol (kCudaPluginEntry); everything else in it is hidden.
extern "C" __attribute__((visibility("default"))) const dagsgd::runtime::CudaPlugin*
dagsgd_cuda_plugin() {
  static const dagsgd::runtime::CudaPlugin plugin{&dagsgd::runtime::probe, &dagsgd::runtime::make};
  return &plugin;
}
