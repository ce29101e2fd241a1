// The trainer's view of a compute device (`--device cuda`): the layer math and the device side of
// the gradient exchange; the loop, the exchange strategies and the trace stay in trainer.cc.
// Internal to the runtime; the CUDA implementation (runtime/cuda/src/cuda_backend.cc) is built only
// when DAGSGD_HAVE_CUDA, as a plug-in that src/cuda_plugin.cc loads on first use.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/train_config.h"
#include "dagsgd/trace/event.h"

namespace dagsgd::runtime {

struct DeviceLayer {
  std::string name;
  std::int64_t in = 0;   // features
  std::int64_t out = 0;  // features; a ReLU follows every layer but the last
};

struct DeviceSetup {
  std::vector<DeviceLayer> layers;
  int max_batch = 0;
  std::uint64_t seed = 1;
  int rank = 0;
  int local_rank = 0;  // picks the device: local_rank % device count
  bool tracing = false;
  // The trainer's clock (now_ns, CLOCK_MONOTONIC), which CUPTI records are stamped with: passed
  // in, as the plug-in links nothing of the runtime.
  std::int64_t (*host_clock_ns)() = nullptr;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // e.g. "cuda:0 (NVIDIA H200)".
  virtual std::string describe() const = 0;
  // Later layer scopes carry this iteration (-1: outside the training loop).
  virtual void set_iteration(std::int64_t iteration) = 0;

  // Copies a batch to the device; returns when the copy is done.
  virtual model::Expected<void> upload_batch(const float* x, const std::int32_t* y, int batch) = 0;
  // Enqueues layer l's forward (layers in order), the loss and its gradient.
  virtual model::Expected<void> forward(int layer, int batch) = 0;
  virtual model::Expected<void> loss(int batch) = 0;
  // Enqueues the backward L-1 .. 0; on_layer(l) runs on the host after layer l's gradient work.
  virtual model::Expected<void> backward(int batch,
                                         const std::function<void(int layer)>& on_layer) = 0;
  // Copies gradient elements [offset, offset + count) of the flat buffer to host (same layout);
  // returns when the copy is done, so it waits for the kernels that produce them. `label` names
  // the layer or bucket for the trace.
  virtual model::Expected<void> download_grads(std::int64_t offset, std::int64_t count, float* host,
                                               const std::string& label) = 0;
  // Uploads the whole (averaged) host gradient and applies momentum SGD on the device.
  virtual model::Expected<void> update(const float* host_grads, float lr, float momentum) = 0;
  // Mean loss of the last loss() (waits for the device).
  virtual model::Expected<double> read_loss(int batch) = 0;
  // Summed loss and argmax hits of `count` samples, in batches; not attributed to layers.
  virtual model::Expected<std::pair<double, std::int64_t>> evaluate(const float* x,
                                                                    const std::int32_t* y,
                                                                    std::int64_t count) = 0;

  // The device events recorded so far (kernels, copies, API calls, ac2g flows), on this
  // process's CLOCK_MONOTONIC (ns, trace base 0). Empty when not tracing.
  virtual model::Expected<std::vector<trace::Event>> take_events() = 0;
  // The last events; recording stops.
  virtual model::Expected<std::vector<trace::Event>> finish_events() = 0;
};

// Checks that a CUDA device is usable by this process; the error is one line, e.g.
// "--device cuda: no CUDA device (cudaGetDeviceCount: ...)". Without CUDA support: an error.
// Both load the CUDA plug-in on first use (src/cuda_plugin.cc): an error when it cannot be loaded.
model::Expected<void> probe_cuda_device();
model::Expected<std::unique_ptr<DeviceBackend>> make_cuda_backend(const DeviceSetup& setup);

// The CUDA plug-in (libdagsgd-cuda-backend.so, built from runtime/cuda/src/cuda_backend.cc): a
// separate library so that the CUDA libraries it links (cudart, cuBLAS, CUPTI: about 26,000 page
// faults to load) are loaded by `dagsgd train --device cuda` only, not by every program that links
// the runtime (every dagsgd command). It exports one C function, kCudaPluginEntry, returning its
// table; both sides are built from this header by one build.
struct CudaPlugin {
  model::Expected<void> (*probe)();
  model::Expected<std::unique_ptr<DeviceBackend>> (*make)(const DeviceSetup& setup);
};
inline constexpr const char* kCudaPluginEntry = "dagsgd_cuda_plugin";
inline constexpr const char* kCudaPluginName = "libdagsgd-cuda-backend.so";

}  // namespace dagsgd::runtime
