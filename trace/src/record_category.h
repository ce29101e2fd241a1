// What a trace record is, from its category, name and data type (record_category.cc): the
// classification the trace reader applies to each record the JSON walk hands over.
#pragma once

#include <optional>
#include <string_view>

#include "dagsgd/trace/event.h"
#include "dagsgd/trace/importer.h"

namespace dagsgd::trace::detail {

// Kineto categories that carry nothing the DAG needs; skipped without complaint.
bool ignorable_category(std::string_view c);
// The event category of a record of category `c` named `name`; nullopt for one the reader does
// not know.
std::optional<EventCategory> known_category(std::string_view c, std::string_view name);
// Bytes per element of data type `d` (case-insensitive: "float", "half", "int64", ...); 0 when
// unknown.
int dtype_size(std::string_view d);

}  // namespace dagsgd::trace::detail
