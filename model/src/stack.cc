// Loading and validating software-stack files (stack.h; stack_write.cc writes them): every
// constant is an object {"value": ..., "source": "..."}; a file may extend a `base` stack field by
// field.
#include "dagsgd/model/stack.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/model/ssgd.h"
#include "file_schema.h"

namespace dagsgd::model {
namespace {

using Json = nlohmann::json;

constexpr int kMaxBaseDepth = 8;

const std::vector<std::string> kTopFields = {"schema", "name",    "description",
                                             "base",   "library", "framework"};
const std::vector<std::string> kLibraryFields = {"kind",           "name",
                                                 "per_message_us", "per_collective_us",
                                                 "efficiency",     "connection_gbps",
                                                 "connections",    "bandwidth_limit",
                                                 "peer_transfers", "eager_limit_bytes",
                                                 "rendezvous_us",  "blocking",
                                                 "nonblocking",    "nonblocking_in_place",
                                                 "algorithms",     "one_node_algorithms",
                                                 "protocols"};
const std::vector<std::string> kFrameworkFields = {
    "name",          "call",           "grouping",       "per_collective_us",
    "cycle_ms",      "negotiation",    "host_copy_gbps", "mixed_precision_gradient_bytes",
    "copy_in_bytes", "copy_back_bytes"};
const std::vector<std::string> kKinds = {"mpi", "nccl"};
const std::vector<std::string> kCalls = {"allreduce", "iallreduce", "iallreduce_in_place"};

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

std::string stacks_dir() { return data_path("stacks"); }

bool is_path(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

bool valid_name(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' || c == '.';
  });
}

// The fields of one section after merging a file over its base, and the file each came from.
struct Section {
  Json fields = Json::object();
  std::map<std::string, std::string> origin;
  bool present = false;
};

struct Merged {
  std::string name;
  std::string description;
  std::string path;  // the outermost file
  Section library;
  Section framework;
};

// Reads the fields of one section; `field` errors name the file the field came from.
class Reader {
 public:
  Reader(const Section& s, std::string section) : s_(s), section_(std::move(section)) {}

  bool has(const std::string& key) const { return s_.fields.contains(key); }

  Error error(const std::string& key, const std::string& what) const {
    auto it = s_.origin.find(key);
    const std::string file = it == s_.origin.end() ? "?" : it->second;
    return Error{"stack file '" + file + "': " + section_ + "." + key + ": " + what};
  }

  // {"value": V, "source": S}: returns the value (checked by the caller), records the source.
  Expected<const Json*> constant(const std::string& key, StackSpec& out) const {
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

  // A number constant in [lo, hi]; `fallback` when absent.
  Expected<double> number(const std::string& key, StackSpec& out, double lo, double hi,
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

  Expected<std::string> text(const std::string& key, StackSpec& out,
                             const std::vector<std::string>& valid, std::string fallback) const {
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

  Expected<std::vector<std::string>> names(const std::string& key, StackSpec& out) const {
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

  // A sourced table, {"source": "...", FIELD: [...]}: its source recorded, its non-empty list.
  // `no_source` and `no_list` are the messages for those faults.
  Expected<const Json*> sourced_list(const std::string& key, const std::string& field,
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

  // {"source": "...", "rules": [{"ranks_below": N, "sizes": [[BYTES|null, "alg"], ...]}, ...]}
  Expected<std::vector<AlgorithmRule>> rules(const std::string& key, StackSpec& out) const {
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
          return error(key,
                       where + ": unknown field '" + k + "'; valid fields: ranks_below, sizes");
        }
      }
      int ranks_below = 0;
      if (auto rb = r.find("ranks_below"); rb != r.end() && !rb->is_null()) {
        if (!rb->is_number_integer() || rb->get<std::int64_t>() < 2 ||
            rb->get<std::int64_t>() > 1'000'000) {
          return error(key,
                       where + ": 'ranks_below' must be a whole number >= 2, got " + rb->dump());
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

  Expected<std::vector<StackProtocol>> protocols(const std::string& key, StackSpec& out,
                                                 const std::vector<std::string>& algorithms) const {
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
            return error(key, where + ": per_message_us: unknown link class '" + k +
                                  "'; valid: intra, inter");
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
            return error(key,
                         where + ": tree_correction values must be in (0, 1], got " + v.dump());
          }
          proto.tree_correction.push_back(v.get<double>());
        }
      }
      list.push_back(std::move(proto));
    }
    return list;
  }

 private:
  const Section& s_;
  std::string section_;
};

Expected<Json> parse_json(const std::string& text, const std::string& path) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false, /*ignore_comments=*/true);
  if (j.is_discarded()) return Error{"stack file '" + path + "': not valid JSON"};
  if (!j.is_object()) return Error{"stack file '" + path + "': must be a JSON object"};
  return j;
}

Expected<std::string> stack_file_of(const std::string& name) {
  const NameRegistry bundled = bundled_stacks();
  if (auto known = bundled.check(name); !known) {
    return Error{known.error().message + " (or a stack file ending in .json)"};
  }
  return stacks_dir() + "/" + name + ".json";
}

// Merges `doc` (read from `path`) over its base, recursively.
Expected<Merged> merge(const Json& doc, const std::string& path, int depth) {
  const std::string ctx = "stack file '" + path + "'";
  for (const auto& [k, v] : doc.items()) {
    if (!contains(kTopFields, k)) {
      return Error{ctx + ": unknown field '" + k + "'; valid fields: " + join(kTopFields)};
    }
  }
  auto schema = doc.find("schema");
  if (schema == doc.end() || !schema->is_string() || schema->get<std::string>() != kStackSchema) {
    return Error{ctx + ": 'schema' must be \"" + std::string(kStackSchema) + "\""};
  }
  auto text_field = [&](const char* key) -> Expected<std::string> {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_string() || it->get<std::string>().empty()) {
      return Error{ctx + ": '" + key + "' must be a non-empty string"};
    }
    return it->get<std::string>();
  };
  auto name = text_field("name");
  if (!name) return name.error();
  if (!valid_name(*name)) {
    return Error{ctx + ": 'name' may hold letters, digits, '_', '-' and '.' only"};
  }
  auto description = text_field("description");
  if (!description) return description.error();
  Merged m;
  if (auto base = doc.find("base"); base != doc.end() && !base->is_null()) {
    if (!base->is_string() || base->get<std::string>().empty()) {
      return Error{ctx + ": 'base' must be a stack name or file"};
    }
    if (depth >= kMaxBaseDepth) {
      return Error{ctx + ": 'base' chain longer than " + std::to_string(kMaxBaseDepth) +
                   " (a cycle?)"};
    }
    const std::string b = base->get<std::string>();
    std::string base_path = b;
    if (!is_path(b)) {
      auto p = stack_file_of(b);
      if (!p) return with_context(ctx + ": 'base'", p.error());
      base_path = *p;
    } else if (std::filesystem::path(b).is_relative()) {
      base_path = (std::filesystem::path(path).parent_path() / b).string();
    }
    auto text = read_file(base_path);
    if (!text) return with_context(ctx + ": 'base'", text.error());
    auto base_doc = parse_json(*text, base_path);
    if (!base_doc) return base_doc.error();
    auto merged = merge(*base_doc, base_path, depth + 1);
    if (!merged) return merged.error();
    m = std::move(*merged);
  }
  m.name = *name;
  m.description = *description;
  m.path = path;
  auto overlay = [&](const char* key, Section& s,
                     const std::vector<std::string>& fields) -> Expected<void> {
    auto it = doc.find(key);
    if (it == doc.end()) return ok();
    if (it->is_null()) {  // drops the base's section
      s = Section{};
      return ok();
    }
    if (!it->is_object()) return Error{ctx + ": '" + key + "' must be an object or null"};
    for (const auto& [k, v] : it->items()) {
      if (!contains(fields, k)) {
        return Error{ctx + ": " + key + ": unknown field '" + k +
                     "'; valid fields: " + join(fields)};
      }
      s.fields[k] = v;
      s.origin[k] = path;
    }
    s.present = true;
    return ok();
  };
  DAGSGD_TRY(overlay("library", m.library, kLibraryFields));
  DAGSGD_TRY(overlay("framework", m.framework, kFrameworkFields));
  return m;
}

Expected<void> require(const Section& s, const Reader& r, const std::string& key) {
  if (!s.fields.contains(key)) return r.error(key, "missing");
  return ok();
}

Expected<StackSpec> build(const Merged& m) {
  StackSpec out;
  out.name = m.name;
  out.description = m.description;
  out.path = m.path;
  if (!m.library.present) {
    return Error{"stack file '" + m.path + "': missing 'library' (here or in its base)"};
  }
  const Reader lib(m.library, "library");
  LibrarySpec& l = out.library;
  DAGSGD_TRY(require(m.library, lib, "kind"));
  const Json& kind = m.library.fields.at("kind");
  if (!kind.is_string() || !contains(kKinds, kind.get<std::string>())) {
    return lib.error("kind", "must be one of " + join(kKinds) + ", got " + kind.dump());
  }
  l.kind = kind.get<std::string>();
  DAGSGD_TRY(require(m.library, lib, "name"));
  const Json& lname = m.library.fields.at("name");
  if (!lname.is_string() || lname.get<std::string>().empty()) {
    return lib.error("name", "must be a non-empty string");
  }
  l.name = lname.get<std::string>();
  auto num = [&](const std::string& key, double lo, double hi, double fallback, double& into,
                 double scale) -> Expected<void> {
    auto v = lib.number(key, out, lo, hi, fallback);
    if (!v) return v.error();
    into = *v * scale;
    return ok();
  };
  DAGSGD_TRY(num("per_message_us", 0, 1e6, 0, l.per_message_ns, 1e3));
  DAGSGD_TRY(num("per_collective_us", 0, 1e7, 0, l.per_collective_ns, 1e3));
  DAGSGD_TRY(num("efficiency", 1e-6, 1, 1, l.efficiency, 1));
  if (lib.has("efficiency") && !(l.efficiency > 0)) return lib.error("efficiency", "must be > 0");
  DAGSGD_TRY(num("connection_gbps", 0, 1e6, 0, l.connection_bandwidth, kBytesPerSecPerGbps));
  double connections = 1;
  DAGSGD_TRY(num("connections", 1, 1024, 1, connections, 1));
  if (connections != std::floor(connections)) {
    return lib.error("connections", "'value' must be a whole number");
  }
  l.connections = static_cast<int>(connections);
  auto limit = lib.text("bandwidth_limit", out, {"efficiency", "connection"}, "efficiency");
  if (!limit) return limit.error();
  l.bandwidth_limit = *limit;
  auto peer = lib.text("peer_transfers", out, {"parallel", "serial"}, "parallel");
  if (!peer) return peer.error();
  l.peer_transfers = *peer;
  if (lib.has("eager_limit_bytes")) {
    double eager = 0;
    DAGSGD_TRY(num("eager_limit_bytes", 0, 1e12, 0, eager, 1));
    if (eager != std::floor(eager)) {
      return lib.error("eager_limit_bytes", "'value' must be a whole number");
    }
    l.eager_limit = static_cast<Bytes>(eager);
  }
  DAGSGD_TRY(num("rendezvous_us", 0, 1e6, 0, l.rendezvous_ns, 1e3));
  if (l.rendezvous_ns > 0 && l.eager_limit <= 0) {
    return lib.error("rendezvous_us", "needs library.eager_limit_bytes > 0");
  }
  auto blocking = lib.rules("blocking", out);
  if (!blocking) return blocking.error();
  l.blocking = std::move(*blocking);
  auto nonblocking = lib.rules("nonblocking", out);
  if (!nonblocking) return nonblocking.error();
  l.nonblocking = std::move(*nonblocking);
  auto in_place = lib.rules("nonblocking_in_place", out);
  if (!in_place) return in_place.error();
  l.nonblocking_in_place = std::move(*in_place);
  auto algorithms = lib.names("algorithms", out);
  if (!algorithms) return algorithms.error();
  l.algorithms = std::move(*algorithms);
  auto one_node = lib.names("one_node_algorithms", out);
  if (!one_node) return one_node.error();
  l.one_node_algorithms = std::move(*one_node);
  auto protocols = lib.protocols("protocols", out, l.algorithms);
  if (!protocols) return protocols.error();
  l.protocols = std::move(*protocols);
  if (l.kind == "mpi") {
    if (l.blocking.empty()) return lib.error("blocking", "missing (an MPI library's table)");
    for (const char* k : {"algorithms", "one_node_algorithms", "protocols"}) {
      if (lib.has(k)) return lib.error(k, "applies to kind 'nccl' only");
    }
  } else {
    if (l.algorithms.empty()) return lib.error("algorithms", "missing (a NCCL library's)");
    if (l.protocols.empty()) return lib.error("protocols", "missing (a NCCL library's)");
    for (const auto& a : l.one_node_algorithms) {
      if (!contains(l.algorithms, a)) {
        return lib.error("one_node_algorithms", "'" + a + "' is not among library.algorithms");
      }
    }
    for (const char* k : {"blocking", "nonblocking", "nonblocking_in_place"}) {
      if (lib.has(k)) return lib.error(k, "applies to kind 'mpi' only");
    }
  }

  if (m.framework.present) {
    const Reader fw(m.framework, "framework");
    FrameworkSpec f;
    DAGSGD_TRY(require(m.framework, fw, "name"));
    const Json& fname = m.framework.fields.at("name");
    if (!fname.is_string() || fname.get<std::string>().empty()) {
      return fw.error("name", "must be a non-empty string");
    }
    f.name = fname.get<std::string>();
    auto call = fw.text("call", out, kCalls, "allreduce");
    if (!call) return call.error();
    f.call = *call;
    auto grouping = fw.text("grouping", out, {}, "");
    if (!grouping) return grouping.error();
    if (!grouping->empty()) {
      if (auto p = parse_overlap(*grouping); !p) return fw.error("grouping", p.error().message);
    }
    f.grouping = *grouping;
    auto per_collective = fw.number("per_collective_us", out, 0, 1e7, 0);
    if (!per_collective) return per_collective.error();
    f.per_collective_ns = *per_collective * 1e3;
    auto cycle = fw.number("cycle_ms", out, 0, 1e4, 0);
    if (!cycle) return cycle.error();
    f.cycle_ns = *cycle * 1e6;
    if (fw.has("negotiation")) {
      auto v = fw.constant("negotiation", out);
      if (!v) return v.error();
      if (!(*v)->is_boolean()) return fw.error("negotiation", "'value' must be true or false");
      f.negotiation = (*v)->get<bool>();
    }
    auto copy = fw.number("host_copy_gbps", out, 0, 1e6, 0);
    if (!copy) return copy.error();
    f.host_copy_bandwidth = *copy * kBytesPerSecPerGbps;
    auto mixed = fw.number("mixed_precision_gradient_bytes", out, 0, 4, 0);
    if (!mixed) return mixed.error();
    if (*mixed != 0 && *mixed != 2 && *mixed != 4) {
      return fw.error("mixed_precision_gradient_bytes", "'value' must be 0, 2 or 4");
    }
    f.mixed_precision_gradient_bytes = static_cast<int>(*mixed);
    // At most a read and a write of an 8-byte element each way, twice over.
    for (auto [key, field] : {std::pair{"copy_in_bytes", &FrameworkSpec::copy_in_bytes},
                              {"copy_back_bytes", &FrameworkSpec::copy_back_bytes}}) {
      auto bytes = fw.number(key, out, 0, 32, 0);
      if (!bytes) return bytes.error();
      f.*field = *bytes;
    }
    out.framework = std::move(f);
  }
  if (auto v = validate_stack(out); !v) {
    return Error{"stack file '" + m.path + "': " + v.error().message};
  }
  return out;
}

}  // namespace

std::string StackSpec::source_of(const std::string& field) const {
  for (const auto& [f, s] : sources) {
    if (f == field) return s;
  }
  return "";
}

void StackSpec::set_source(const std::string& field, const std::string& source) {
  for (auto& [f, s] : sources) {
    if (f == field) {
      s = source;
      return;
    }
  }
  sources.emplace_back(field, source);
}

NameRegistry bundled_stacks() { return NameRegistry("stack", json_file_stems(stacks_dir())); }

Expected<StackSpec> parse_stack_json(const std::string& text, const std::string& path) {
  auto doc = parse_json(text, path);
  if (!doc) return doc.error();
  auto merged = merge(*doc, path, 0);
  if (!merged) return merged.error();
  return build(*merged);
}

Expected<StackSpec> load_stack(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (!is_path(name_or_path)) {
    auto p = stack_file_of(name_or_path);
    if (!p) return p.error();
    path = *p;
  }
  auto text = read_file(path);
  if (!text) return Error{"stack: " + text.error().message};
  auto stack = parse_stack_json(*text, path);
  if (stack && !is_path(name_or_path) && stack->name != name_or_path) {
    return Error{"stack file '" + path + "': 'name' is '" + stack->name + "' but the file is " +
                 name_or_path + ".json"};
  }
  return stack;
}

Expected<void> validate_stack(const StackSpec& s) {
  const LibrarySpec& l = s.library;
  if (!contains(kKinds, l.kind)) return Error{"library.kind must be one of " + join(kKinds)};
  if (!(l.efficiency > 0 && l.efficiency <= 1)) {
    return Error{"library.efficiency must be in (0, 1]"};
  }
  if (!(l.per_message_ns >= 0) || !(l.per_collective_ns >= 0) || !(l.connection_bandwidth >= 0) ||
      !(l.rendezvous_ns >= 0) || l.connections < 1) {
    return Error{"library: costs, rates and the connection count must be >= 0 (connections >= 1)"};
  }
  if (l.peer_transfers != "parallel" && l.peer_transfers != "serial") {
    return Error{"library.peer_transfers must be parallel or serial"};
  }
  if (l.kind == "mpi" && l.blocking.empty()) return Error{"library.blocking: missing"};
  if (l.kind == "nccl") {
    if (l.algorithms.empty() || l.protocols.empty()) {
      return Error{"library: a NCCL library needs algorithms and protocols"};
    }
    for (const auto& a : l.algorithms) {
      const bool any = std::any_of(l.protocols.begin(), l.protocols.end(), [&](const auto& p) {
        return std::any_of(p.efficiency.begin(), p.efficiency.end(),
                           [&](const auto& e) { return e.first == a; });
      });
      if (!any) {
        return Error{"library.protocols: no protocol gives an efficiency for algorithm '" + a +
                     "'"};
      }
    }
  }
  if (s.framework && l.kind == "mpi") {
    const std::string& call = s.framework->call;
    if (call == "iallreduce" && l.nonblocking.empty()) {
      return Error{
          "framework.call 'iallreduce' needs library.nonblocking (the table of the "
          "non-blocking call)"};
    }
    if (call == "iallreduce_in_place" && l.nonblocking_in_place.empty()) {
      return Error{"framework.call 'iallreduce_in_place' needs library.nonblocking_in_place"};
    }
  }
  return ok();
}

std::string rule_algorithm(const std::vector<AlgorithmRule>& rules, int ranks, double bytes) {
  for (const auto& r : rules) {
    if (r.ranks_below > 0 && ranks >= r.ranks_below) continue;
    if (r.bytes_below > 0 && bytes >= static_cast<double>(r.bytes_below)) continue;
    return r.algorithm;
  }
  return "";
}

const std::vector<AlgorithmRule>& call_rules(const StackSpec& stack) {
  const LibrarySpec& l = stack.library;
  if (stack.framework) {
    if (stack.framework->call == "iallreduce") return l.nonblocking;
    if (stack.framework->call == "iallreduce_in_place") return l.nonblocking_in_place;
  }
  return l.blocking;
}

}  // namespace dagsgd::model
