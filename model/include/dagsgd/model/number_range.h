// A number read from text and checked against the range it may take (an option's or a field's):
// one parse and one message for every "must be ..., got '...'".
#pragma once

#include <limits>
#include <string>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

struct NumberRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_included = true;
  bool max_included = true;
  bool whole = false;    // a whole number
  std::string expected;  // what a valid value is: "a number from 0 to 1"
  std::string label;     // the same, short, for an option's --help: "0..1", "SECONDS"
};

// All of `text` as a number inside `range` (NaN never is; a whole number written as digits, with
// no exponent or fraction), else "must be <expected>, got '<text>'".
Expected<double> parse_number(const std::string& text, const NumberRange& range);

// The ranges options and fields share (docs/limits.md).
// A finite number above 0.
NumberRange positive_finite_range();
// Seconds of a duration: from 0 (above 0 unless `zero_allowed`) to below kMaxDuration.
NumberRange duration_seconds_range(bool zero_allowed);
// From 0 to 1.
NumberRange fraction_range();
// A count of nodes, GPUs or ranks: 1 to kMaxWorkers, what the cost models take.
NumberRange worker_count_range();
// A whole number from `min` to `max`, both included.
NumberRange whole_number_range(long min, long max);

}  // namespace dagsgd::model
