// The trace reader's JSON walk built for simdjson's `haswell` kernel: trace/CMakeLists.txt compiles
// this file with AVX2, BMI, PCLMUL and LZCNT, so simdjson's builtin implementation here is haswell;
// importer_events.cc runs it only on CPUs that have them.
#define DAGSGD_KERNEL_NS haswell
#include "importer_kernel_walk.h"

namespace dagsgd::trace::detail {

WalkResult walk_haswell(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                        std::size_t window) {
  return haswell::walk_windowed(text, size, capacity, sink, window);
}

#define DAGSGD_STRINGIFY2(x) #x
#define DAGSGD_STRINGIFY(x) DAGSGD_STRINGIFY2(x)
const char* haswell_kernel_name() { return DAGSGD_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION); }

}  // namespace dagsgd::trace::detail
