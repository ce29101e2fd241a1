// What a trace record is (record_category.h): Kineto's categories and ours, and data types' sizes.
#include "record_category.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace dagsgd::trace::detail {

bool ignorable_category(std::string_view c) {
  static constexpr std::array<std::string_view, 12> kIgnored = {
      "Trace",        "python_function", "cuda_profiler_range", "ac2g",
      "fwdbwd",       "overhead",        "gpu_memory",          "cpu_instant_event",
      "user_instant", "Runtime",         "cuda_driver_event",   "Kernel"};
  return std::find(kIgnored.begin(), kIgnored.end(), c) != kIgnored.end();
}

std::optional<EventCategory> known_category(std::string_view c, std::string_view name) {
  if (c == cat::kKernel) return EventCategory::kKernel;
  if (c == cat::kGpuMemcpy) return EventCategory::kMemcpy;
  if (c == cat::kGpuMemset) return EventCategory::kMemset;
  if (c == cat::kCudaRuntime || c == cat::kCudaDriver) return EventCategory::kRuntime;
  if (c == cat::kCudaSync) return EventCategory::kSync;
  if (c == cat::kUserAnnotation) return EventCategory::kAnnotation;
  if (c == cat::kGpuUserAnnotation) return EventCategory::kGpuAnnotation;
  if (c == cat::kCpuOp || c == "operator") {
    return name.substr(0, 4) == "MPI_" ? EventCategory::kMpi : EventCategory::kCpuOp;
  }
  if (c == "mpi") return EventCategory::kMpi;
  return std::nullopt;
}

int dtype_size(std::string_view d) {
  std::string s(d);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "float" || s == "float32" || s == "int" || s == "int32" || s == "uint32") return 4;
  if (s == "double" || s == "float64" || s == "long" || s == "int64" || s == "uint64") return 8;
  if (s == "half" || s == "float16" || s == "bfloat16" || s == "bf16" || s == "int16") return 2;
  if (s == "byte" || s == "char" || s == "int8" || s == "uint8" || s == "int8_t" || s == "bool") {
    return 1;
  }
  return 0;
}

}  // namespace dagsgd::trace::detail
