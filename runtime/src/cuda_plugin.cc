// `--device cuda` entry points (device_backend.h): the CUDA backend is a plug-in loaded on first
// use, so that programs linking the runtime do not load the CUDA libraries when they start.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "dagsgd/runtime/process.h"
#include "device_backend.h"

namespace dagsgd::runtime {

#ifdef DAGSGD_HAVE_CUDA

namespace {

namespace fs = std::filesystem;

constexpr const char* kPluginEnv = "DAGSGD_CUDA_BACKEND_LIB";

// $DAGSGD_CUDA_BACKEND_LIB, else beside this executable in the build tree or an install (as the
// MPI tracer is found, collect.cc). The error says where it looked.
model::Expected<std::string> find_plugin() {
  if (const char* env = std::getenv(kPluginEnv); env != nullptr && *env != '\0') {
    if (!fs::is_regular_file(env)) {
      return model::Error{std::string("--device cuda: $") + kPluginEnv + " names '" + env +
                          "', which is not a file"};
    }
    return fs::absolute(env).string();
  }
  const std::string exe = self_exe();
  std::vector<fs::path> candidates;
  if (!exe.empty()) {
    const fs::path dir = fs::path(exe).parent_path();
    candidates = {dir / ".." / "runtime" / kCudaPluginName, dir / ".." / "lib" / kCudaPluginName,
                  dir / kCudaPluginName, dir / ".." / "lib" / "dagsgd" / kCudaPluginName};
  }
  std::string tried;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c)) return fs::weakly_canonical(c).string();
    tried += (tried.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  return model::Error{std::string("--device cuda: cannot find the CUDA backend ") +
                      kCudaPluginName + " (looked in " + tried +
                      "); build the 'dagsgd-cuda-backend' target or set $" + kPluginEnv};
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
