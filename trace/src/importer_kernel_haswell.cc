// The trace reader's JSON walk built for simdjson's `haswell` kernel: trace/CMakeLists.txt compiles
// this file with AVX2, BMI, PCLMUL and LZCNT, so simdjson's builtin implementation here is haswell;
// kernel_choice.cc runs it only on CPUs that have them.
#define DAGSGD_KERNEL_NS haswell
#include "importer_kernel_walk.h"
