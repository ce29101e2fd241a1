// Reading the sourced fields of one section of a stack file (stack_reader.h): constants, the
// algorithm tables of an MPI library and the protocols of NCCL, each checked where it is read.
#include "stack_reader.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <sstream>

#include "dagsgd/model/comm_model.h"

namespace dagsgd::model::stack_detail {
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// The formulas a rule or a candidate may name.
std::vector<std::string> formula_names() {
  std::vector<std::string> names = comm_algorithm_names();
  names.erase(std::remove(names.begin(), names.end(), "auto"), names.end());
  return names;
}

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  });
}

Error Reader::error(const std::string& key, const std::string& what) const {
  auto it = s_.origin.find(key);
  const std::string file = it == s_.origin.end() ? "?" : it->second;
  return Error{"stack file '" + file + "': " + section_ + "." + key + ": " + what};
}

Expected<const Json*> Reader::constant(const std::string& key, StackSpec& out) const {
  const Json& c = s_.fields.at(key);
  if (!c.is_object()) {
    return error(key, "must be an object {\"value\": ..., \"source\": \"...\"}, got " + c.dump());
  }
  for (const auto& [k, v] : c.items()) {
    if (k != "value" && k != "source") {
      return error(key, "unknown field '" + k + "'; valid fields: value, source");
    }
  }
  auto src = c.find("source");
  if (src == c.end() || !src->is_string() || src->get<std::string>().empty()) {
    return error(key, "missing 'source' (where the value comes from)");
  }
  if (!c.contains("value")) return error(key, "missing 'value'");
  out.set_source(section_ + "." + key, src->get<std::string>());
  return &c.at("value");
}

Expected<double> Reader::number(const std::string& key, StackSpec& out, double lo, double hi,
                                double fallback) const {
  if (!has(key)) return fallback;
  auto v = constant(key, out);
  if (!v) return v.error();
  if (!(*v)->is_number()) return error(key, "'value' must be a number, got " + (*v)->dump());
  const double d = (*v)->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    std::ostringstream msg;
    msg << "'value' must be in [" << lo << ", " << hi << "], got " << (*v)->dump();
    return error(key, msg.str());
  }
  return d;
}

Expected<std::string> Reader::text(const std::string& key, StackSpec& out,
                                   const std::vector<std::string>& valid,
                                   std::string fallback) const {
  if (!has(key)) return fallback;
  auto v = constant(key, out);
  if (!v) return v.error();
  if (!(*v)->is_string()) return error(key, "'value' must be a string, got " + (*v)->dump());
  std::string s = (*v)->get<std::string>();
  if (!valid.empty() && !contains(valid, s)) {
    return error(key, "unknown value '" + s + "'; valid: " + join(valid));
  }
  return s;
}

Expected<std::vector<std::string>> Reader::names(const std::string& key, StackSpec& out) const {
  if (!has(key)) return std::vector<std::string>{};
  auto v = constant(key, out);
  if (!v) return v.error();
  if (!(*v)->is_array() || (*v)->empty()) {
    return error(key, "'value' must be a non-empty list of algorithm names");
  }
  std::vector<std::string> names;
  const auto valid = formula_names();
  for (const auto& n : **v) {
    if (!n.is_string() || !contains(valid, n.get<std::string>())) {
      return error(key, "unknown algorithm " + n.dump() + "; valid: " + join(valid));
    }
    names.push_back(n.get<std::string>());
  }
  return names;
}

Expected<const Json*> Reader::sourced_list(const std::string& key, const std::string& field,
                                           const std::string& no_source, const std::string& no_list,
                                           StackSpec& out) const {
  const Json& t = s_.fields.at(key);
  if (!t.is_object()) return error(key, "must be an object with '" + field + "' and 'source'");
  for (const auto& [k, v] : t.items()) {
    if (k != field && k != "source") {
      return error(key, "unknown field '" + k + "'; valid fields: " + field + ", source");
    }
  }
  auto src = t.find("source");
  if (src == t.end() || !src->is_string() || src->get<std::string>().empty()) {
    return error(key, no_source);
  }
  out.set_source(section_ + "." + key, src->get<std::string>());
  auto list = t.find(field);
  if (list == t.end() || !list->is_array() || list->empty()) return error(key, no_list);
  return &*list;
}

Expected<std::vector<AlgorithmRule>> Reader::rules(const std::string& key, StackSpec& out) const {
  std::vector<AlgorithmRule> rules;
  if (!has(key)) return rules;
  auto table =
      sourced_list(key, "rules", "missing 'source' (the library code the table transcribes)",
                   "'rules' must be a non-empty list", out);
  if (!table) return table.error();
  const Json* list = *table;
  const auto valid = formula_names();
  int last_ranks = 0;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const Json& r = (*list)[i];
    const std::string where = "rules[" + std::to_string(i) + "]";
    if (!r.is_object()) return error(key, where + " must be an object");
    for (const auto& [k, v] : r.items()) {
      if (k != "ranks_below" && k != "sizes") {
        return error(key, where + ": unknown field '" + k + "'; valid fields: ranks_below, sizes");
      }
    }
    int ranks_below = 0;
    if (auto rb = r.find("ranks_below"); rb != r.end() && !rb->is_null()) {
      if (!rb->is_number_integer() || rb->get<std::int64_t>() < 2 ||
          rb->get<std::int64_t>() > 1'000'000) {
        return error(key, where + ": 'ranks_below' must be a whole number >= 2, got " + rb->dump());
      }
      ranks_below = static_cast<int>(rb->get<std::int64_t>());
      if (ranks_below <= last_ranks) {
        return error(key, where + ": 'ranks_below' must increase from row to row");
      }
    } else if (i + 1 != list->size()) {
      return error(key, where + ": only the last row may omit 'ranks_below'");
    }
    last_ranks = ranks_below;
    auto sizes = r.find("sizes");
    if (sizes == r.end() || !sizes->is_array() || sizes->empty()) {
      return error(key, where + ": 'sizes' must be a non-empty list of [BYTES or null, name]");
    }
    Bytes last_bytes = 0;
    for (std::size_t k = 0; k < sizes->size(); ++k) {
      const Json& s = (*sizes)[k];
      const std::string at = where + ".sizes[" + std::to_string(k) + "]";
      if (!s.is_array() || s.size() != 2 || !s[1].is_string()) {
        return error(key, at + " must be [BYTES or null, \"algorithm\"], got " + s.dump());
      }
      Bytes below = 0;
      if (!s[0].is_null()) {
        if (!s[0].is_number_integer() || s[0].get<std::int64_t>() <= 0) {
          return error(key,
                       at + ": the size must be a whole number > 0 or null, got " + s[0].dump());
        }
        below = s[0].get<std::int64_t>();
        if (below <= last_bytes) return error(key, at + ": sizes must increase");
        last_bytes = below;
      } else if (k + 1 != sizes->size()) {
        return error(key, at + ": only the last size may be null (every larger size)");
      }
      if (k + 1 == sizes->size() && below != 0) {
        return error(key, at + ": the last size must be null so that every size is covered");
      }
      const std::string alg = s[1].get<std::string>();
      if (!contains(valid, alg)) {
        return error(key, at + ": unknown algorithm '" + alg + "'; valid: " + join(valid));
      }
      rules.push_back({ranks_below, below, alg});
    }
  }
  if (last_ranks != 0) {
    return error(key,
                 "the last row must omit 'ranks_below' so that every rank count is "
                 "covered");
  }
  return rules;
}

Expected<std::vector<StackProtocol>> Reader::protocols(
    const std::string& key, StackSpec& out, const std::vector<std::string>& algorithms) const {
  std::vector<StackProtocol> list;
  if (!has(key)) return list;
  auto table = sourced_list(key, "list", "missing 'source'",
                            "'list' must be a non-empty list of protocols", out);
  if (!table) return table.error();
  const Json* items = *table;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items->size(); ++i) {
    const Json& p = (*items)[i];
    std::string where = "list[" + std::to_string(i) + "]";
    if (!p.is_object()) return error(key, where + " must be an object");
    StackProtocol proto;
    auto name = p.find("name");
    if (name == p.end() || !name->is_string() || !valid_name(name->get<std::string>())) {
      return error(key, where + ": 'name' must be a name (letters, digits, _ - .)");
    }
    proto.name = name->get<std::string>();
    where += " ('" + proto.name + "')";
    if (!seen.insert(proto.name).second) return error(key, where + ": duplicate name");
    for (const auto& [k, v] : p.items()) {
      if (k != "name" && k != "per_message_us" && k != "per_collective_us" && k != "efficiency" &&
          k != "tree_correction") {
        return error(key, where + ": unknown field '" + k +
                              "'; valid fields: name, per_message_us, per_collective_us, "
                              "efficiency, tree_correction");
      }
    }
    auto non_negative = [&](const Json& v, const std::string& what) -> Expected<double> {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
        return error(key, where + ": " + what + " must be a number >= 0, got " + v.dump());
      }
      return v.get<double>();
    };
    if (auto pm = p.find("per_message_us"); pm != p.end()) {
      if (!pm->is_object()) return error(key, where + ": 'per_message_us' must be an object");
      for (const auto& [k, v] : pm->items()) {
        auto d = non_negative(v, "per_message_us." + k);
        if (!d) return d.error();
        if (k == "intra") {
          proto.per_message_intra_ns = *d * 1e3;
        } else if (k == "inter") {
          proto.per_message_inter_ns = *d * 1e3;
        } else {
          return error(
              key, where + ": per_message_us: unknown link class '" + k + "'; valid: intra, inter");
        }
      }
    }
    auto by_algorithm =
        [&](const std::string& field,
            bool fraction) -> Expected<std::vector<std::pair<std::string, double>>> {
      std::vector<std::pair<std::string, double>> out_list;
      auto f = p.find(field);
      if (f == p.end()) return out_list;
      if (!f->is_object()) return error(key, where + ": '" + field + "' must be an object");
      for (const auto& [alg, v] : f->items()) {
        if (!contains(algorithms, alg)) {
          return error(key, where + ": " + field + ": '" + alg +
                                "' is not among library.algorithms (" + join(algorithms) + ")");
        }
        auto d = non_negative(v, field + "." + alg);
        if (!d) return d.error();
        if (fraction && !(*d > 0 && *d <= 1)) {
          return error(key,
                       where + ": " + field + "." + alg + " must be in (0, 1], got " + v.dump());
        }
        out_list.emplace_back(alg, fraction ? *d : *d * 1e3);
      }
      return out_list;
    };
    auto pc = by_algorithm("per_collective_us", false);
    if (!pc) return pc.error();
    proto.per_collective_ns = std::move(*pc);
    auto eff = by_algorithm("efficiency", true);
    if (!eff) return eff.error();
    if (eff->empty()) return error(key, where + ": 'efficiency' must name an algorithm");
    proto.efficiency = std::move(*eff);
    if (auto tc = p.find("tree_correction"); tc != p.end()) {
      if (!tc->is_array()) return error(key, where + ": 'tree_correction' must be a list");
      for (const auto& v : *tc) {
        if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1)) {
          return error(key, where + ": tree_correction values must be in (0, 1], got " + v.dump());
        }
        proto.tree_correction.push_back(v.get<double>());
      }
    }
    list.push_back(std::move(proto));
  }
  return list;
}

}  // namespace dagsgd::model::stack_detail
