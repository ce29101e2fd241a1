// Fuzz target: B-Caffe per-tensor logs (--layer-profile). Whatever the bytes: an Error, or
// tensors whose ids, sizes and times are in range.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/trace/bcaffe_log.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd;
  auto log = trace::parse_bcaffe_log(dagsgd::fuzz::text_of(data, size), "fuzz.log");
  if (!log.ok()) return 0;
  FUZZ_REQUIRE(!log->tensors.empty());
  for (std::size_t i = 0; i < log->tensors.size(); ++i) {
    const auto& t = log->tensors[i];
    FUZZ_REQUIRE(t.param_id == static_cast<int>(i));
    FUZZ_REQUIRE(t.elements >= 0 && t.backward_us >= 0 && t.backward_us < 1e12);
    FUZZ_REQUIRE(t.allreduce_us >= 0 && t.allreduce_us < 1e12);
  }
  return 0;
}
