// The options a caller says it set (by their command-line names): whether one was, and the first
// of a list that was, refused with a reason. Used where a library decides what a command's flags
// may combine (sweep.cc, scenario_replay.cc).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::sim::detail {

inline bool flag_given(const std::vector<std::string>& given, const char* flag) {
  return std::find(given.begin(), given.end(), flag) != given.end();
}

// The first of `flags` in `given`: "<flag><why>".
inline model::Expected<void> refuse_flags(const std::vector<std::string>& given,
                                          std::initializer_list<const char*> flags,
                                          const std::string& why) {
  for (const char* flag : flags) {
    if (flag_given(given, flag)) return model::Error{flag + why};
  }
  return model::ok();
}

}  // namespace dagsgd::sim::detail
