// The valid names of one kind of plug-in or catalog entry (collective algorithms, fabrics,
// GPUs, networks, ...): every lookup by name goes through check(), so an unknown name always
// gets the same message listing what is valid.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

class NameRegistry {
 public:
  // `kind` names one entry in messages ("fabric", "collective algorithm").
  NameRegistry(std::string kind, std::vector<std::string> names);

  bool contains(const std::string& name) const;
  // ok, or "unknown <kind> '<name>'; valid <kind>s: a, b, c".
  Expected<void> check(const std::string& name) const;
  const std::vector<std::string>& names() const { return names_; }
  const std::string& kind() const { return kind_; }
  // "a, b, c" in registration order.
  std::string list() const;

 private:
  std::string kind_;
  std::vector<std::string> names_;
};

}  // namespace dagsgd::model
