// The checked conversion of a computed or stated duration to nanoseconds.
#include "dagsgd/model/units.h"

#include <cstdio>

namespace dagsgd::model {

namespace {

std::string with_unit(double value, double ns_per_unit) {
  char buf[64];
  const char* unit = ns_per_unit == 1.0   ? " ns"
                     : ns_per_unit == 1e3 ? " us"
                     : ns_per_unit == 1e6 ? " ms"
                     : ns_per_unit == 1e9 ? " s"
                                          : nullptr;
  if (unit != nullptr) {
    std::snprintf(buf, sizeof buf, "%g%s", value, unit);
  } else {
    std::snprintf(buf, sizeof buf, "%g ns", value * ns_per_unit);
  }
  return buf;
}

}  // namespace

Expected<Nanos> duration_ns(double value, double ns_per_unit, const std::string& what) {
  const double ns = value * ns_per_unit;
  if (std::isnan(ns)) return Error{what + ": not a number (" + with_unit(value, ns_per_unit) + ")"};
  if (ns < 0) return Error{what + ": " + with_unit(value, ns_per_unit) + " is negative"};
  if (!(ns < static_cast<double>(kMaxDuration))) {
    return Error{what + ": " + with_unit(value, ns_per_unit) +
                 " is out of range (a duration must be below 1e15 ns, 11.6 days)"};
  }
  return std::llround(ns);
}

}  // namespace dagsgd::model
