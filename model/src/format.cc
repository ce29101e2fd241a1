// Number formatting shared by every component (format.h).
#include "dagsgd/model/format.h"

#include <cstdio>

namespace dagsgd::model {

std::string fmt(const char* printf_format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, value);
  return buf;
}

std::string num(double value) { return fmt("%g", value); }

std::string percent(double fraction) { return fmt("%.0f%%", 100.0 * fraction); }

std::string times_faster(Nanos base, Nanos better) {
  if (better <= 0 || better >= base) return "no faster";
  const double b = static_cast<double>(base);
  const double t = static_cast<double>(better);
  return fmt("%.2fx faster", b / t) + fmt(" (-%.0f%%)", 100.0 * (1.0 - t / b));
}

}  // namespace dagsgd::model
