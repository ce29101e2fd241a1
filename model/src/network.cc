// Network definition files: strict reading and validation, and the bundled-network lookup.
// nlohmann-json stays inside this file.
#include "dagsgd/model/network.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/model/registry.h"
#include "message_text.h"

namespace dagsgd::model {

namespace {

using Json = nlohmann::json;

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Bounds on what a definition may state (docs/limits.md): far above any real network, low
// enough that times and byte counts computed from them stay finite and inside int64.
constexpr double kMaxLayerFlops = 1e18;                       // per sample, one layer
constexpr std::int64_t kMaxElements = 1'000'000'000'000'000;  // 1e15: a tensor, a layer's output,
                                                              // all parameters, the input

std::string type_name_of(const Json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "number";
  return j.type_name();
}

// Field access with an error that names the field and what it should have been.
Expected<const Json*> field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return Error{std::string("missing field '") + key + "'"};
  return &*it;
}

Expected<std::string> string_field(const Json& obj, const char* key, bool allow_empty) {
  auto f = field(obj, key);
  if (!f) return f.error();
  const Json& j = **f;
  if (!j.is_string()) {
    return Error{std::string("'") + key + "' must be a string, got " + type_name_of(j)};
  }
  std::string s = j.get<std::string>();
  if (s.empty() && !allow_empty) return Error{std::string("'") + key + "' is empty"};
  return s;
}

// A JSON integer as int64; floats (even 3.0) are refused so that shapes stay exact.
Expected<std::int64_t> as_int64(const Json& j, const std::string& what) {
  if (!j.is_number_integer()) {
    return Error{what + " must be an integer, got " + type_name_of(j) + " (" +
                 message::short_dump(j) + ")"};
  }
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > static_cast<std::uint64_t>(kInt64Max)) {
    return Error{what + " is too large (" + message::short_dump(j) + ")"};
  }
  return j.get<std::int64_t>();
}

// A non-empty list of positive integers whose product is at most kMaxElements.
Expected<std::vector<std::int64_t>> shape_field(const Json& obj, const char* key) {
  auto f = field(obj, key);
  if (!f) return f.error();
  const Json& j = **f;
  if (!j.is_array()) {
    return Error{std::string("'") + key + "' must be an array, got " + type_name_of(j)};
  }
  if (j.empty()) return Error{std::string("'") + key + "' is empty"};
  std::vector<std::int64_t> shape;
  std::int64_t product = 1;
  for (std::size_t i = 0; i < j.size(); ++i) {
    std::string what = std::string("'") + key + "'[" + std::to_string(i) + "]";
    auto v = as_int64(j[i], what);
    if (!v) return v.error();
    if (*v <= 0) return Error{what + " is " + std::to_string(*v) + "; dimensions must be positive"};
    if (__builtin_mul_overflow(product, *v, &product) || product > kMaxElements) {
      return Error{std::string("'") + key + "' " + message::short_dump(j) +
                   " has more than 1e15 elements: out of range"};
    }
    shape.push_back(*v);
  }
  return shape;
}

Expected<ParamTensor> parse_param(const Json& j, std::size_t index) {
  std::string where = "params[" + std::to_string(index) + "]";
  if (!j.is_object()) return Error{where + " must be an object, got " + type_name_of(j)};
  ParamTensor p;
  auto name = string_field(j, "name", false);
  if (!name) return with_context(where, name.error());
  p.name = *name;
  where += " '" + p.name + "'";
  auto shape = shape_field(j, "shape");
  if (!shape) return with_context(where, shape.error());
  p.shape = std::move(*shape);
  return p;
}

// Everything about one layer except the uniqueness of its name.
Expected<Layer> parse_layer_body(const Json& j, Layer layer) {
  auto type = string_field(j, "type", false);
  if (!type) return type.error();
  layer.type = *type;

  auto params = field(j, "params");
  if (!params) return params.error();
  if (!(*params)->is_array()) {
    return Error{"'params' must be an array, got " + type_name_of(**params)};
  }
  std::set<std::string> param_names;
  for (std::size_t i = 0; i < (*params)->size(); ++i) {
    auto p = parse_param((**params)[i], i);
    if (!p) return p.error();
    if (!param_names.insert(p->name).second) {
      return Error{"params[" + std::to_string(i) + "]: duplicate parameter name '" + p->name + "'"};
    }
    layer.params.push_back(std::move(*p));
  }

  auto flops = field(j, "forward_flops");
  if (!flops) return flops.error();
  if (!(*flops)->is_number()) {
    return Error{"'forward_flops' must be a number, got " + type_name_of(**flops)};
  }
  layer.forward_flops = (*flops)->get<double>();
  if (!std::isfinite(layer.forward_flops)) return Error{"'forward_flops' is not finite"};
  if (layer.forward_flops < 0) {
    return Error{"'forward_flops' is negative (" + (*flops)->dump() + ")"};
  }
  if (layer.forward_flops > kMaxLayerFlops) {
    return Error{"'forward_flops' " + (*flops)->dump() +
                 " is out of range (at most 1e18 per sample and layer)"};
  }

  auto act = field(j, "activation_elements");
  if (!act) return act.error();
  auto elements = as_int64(**act, "'activation_elements'");
  if (!elements) return elements.error();
  if (*elements <= 0) {
    return Error{"'activation_elements' is " + std::to_string(*elements) +
                 "; every layer produces an output, so it must be positive"};
  }
  if (*elements > kMaxElements) {
    return Error{"'activation_elements' " + std::to_string(*elements) +
                 " is out of range (at most 1e15)"};
  }
  layer.activation_elements = *elements;
  return layer;
}

Expected<Network> parse_network(const Json& root) {
  if (!root.is_object()) return Error{"the top level must be an object, got " + type_name_of(root)};
  Network net;
  auto name = string_field(root, "name", false);
  if (!name) return name.error();
  net.name = *name;
  auto description = string_field(root, "description", true);
  if (!description) return description.error();
  net.description = *description;
  auto source = string_field(root, "source", false);
  if (!source) return source.error();
  net.source = *source;
  auto input_shape = shape_field(root, "input_shape");
  if (!input_shape) return input_shape.error();
  net.input_shape = std::move(*input_shape);

  auto layers = field(root, "layers");
  if (!layers) return layers.error();
  if (!(*layers)->is_array()) {
    return Error{"'layers' must be an array, got " + type_name_of(**layers)};
  }
  if ((*layers)->empty()) return Error{"'layers' is empty; a network needs at least one layer"};

  std::map<std::string, std::size_t> seen;
  std::int64_t total_params = 0;
  for (std::size_t i = 0; i < (*layers)->size(); ++i) {
    const Json& lj = (**layers)[i];
    std::string where = "layer " + std::to_string(i);
    if (!lj.is_object()) return Error{where + " must be an object, got " + type_name_of(lj)};
    auto lname = string_field(lj, "name", false);
    if (!lname) return with_context(where, lname.error());
    where += " '" + *lname + "'";
    if (auto [it, inserted] = seen.emplace(*lname, i); !inserted) {
      return Error{where + ": duplicate layer name (also layer " + std::to_string(it->second) +
                   ")"};
    }
    Layer layer;
    layer.name = *lname;
    auto parsed = parse_layer_body(lj, std::move(layer));
    if (!parsed) return with_context(where, parsed.error());
    for (const ParamTensor& p : parsed->params) {
      if (__builtin_add_overflow(total_params, p.elements(), &total_params) ||
          total_params > kMaxElements) {
        return Error{where + ": the network has more than 1e15 parameters: out of range"};
      }
    }
    net.layers.push_back(std::move(*parsed));
  }
  return net;
}

}  // namespace

std::int64_t ParamTensor::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::int64_t Layer::param_elements() const {
  std::int64_t n = 0;
  for (const ParamTensor& p : params) n += p.elements();
  return n;
}

std::int64_t Network::param_elements() const {
  std::int64_t n = 0;
  for (const Layer& l : layers) n += l.param_elements();
  return n;
}

double Network::forward_flops() const {
  double f = 0;
  for (const Layer& l : layers) f += l.forward_flops;
  return f;
}

Expected<Network> parse_network_json(const std::string& text, const std::string& where) {
  const std::string context = "network '" + where + "'";
  Json root = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    // Syntax errors and numbers beyond double (1e999) alike, with their line and column.
    return Error{context + ": not valid JSON: " + json_syntax_error(text)};
  }
  auto net = parse_network(root);
  if (!net) return with_context(context, net.error());
  return net;
}

Expected<Network> load_network_file(const std::string& path) {
  auto text = read_file(path, kMaxDocumentBytes);
  if (!text) return Error{"network: " + text.error().message};
  return parse_network_json(*text, path);
}

std::vector<std::string> bundled_network_names() {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(data_path("networks"), ec);
  if (ec) return names;
  for (const auto& entry : it) {
    const std::filesystem::path& p = entry.path();
    if (p.extension() == ".json" && entry.is_regular_file(ec)) names.push_back(p.stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Expected<Network> load_network(const std::string& name_or_path) {
  std::vector<std::string> names = bundled_network_names();
  if (std::find(names.begin(), names.end(), name_or_path) != names.end()) {
    return load_network_file(data_path("networks/" + name_or_path + ".json"));
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_path, ec)) return load_network_file(name_or_path);
  std::string list = NameRegistry("network", names).list();
  if (list.empty()) list = "(none found in " + data_path("networks") + ")";
  return Error{"unknown network '" + name_or_path +
               "': not a bundled network and not a readable file; bundled networks: " + list};
}

}  // namespace dagsgd::model
