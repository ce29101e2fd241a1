// The trace reader's JSON walk built for simdjson's `icelake` kernel: trace/CMakeLists.txt compiles
// this file with AVX-512 (F, DQ, CD, BW, VL, VBMI, VBMI2) on top of haswell's, so simdjson's
// builtin implementation here is icelake; kernel_choice.cc runs it only on CPUs that have them.
#define DAGSGD_KERNEL_NS icelake
#include "importer_kernel_walk.h"
