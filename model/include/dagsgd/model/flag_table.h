// A command's flags as data: each row names a flag, the field of a settings struct it fills, its
// help and its check. The library that owns a settings struct declares its table beside it (one
// home for a flag's name, meaning and range); the CLI registers every row as an option, and the
// Python module's option table follows from the CLI's.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "dagsgd/model/number_range.h"

namespace dagsgd::model {

// Where a flag's value goes.
using FlagField =
    std::variant<std::string*, int*, double*, bool*, std::vector<std::string>*, std::vector<int>*>;

template <class T>
struct FlagSpec {
  std::string name;                    // "--ranks"; without dashes, a positional ("logs")
  std::function<FlagField(T&)> field;  // flag_field(&T::member)
  std::string help;
  std::optional<NumberRange> range;  // a number's (or each list item's) range
  std::vector<std::string> choices;  // the values a string may take (empty: any)
  bool list = false;                 // comma-separated values
  bool existing_file = false;        // a file that must exist
  bool show_default = false;         // --help shows the default value
};

// flag_field(&T::x): the member `x` of T; flag_field(&T::a, &A::x): the member `x` of T's `a`.
template <class T, class M>
std::function<FlagField(T&)> flag_field(M T::*m) {
  return [m](T& t) -> FlagField { return &(t.*m); };
}
template <class T, class A, class M>
std::function<FlagField(T&)> flag_field(A T::*a, M A::*m) {
  return [a, m](T& t) -> FlagField { return &((t.*a).*m); };
}

}  // namespace dagsgd::model
