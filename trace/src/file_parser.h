// The portable reader of one trace text (file_parser.cc): the records the JSON walk hands over
// become events, with strings interned, problems counted per kind with the first offender, flows
// matched, clock corrections applied and the events sorted.
#pragma once

#include <cstddef>
#include <string>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"
#include "importer_kernel.h"

namespace dagsgd::trace::detail {

// The error of a text simdjson would not read; import_trace_text replaces it with the position.
inline constexpr const char* kNotJson = ": not JSON";
// The Error message suffix (after the file's name) of a text with JSON after its root object.
inline constexpr const char* kTrailingJson = ": JSON after the trace's object";

// Reads `text` (`where` in messages) with `kernel`'s walk, `window` bytes of traceEvents at a
// time, on two threads from the ',' at `split` (0: one walk), into `rank` and `report` (both as
// they should start). An error only when the text is not a trace; a break inside traceEvents sets
// `failed_inside` for the caller to repair, `events_seen` says a traceEvents array was opened.
// Read cleanly, `text` is released (its buffer first serves the sort, unless it is mapped).
model::Expected<void> read_trace_events(model::FileText& text, const std::string& where,
                                        const Kernel& kernel, std::size_t window, std::size_t split,
                                        ImportedRank& rank, FileReport& report, bool& events_seen,
                                        bool& failed_inside);

}  // namespace dagsgd::trace::detail
