// The trace reader's JSON walk built for simdjson's `icelake` kernel: trace/CMakeLists.txt compiles
// this file with AVX-512 (F, DQ, CD, BW, VL, VBMI, VBMI2) on top of haswell's, so simdjson's
// builtin implementation here is icelake; importer_events.cc runs it only on CPUs that have them.
#define DAGSGD_KERNEL_NS icelake
#include "importer_kernel_walk.h"

namespace dagsgd::trace::detail {

WalkResult walk_icelake(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                        std::size_t window) {
  return icelake::walk_windowed(text, size, capacity, sink, window);
}

#define DAGSGD_STRINGIFY2(x) #x
#define DAGSGD_STRINGIFY(x) DAGSGD_STRINGIFY2(x)
const char* icelake_kernel_name() { return DAGSGD_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION); }

}  // namespace dagsgd::trace::detail
