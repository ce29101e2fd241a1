// What the text log readers (osu_log.cc, bcaffe_log.cc) share: reading the lines, a number that
// must be the whole token, and a token cut short for a message.
#pragma once

#include <charconv>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>

#include "dagsgd/model/expected.h"

namespace dagsgd::trace::log_text {

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// All of `s` as a finite double.
inline bool parse_double(const std::string& s, double& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end && std::isfinite(out);
}

// A token for a message, cut to 40 characters (a damaged log can hold megabyte-long tokens).
inline std::string shown(const std::string& t) {
  return t.size() > 40 ? t.substr(0, 37) + "..." : t;
}

// A log read line by line: each line trimmed, blank ones skipped; errors name the log and line.
class Lines {
 public:
  // `where` names the log in errors ("log 'a.log'").
  Lines(const std::string& text, std::string where) : in_(text), where_(std::move(where)) {}
  // The next line that is not blank, trimmed; false at the end.
  bool next(std::string& line) {
    std::string raw;
    while (std::getline(in_, raw)) {
      ++number_;
      line = trim(raw);
      if (!line.empty()) return true;
    }
    return false;
  }
  int number() const { return number_; }  // of the line next() returned
  model::Error error(const std::string& what) const {
    return model::Error{where_ + ": line " + std::to_string(number_) + ": " + what};
  }

 private:
  std::istringstream in_;
  std::string where_;
  int number_ = 0;
};

}  // namespace dagsgd::trace::log_text
