// Reading the sourced fields of one section of a stack file (every constant an object
// {"value": ..., "source": "..."}); stack.cc merges a file over its base and builds the stack.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/stack.h"

namespace dagsgd::model::stack_detail {

using Json = nlohmann::json;

// "a, b, c".
std::string join(const std::vector<std::string>& v);
bool contains(const std::vector<std::string>& v, const std::string& s);
// The formulas a rule or a candidate may name (every collective algorithm but "auto").
std::vector<std::string> formula_names();
// Letters, digits, '_', '-' and '.'.
bool valid_name(const std::string& s);

// The fields of one section after merging a file over its base, and the file each came from.
struct Section {
  Json fields = Json::object();
  std::map<std::string, std::string> origin;
  bool present = false;
};

// Reads the fields of one section; `field` errors name the file the field came from.
class Reader {
 public:
  Reader(const Section& s, std::string section) : s_(s), section_(std::move(section)) {}

  bool has(const std::string& key) const { return s_.fields.contains(key); }

  Error error(const std::string& key, const std::string& what) const;

  // {"value": V, "source": S}: returns the value (checked by the caller), records the source.
  Expected<const Json*> constant(const std::string& key, StackSpec& out) const;

  // A number constant in [lo, hi]; `fallback` when absent.
  Expected<double> number(const std::string& key, StackSpec& out, double lo, double hi,
                          double fallback) const;

  Expected<std::string> text(const std::string& key, StackSpec& out,
                             const std::vector<std::string>& valid, std::string fallback) const;

  Expected<std::vector<std::string>> names(const std::string& key, StackSpec& out) const;

  // A sourced table, {"source": "...", FIELD: [...]}: its source recorded, its non-empty list.
  // `no_source` and `no_list` are the messages for those faults.
  Expected<const Json*> sourced_list(const std::string& key, const std::string& field,
                                     const std::string& no_source, const std::string& no_list,
                                     StackSpec& out) const;

  // {"source": "...", "rules": [{"ranks_below": N, "sizes": [[BYTES|null, "alg"], ...]}, ...]}
  Expected<std::vector<AlgorithmRule>> rules(const std::string& key, StackSpec& out) const;

  Expected<std::vector<StackProtocol>> protocols(const std::string& key, StackSpec& out,
                                                 const std::vector<std::string>& algorithms) const;

 private:
  const Section& s_;
  std::string section_;
};

}  // namespace dagsgd::model::stack_detail
