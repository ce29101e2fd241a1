// Small string helpers the tests share (one definition, so that a unity build of a test program,
// which puts several test files in one translation unit, sees it once).
#pragma once

#include <string>

namespace dagsgd::testing {

// Whether `s` holds `part` anywhere.
inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace dagsgd::testing
