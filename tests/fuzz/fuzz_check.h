// An invariant a fuzz target checks on what a reader returned: a violation stops the fuzzer like
// a crash (and the replay driver with exit code 1), with the file and line.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_REQUIRE(cond)                                                                   \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "fuzz invariant failed: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)
