// The trace reader's JSON walk built for the baseline instruction set (simdjson's `fallback`
// kernel on x86-64): the one every CPU runs.
#define DAGSGD_KERNEL_NS portable
#include "importer_kernel_walk.h"
