// Repairs a trace whose writer never closed it (killed rank): keeps every complete event line.
#pragma once

#include <cstdint>
#include <string>

#include "dagsgd/model/expected.h"

namespace dagsgd::trace {

struct RepairedTrace {
  std::string text;                // valid JSON
  bool repaired = false;           // false: the input was already complete and is returned as is
  std::int64_t dropped_bytes = 0;  // bytes of a partial last event that were cut off
};

// `text` is what TraceWriter left on disk: a header ending in `"traceEvents":[`, one event per
// line, and `]}` only if it was closed. Cuts a partial last line and closes the array, so the
// result holds every event that was completely written. Errors when even the header is cut;
// `where` names the file in the message.
model::Expected<RepairedTrace> repair_truncated_trace(const std::string& text,
                                                      const std::string& where);

}  // namespace dagsgd::trace
