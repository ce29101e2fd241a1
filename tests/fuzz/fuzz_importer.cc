// Fuzz target: one trace file through the importer (simdjson reading, repair of cut tails, clock
// drift, range checks). Whatever the bytes, an Error or events whose times are in range.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/model/units.h"
#include "dagsgd/trace/importer.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd;
  trace::FileReport report;
  auto rank = trace::import_trace_text(dagsgd::fuzz::text_of(data, size), "fuzz.json", 0, report);
  if (!rank.ok()) {
    FUZZ_REQUIRE(!rank.error().message.empty());
    return 0;
  }
  FUZZ_REQUIRE(rank->rank >= 0 && rank->world_size >= 1);
  for (const auto& e : rank->events) {
    FUZZ_REQUIRE(e.ts >= -model::kMaxTimestamp && e.ts <= model::kMaxTimestamp);
    FUZZ_REQUIRE(e.dur >= 0 && e.dur < model::kMaxDuration);
    FUZZ_REQUIRE(e.name >= 0 && static_cast<std::size_t>(e.name) < rank->strings.size());
    FUZZ_REQUIRE(e.collective < 0 || static_cast<std::size_t>(e.collective) < rank->strings.size());
    FUZZ_REQUIRE(e.bytes >= -1);
  }
  return 0;
}
