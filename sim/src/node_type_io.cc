// Node-type files (datasets/topologies/*.json and user files, schema in docs/topology.md):
// link types with their nominal rate, efficiency and source; devices; links by device name.
// Every error names the file and the entry. Also the list of bundled node types.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dagsgd/model/format.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/sim/node_type.h"
#include "node_route.h"

namespace dagsgd::sim {

using model::data_path;
using model::Error;
using model::Expected;
using model::from_micros;
using model::json_file_stems;
using model::NameRegistry;
using model::Nanos;
using model::ok;
using model::read_file;

namespace {

using Json = nlohmann::json;
using topo::in_quotes;
using topo::kBytesPerGbyte;

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The fields of one JSON object, each read with a message naming it.
class Fields {
 public:
  Fields(const Json& j, std::vector<std::string> allowed) : j_(j), allowed_(std::move(allowed)) {}

  Expected<void> check() const {
    if (!j_.is_object()) return Error{"must be an object, got " + j_.dump()};
    for (const auto& [key, value] : j_.items()) {
      if (std::find(allowed_.begin(), allowed_.end(), key) == allowed_.end()) {
        return Error{"unknown field '" + key + "'; valid fields: " + join(allowed_)};
      }
    }
    return ok();
  }

  bool has(const std::string& key) const { return j_.contains(key); }

  Expected<std::string> text(const std::string& key) const {
    auto it = j_.find(key);
    if (it == j_.end()) return Error{"missing '" + key + "'"};
    if (!it->is_string() || it->get<std::string>().empty()) {
      return Error{"'" + key + "' must be a non-empty string, got " + it->dump()};
    }
    return it->get<std::string>();
  }

  // A finite number in [low, high] (exclusive at `low` when `low_open`).
  Expected<double> number(const std::string& key, double low, bool low_open, double high) const {
    auto it = j_.find(key);
    if (it == j_.end()) return Error{"missing '" + key + "'"};
    const double v = it->is_number() ? it->get<double>() : std::nan("");
    if (!std::isfinite(v) || v < low || (low_open && v == low) || v > high) {
      std::ostringstream range;
      range << (low_open ? "> " : ">= ") << low;
      if (std::isfinite(high)) range << " and <= " << high;
      return Error{"'" + key + "' must be a number " + range.str() + ", got " + it->dump()};
    }
    return v;
  }

  Expected<int> whole(const std::string& key, int fallback, int low, int high) const {
    auto it = j_.find(key);
    if (it == j_.end()) return fallback;
    if (!it->is_number_integer() || it->get<long long>() < low || it->get<long long>() > high) {
      return Error{"'" + key + "' must be a whole number from " + std::to_string(low) + " to " +
                   std::to_string(high) + ", got " + it->dump()};
    }
    return static_cast<int>(it->get<long long>());
  }

  Expected<bool> flag(const std::string& key) const {
    auto it = j_.find(key);
    if (it == j_.end()) return false;
    if (!it->is_boolean()) return Error{"'" + key + "' must be true or false, got " + it->dump()};
    return it->get<bool>();
  }

 private:
  const Json& j_;
  std::vector<std::string> allowed_;
};

const std::vector<std::string> kTopFields = {"name",       "description", "source", "nic_fabric",
                                             "link_types", "devices",     "links",  "gpu_nic"};
const std::vector<std::string> kLinkTypeFields = {"kind", "nominal_gbytes_per_s", "efficiency",
                                                  "latency_us", "source"};
const std::vector<std::string> kDeviceFields = {"name", "kind", "note"};
const std::vector<std::string> kLinkFields = {"from", "to", "type", "count", "duplex", "note"};
// Kinds a node file may use (network switches come with the cluster network).
const std::vector<DeviceKind> kNodeDeviceKinds = {DeviceKind::kGpu, DeviceKind::kPcieSwitch,
                                                  DeviceKind::kCpu, DeviceKind::kNic,
                                                  DeviceKind::kNvSwitch};
constexpr int kMaxBondedLinks = 1024;
// Far above any real link (NVLink5 is 50 GB/s per link, a whole GPU 900 GB/s), and small
// enough that bandwidths and nanoseconds cannot overflow.
constexpr double kMaxLinkGbytesPerS = 1e6;
// The physical floor: a link type slower than 1 MB/s after its efficiency (8 Mbit/s, slower than
// any link inside a computer) is a typo, and would make the flow tier crawl through an
// iteration of days.
constexpr double kMinLinkGbytesPerS = 1e-3;
constexpr double kMaxLatencyUs = 1e6;

// Names appear in cluster-wide names ("n3.gpu0") and in Graphviz output.
bool valid_name(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

struct LinkType {
  std::string kind;
  double bandwidth = 0;  // bytes/s per bonded link, after efficiency
  Nanos latency = 0;
};

Expected<std::map<std::string, LinkType>> parse_link_types(const Json& j) {
  if (!j.is_object() || j.empty()) {
    return Error{"'link_types' must be a non-empty object of named link types"};
  }
  std::map<std::string, LinkType> types;
  for (const auto& [name, value] : j.items()) {
    const std::string where = "link_types." + name;
    auto fail = [&](const Error& e) { return Error{where + ": " + e.message}; };
    if (!valid_name(name)) return Error{where + ": a name of letters, digits, '_' and '-'"};
    Fields f(value, kLinkTypeFields);
    if (auto c = f.check(); !c) return fail(c.error());
    LinkType t;
    auto kind = f.text("kind");
    if (!kind) return fail(kind.error());
    t.kind = *kind;
    auto source = f.text("source");
    if (!source) return fail(source.error());
    auto nominal = f.number("nominal_gbytes_per_s", 0, true, kMaxLinkGbytesPerS);
    if (!nominal) return fail(nominal.error());
    auto efficiency = f.number("efficiency", 0, true, 1);
    if (!efficiency) return fail(efficiency.error());
    auto latency = f.number("latency_us", 0, false, kMaxLatencyUs);
    if (!latency) return fail(latency.error());
    if (!(*nominal * *efficiency >= kMinLinkGbytesPerS)) {
      return fail(Error{"'nominal_gbytes_per_s' (" + model::num(*nominal) + ") x 'efficiency' (" +
                        model::num(*efficiency) + ") is " + model::num(*nominal * *efficiency) +
                        " GB/s, below the floor of " + model::num(kMinLinkGbytesPerS) +
                        " GB/s (1 MB/s) a link may have"});
    }
    t.bandwidth = *nominal * kBytesPerGbyte * *efficiency;
    t.latency = from_micros(*latency);
    types.emplace(name, t);
  }
  return types;
}

Expected<DeviceKind> parse_kind(const std::string& s) {
  std::vector<std::string> names;
  for (DeviceKind k : kNodeDeviceKinds) {
    if (s == device_kind_name(k)) return k;
    names.emplace_back(device_kind_name(k));
  }
  return Error{"unknown device kind '" + s + "'; valid kinds: " + join(names)};
}

// The NIC of each GPU when the file names none: the nearest NIC by hops, and among equally near
// ones the one fewest GPUs use so far (NCCL spreads GPUs over equidistant NICs), lowest first.
std::vector<int> nearest_nics(const NodeType& node) {
  std::vector<int> choice;
  if (node.nics.empty()) return std::vector<int>(node.gpus.size(), -1);
  const auto out = topo::out_links(node);
  std::vector<int> users(node.nics.size(), 0);
  for (int gpu : node.gpus) {
    int pick = -1;
    std::size_t pick_hops = 0;
    const auto routes = topo::local_routes(node, out, gpu, node.nics);
    for (std::size_t k = 0; k < node.nics.size(); ++k) {
      const auto& r = routes[k];
      if (!r) continue;
      if (pick < 0 || r->size() < pick_hops || (r->size() == pick_hops && users[k] < users[pick])) {
        pick = static_cast<int>(k);
        pick_hops = r->size();
      }
    }
    // A GPU with no NIC in reach keeps NIC 0; validation names it.
    if (pick < 0) pick = 0;
    ++users[pick];
    choice.push_back(pick);
  }
  return choice;
}

Expected<NodeType> parse_node_type(const Json& root) {
  Fields top(root, kTopFields);
  DAGSGD_TRY(top.check());
  NodeType node;
  const std::pair<const char*, std::string*> texts[] = {{"name", &node.name},
                                                        {"description", &node.description},
                                                        {"source", &node.source},
                                                        {"nic_fabric", &node.nic_fabric}};
  for (const auto& [key, field] : texts) {
    if (field == &node.nic_fabric && !top.has(key)) continue;  // the one optional text
    auto value = top.text(key);
    DAGSGD_TRY(value);
    *field = *value;
  }
  if (!valid_name(node.name)) return Error{"'name' must be letters, digits, '_' and '-'"};
  if (!root.contains("link_types")) return Error{"missing 'link_types'"};
  auto types = parse_link_types(root["link_types"]);
  DAGSGD_TRY(types);
  std::vector<std::string> type_names;
  for (const auto& [n, t] : *types) type_names.push_back(n);

  // Devices, in file order; GPU g and NIC k are the g-th GPU and k-th NIC listed.
  if (!root.contains("devices") || !root["devices"].is_array() || root["devices"].empty()) {
    return Error{"'devices' must be a non-empty list"};
  }
  std::map<std::string, int> index;
  const Json& devices = root["devices"];
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const std::string where = "devices[" + std::to_string(i) + "]";
    auto fail = [&](const Error& e) { return Error{where + ": " + e.message}; };
    Fields f(devices[i], kDeviceFields);
    if (auto c = f.check(); !c) return fail(c.error());
    auto dev_name = f.text("name");
    if (!dev_name) return fail(dev_name.error());
    if (!valid_name(*dev_name)) {
      return Error{where + ": name " + in_quotes(*dev_name) +
                   " must be letters, digits, '_' and '-'"};
    }
    auto kind_text = f.text("kind");
    if (!kind_text) return fail(kind_text.error());
    auto kind = parse_kind(*kind_text);
    if (!kind) return fail(kind.error());
    const int d = static_cast<int>(node.devices.size());
    if (!index.emplace(*dev_name, d).second) {
      return Error{where + ": a second device named " + in_quotes(*dev_name)};
    }
    node.devices.push_back({*kind, *dev_name, 0});
    if (*kind == DeviceKind::kGpu) node.gpus.push_back(d);
    if (*kind == DeviceKind::kNic) node.nics.push_back(d);
  }
  if (node.gpus.empty()) return Error{"'devices' lists no device of kind gpu"};

  // Links: one entry per direction, or "duplex": true for both.
  if (!root.contains("links") || !root["links"].is_array()) return Error{"'links' must be a list"};
  const Json& links = root["links"];
  struct Origin {
    std::size_t entry;
    std::string type;
    int count;
  };
  std::map<std::pair<int, int>, Origin> seen;
  for (std::size_t i = 0; i < links.size(); ++i) {
    const std::string where = "links[" + std::to_string(i) + "]";
    auto fail = [&](const Error& e) { return Error{where + ": " + e.message}; };
    Fields f(links[i], kLinkFields);
    if (auto c = f.check(); !c) return fail(c.error());
    int ends[2] = {0, 0};
    const char* keys[2] = {"from", "to"};
    for (int e = 0; e < 2; ++e) {
      auto dev = f.text(keys[e]);
      if (!dev) return fail(dev.error());
      auto it = index.find(*dev);
      if (it == index.end()) {
        return Error{where + ": '" + keys[e] + "' names no device: " + in_quotes(*dev)};
      }
      ends[e] = it->second;
    }
    const std::string label = where + " (" + in_quotes(node.devices[ends[0]].name) + " -> " +
                              in_quotes(node.devices[ends[1]].name) + ")";
    if (ends[0] == ends[1]) return Error{label + ": a link from a device to itself"};
    auto type = f.text("type");
    if (!type) return fail(type.error());
    auto t = types->find(*type);
    if (t == types->end()) {
      return Error{label + ": unknown link type " + in_quotes(*type) +
                   "; valid link types: " + join(type_names)};
    }
    auto count = f.whole("count", 1, 1, kMaxBondedLinks);
    if (!count) return Error{label + ": " + count.error().message};
    auto duplex = f.flag("duplex");
    if (!duplex) return Error{label + ": " + duplex.error().message};
    for (int dir = 0; dir < (*duplex ? 2 : 1); ++dir) {
      const int from = ends[dir];
      const int to = ends[1 - dir];
      auto [pos, added] = seen.emplace(std::make_pair(from, to), Origin{i, *type, *count});
      if (!added) {
        return Error{label + ": repeats the link " + in_quotes(node.devices[from].name) + " -> " +
                     in_quotes(node.devices[to].name) + " of links[" +
                     std::to_string(pos->second.entry) + "] (bond parallel links with \"count\")"};
      }
      node.links.push_back({from, to, t->second.bandwidth * *count, t->second.latency,
                            t->second.kind, *type, *count});
    }
  }
  // Both directions of every cable, alike.
  for (const auto& [ends, origin] : seen) {
    const std::string label = "links[" + std::to_string(origin.entry) + "] (" +
                              in_quotes(node.devices[ends.first].name) + " -> " +
                              in_quotes(node.devices[ends.second].name) + ")";
    auto back = seen.find({ends.second, ends.first});
    if (back == seen.end()) {
      return Error{label + ": no link back from " + in_quotes(node.devices[ends.second].name) +
                   " to " + in_quotes(node.devices[ends.first].name) +
                   " (add it, or \"duplex\": true)"};
    }
    if (back->second.type != origin.type || back->second.count != origin.count) {
      return Error{label + " is " + origin.type + " x" + std::to_string(origin.count) +
                   " but links[" + std::to_string(back->second.entry) + "] back is " +
                   back->second.type + " x" + std::to_string(back->second.count) +
                   " (the two directions must match)"};
    }
  }

  if (root.contains("gpu_nic")) {
    const Json& list = root["gpu_nic"];
    if (!list.is_array() || list.size() != node.gpus.size()) {
      return Error{"'gpu_nic' must list one NIC index per GPU (" +
                   std::to_string(node.gpus.size()) + "), got " + list.dump()};
    }
    for (std::size_t g = 0; g < list.size(); ++g) {
      const Json& v = list[g];
      if (!v.is_number_integer() || v.get<long long>() < 0 ||
          v.get<long long>() >= static_cast<long long>(node.nics.size())) {
        return Error{"gpu_nic[" + std::to_string(g) + "] = " + v.dump() +
                     " is out of range: the node has " + std::to_string(node.nics.size()) +
                     " NICs (indices from 0 in the order 'devices' lists them)"};
      }
      node.gpu_nic.push_back(static_cast<int>(v.get<long long>()));
    }
  } else {
    node.gpu_nic = nearest_nics(node);
  }
  DAGSGD_TRY(validate_node_type(node));
  return node;
}

std::string topologies_dir() { return data_path("topologies"); }

}  // namespace

Expected<NodeType> parse_node_type_json(const std::string& text, const std::string& where) {
  const std::string context = "node type '" + where + "'";
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 3, column 5: ...",
    // or "[json.exception.out_of_range.406] number overflow parsing '1e400'".
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    return Error{context + ": not valid JSON: " + msg};
  }
  auto node = parse_node_type(root);
  if (!node) return with_context(context, node.error());
  return node;
}

NameRegistry bundled_node_types() {
  return NameRegistry("node type", json_file_stems(topologies_dir()));
}

Expected<NodeType> load_node_type(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  if (!is_path) {
    const NameRegistry bundled = bundled_node_types();
    if (auto known = bundled.check(name_or_path); !known) {
      return Error{known.error().message + " (or a node type file ending in .json)"};
    }
    const std::string path = topologies_dir() + "/" + name_or_path + ".json";
    auto text = read_file(path, model::kMaxConfigBytes);
    if (!text) return Error{"node type: " + text.error().message};
    auto node = parse_node_type_json(*text, path);
    if (node && node->name != name_or_path) {
      return Error{"node type '" + path + "': 'name' is " + in_quotes(node->name) +
                   " but the file is " + name_or_path + ".json"};
    }
    return node;
  }
  auto text = read_file(name_or_path, model::kMaxConfigBytes);
  if (!text) return Error{"node type: " + text.error().message};
  return parse_node_type_json(*text, name_or_path);
}

Expected<std::string> list_node_types() {
  const NameRegistry names = bundled_node_types();
  if (names.names().empty()) {
    return Error{"no bundled node types in " + data_path("topologies")};
  }
  std::string out;
  for (const auto& name : names.names()) {
    auto node = load_node_type(name);
    if (!node) return node.error();
    char line[64];
    std::snprintf(line, sizeof line, "%-22s ", name.c_str());
    out += line + node->description + "\n";
  }
  return out;
}

}  // namespace dagsgd::sim
