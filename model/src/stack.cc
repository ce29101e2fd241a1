// Loading and validating software-stack files (stack.h; stack_write.cc writes them): every
// constant is an object {"value": ..., "source": "..."}; a file may extend a `base` stack field by
// field.
#include "dagsgd/model/stack.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/model/stack_names.h"
#include "file_schema.h"
#include "stack_reader.h"

namespace dagsgd::model {
namespace {

using stack_detail::contains;
using stack_detail::join;
using stack_detail::Json;
using stack_detail::Reader;
using stack_detail::Section;
using stack_detail::valid_name;

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

std::string stacks_dir() { return data_path("stacks"); }

bool is_path(const std::string& s) {
  return s.find('/') != std::string::npos ||
         (s.size() > 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}

struct Merged {
  std::string name;
  std::string description;
  std::string path;  // the outermost file
  Section library;
  Section framework;
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

Expected<Merged> merge_file(const std::string& path, int depth);

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
  // '+' joins the names of a composed stack (FRAMEWORK+LIBRARY), which stack_to_json writes.
  std::string plain = *name;
  std::replace(plain.begin(), plain.end(), '+', '-');
  if (!valid_name(plain)) {
    return Error{ctx + ": 'name' may hold letters, digits, '_', '-', '.' and '+' only"};
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
    auto merged = merge_file(base_path, depth + 1);
    if (!merged) return with_context(ctx + ": 'base'", merged.error());
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

Expected<Merged> merge_file(const std::string& path, int depth) {
  auto text = read_file(path, kMaxConfigBytes);
  if (!text) return text.error();
  auto doc = parse_json(*text, path);
  if (!doc) return doc.error();
  return merge(*doc, path, depth);
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
  // A field read into `to`, or its error.
  auto take = [](auto read, auto& to) -> Expected<void> {
    if (!read) return read.error();
    to = std::move(*read);
    return model::ok();
  };
  DAGSGD_TRY(take(lib.rules("blocking", out), l.blocking));
  DAGSGD_TRY(take(lib.rules("nonblocking", out), l.nonblocking));
  DAGSGD_TRY(take(lib.rules("nonblocking_in_place", out), l.nonblocking_in_place));
  DAGSGD_TRY(take(lib.names("algorithms", out), l.algorithms));
  DAGSGD_TRY(take(lib.names("one_node_algorithms", out), l.one_node_algorithms));
  DAGSGD_TRY(take(lib.protocols("protocols", out, l.algorithms), l.protocols));
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

// The framework section of one bundled stack over the library section of another, as `name`.
Expected<StackSpec> compose(const StackChoice& choice, const std::string& name) {
  auto library_file = stack_file_of(choice.stack);
  if (!library_file) return library_file.error();
  auto framework_file = stack_file_of(choice.framework_stack);
  if (!framework_file) return framework_file.error();
  auto merged = merge_file(*library_file, 0);
  if (!merged) return merged.error();
  auto framework = merge_file(*framework_file, 0);
  if (!framework) return framework.error();
  // A framework's constants were sourced over its own kind of library: what it does around
  // another kind (Horovod's host copies around MPI, the call it makes) has no source.
  const Json& kind = merged->library.fields["kind"];
  const Json& framework_kind = framework->library.fields["kind"];
  if (kind != framework_kind) {
    return Error{"stack '" + name + "': the framework of stack '" + choice.framework_stack +
                 "' was sourced over a " + framework_kind.dump() + " library, stack '" +
                 choice.stack + "' is " + kind.dump() +
                 ": pick a framework sourced over that kind, or write a stack file with a "
                 "'base' (docs/communication.md)"};
  }
  merged->framework = std::move(framework->framework);
  merged->name = name;
  merged->description = choice.description;
  return build(*merged);
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
  if (!is_path(name_or_path) && !bundled_stacks().contains(name_or_path)) {
    auto names = load_stack_names();
    if (!names) return names.error();
    auto choice = resolve_stack_name(*names, name_or_path);
    if (!choice) return choice.error();
    if (choice->framework_stack.empty()) return load_stack(choice->stack);
    return compose(*choice, name_or_path);
  }
  std::string path = name_or_path;
  if (!is_path(name_or_path)) {
    auto p = stack_file_of(name_or_path);
    if (!p) return p.error();
    path = *p;
  }
  auto text = read_file(path, kMaxConfigBytes);
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
