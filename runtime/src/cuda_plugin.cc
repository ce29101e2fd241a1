// `--device cuda` entry points (device_backend.h): the CUDA backend is a plug-in loaded on first
// use, so that programs linking the runtime do not load the CUDA libraries when they start.
#include <dlfcn.h>

#include <string>

#include "dagsgd/runtime/process.h"
#include "device_backend.h"

namespace dagsgd::runtime {

#ifdef DAGSGD_HAVE_CUDA

namespace {

constexpr const char* kPluginEnv = "DAGSGD_CUDA_BACKEND_LIB";

// $DAGSGD_CUDA_BACKEND_LIB, else beside this executable in the build tree or an install (as the
// MPI tracer is found, collect.cc).
model::Expected<std::string> find_plugin() {
  auto found =
      find_own_library(kPluginEnv, kCudaPluginName, {"../runtime", "../lib", ".", "../lib/dagsgd"},
                       "the CUDA backend", "dagsgd-cuda-backend");
  if (!found) return model::with_context("--device cuda", found.error());
  return found;
}

// Loaded once per process and never unloaded: backends it made may live until exit.
model::Expected<const CudaPlugin*> plugin() {
  static const model::Expected<const CudaPlugin*> loaded =
      []() -> model::Expected<const CudaPlugin*> {
    auto path = find_plugin();
    if (!path) return path.error();
    void* handle = ::dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      return model::Error{"--device cuda: cannot load the CUDA backend '" + *path +
                          "': " + (why != nullptr ? why : "dlopen failed")};
    }
    using Entry = const CudaPlugin* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, kCudaPluginEntry));
    if (entry == nullptr) {
      return model::Error{"--device cuda: '" + *path + "' is not the CUDA backend (no " +
                          kCudaPluginEntry + ")"};
    }
    return entry();
  }();
  return loaded;
}

}  // namespace

model::Expected<void> probe_cuda_device() {
  auto p = plugin();
  if (!p) return p.error();
  return (*p)->probe();
}

model::Expected<std::unique_ptr<DeviceBackend>> make_cuda_backend(const DeviceSetup& setup) {
  auto p = plugin();
  if (!p) return p.error();
  return (*p)->make(setup);
}

#else

model::Expected<void> probe_cuda_device() {
  return model::Error{"--device cuda: this build has no CUDA support"};
}
model::Expected<std::unique_ptr<DeviceBackend>> make_cuda_backend(const DeviceSetup& /*setup*/) {
  return model::Error{"--device cuda: this build has no CUDA support"};
}

#endif

}  // namespace dagsgd::runtime
