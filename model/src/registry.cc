// Name registries (registry.h).
#include "dagsgd/model/registry.h"

#include <algorithm>

namespace dagsgd::model {

NameRegistry::NameRegistry(std::string kind, std::vector<std::string> names)
    : kind_(std::move(kind)), names_(std::move(names)) {}

bool NameRegistry::contains(const std::string& name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}

Expected<void> NameRegistry::check(const std::string& name) const {
  if (contains(name)) return ok();
  return Error{"unknown " + kind_ + " '" + name + "'; valid " + kind_ +
               "s: " + (names_.empty() ? std::string("(none)") : list())};
}

std::string NameRegistry::list() const {
  std::string out;
  for (const auto& n : names_) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace dagsgd::model
