// Number formatting shared by every component's messages and reports: one helper, not a copy
// per file.
#pragma once

#include <string>

#include "dagsgd/model/units.h"

namespace dagsgd::model {

// printf-style formatting of one number, e.g. fmt("%.2f ms", 1.5) -> "1.50 ms".
std::string fmt(const char* printf_format, double value);
// Shortest general form ("%g"): 0.5, 1e-06, 64.
std::string num(double value);
// A fraction as a whole percentage: 0.333 -> "33%".
std::string percent(double fraction);
// How much faster `better` is than `base`: "1.49x faster (-33%)", or "no faster".
std::string times_faster(Nanos base, Nanos better);

}  // namespace dagsgd::model
