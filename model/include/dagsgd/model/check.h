// Broken internal invariants abort with file and line; bad input uses Expected instead.
#pragma once

#include <cstdio>
#include <cstdlib>

#define DAGSGD_CHECK(cond)                                                                \
  do {                                                                                    \
    if (!(cond)) {                                                                        \
      std::fprintf(stderr, "dagsgd: internal error: %s:%d: check failed: %s\n", __FILE__, \
                   __LINE__, #cond);                                                      \
      std::abort();                                                                       \
    }                                                                                     \
  } while (false)
