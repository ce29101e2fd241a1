// What the readers and writers of the data files (hardware.cc, stack.cc, stack_write.cc) share:
// the stack schema, rates in Gbit/s, and how a written number is rounded.
#pragma once

#include <nlohmann/json.hpp>

namespace dagsgd::model {

inline constexpr const char* kStackSchema = "dagsgd-stack/1";
inline constexpr double kBytesPerSecPerGbps = 1e9 / 8;

// Six significant digits: what a fitted or converted value is worth, and readable in a file.
nlohmann::ordered_json human_number(double v);

}  // namespace dagsgd::model
