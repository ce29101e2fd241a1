// Numbers read from text inside a range (number_range.h).
#include "dagsgd/model/number_range.h"

#include <cmath>
#include <cstdlib>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

Expected<double> parse_number(const std::string& text, const NumberRange& range) {
  char* end = nullptr;
  const double v = text.empty() ? std::nan("") : std::strtod(text.c_str(), &end);
  const bool parsed = !text.empty() && end == text.c_str() + text.size();
  const bool above = range.min_included ? v >= range.min : v > range.min;
  const bool below = range.max_included ? v <= range.max : v < range.max;
  // A whole number is written as digits: "1e3" and "64.0" are not (an integer conversion after
  // this check would refuse them without saying why).
  const std::size_t sign = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  const bool digits =
      text.size() > sign && text.find_first_not_of("0123456789", sign) == std::string::npos;
  if (parsed && above && below && (!range.whole || (std::floor(v) == v && digits))) return v;
  return Error{"must be " + range.expected + ", got '" + text + "'"};
}

NumberRange positive_finite_range() {
  return {.min = 0,
          .min_included = false,
          .max_included = false,
          .expected = "a finite number above 0",
          .label = "NUMBER > 0"};
}

NumberRange duration_seconds_range(bool zero_allowed) {
  return {.min = 0,
          .max = to_seconds(kMaxDuration),
          .min_included = zero_allowed,
          .max_included = false,
          .expected = std::string("a number of seconds from ") + (zero_allowed ? "0" : "above 0") +
                      " to below 1e6 (11.6 days, the longest duration dagsgd simulates)",
          .label = "SECONDS"};
}

NumberRange fraction_range() {
  return {.min = 0, .max = 1, .expected = "a number from 0 to 1", .label = "0..1"};
}

NumberRange worker_count_range() {
  return {.min = 1,
          .max = static_cast<double>(kMaxWorkers),
          .whole = true,
          .expected = "a whole number from 1 to " + std::to_string(kMaxWorkers) +
                      " (2^20, the most workers the cost models take)",
          .label = "1..2^20"};
}

NumberRange whole_number_range(long min, long max) {
  return {.min = static_cast<double>(min),
          .max = static_cast<double>(max),
          .whole = true,
          .expected = "a whole number from " + std::to_string(min) + " to " + std::to_string(max),
          .label = std::to_string(min) + ".." + std::to_string(max)};
}

}  // namespace dagsgd::model
