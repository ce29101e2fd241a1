// What the fuzz targets share: the input as the text a reader takes, and an invariant checked on
// what the reader returned (a violation stops the fuzzer like a crash, and the replay driver with
// exit code 1, with the file and line).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace dagsgd::fuzz {

// libFuzzer's bytes as a file's text.
inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace dagsgd::fuzz

#define FUZZ_REQUIRE(cond)                                                                   \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "fuzz invariant failed: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                          \
    }                                                                                        \
  } while (false)
