// Pieces of the data-file readers' error messages (hardware.cc, network.cc): a JSON value cut
// short and a list of valid names.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// In a namespace of their own: other readers (stack.cc, topology_io.cc) have a join of their own,
// and a unity build may put them in one translation unit with these.
namespace dagsgd::model::message {

// At most 60 characters of a value. Arrays and objects are not dumped: they can be megabytes
// long or nested deeper than a recursive dump has stack for.
inline std::string short_dump(const nlohmann::json& j) {
  if (j.is_array()) return "an array";
  if (j.is_object()) return "an object";
  std::string d = j.dump();
  if (d.size() > 60) d = d.substr(0, 57) + "...";
  return d;
}

// "a, b, c".
inline std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace dagsgd::model::message
