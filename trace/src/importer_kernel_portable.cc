// The trace reader's JSON walk built for the baseline instruction set (simdjson's `fallback`
// kernel on x86-64): the one every CPU runs.
#define DAGSGD_KERNEL_NS portable
#include "importer_kernel_walk.h"

namespace dagsgd::trace::detail {

#define DAGSGD_STRINGIFY2(x) #x
#define DAGSGD_STRINGIFY(x) DAGSGD_STRINGIFY2(x)

WalkResult walk_portable(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                         std::size_t window) {
  return portable::walk_windowed(text, size, capacity, sink, window);
}

const char* portable_kernel_name() { return DAGSGD_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION); }

}  // namespace dagsgd::trace::detail
