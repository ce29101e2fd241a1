// Network definitions: layers with parameter tensors, forward FLOPs and activation sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

struct ParamTensor {
  std::string name;                 // "weight", "bias", ...
  std::vector<std::int64_t> shape;  // e.g. {64, 3, 7, 7}
  std::int64_t elements() const;
};

struct Layer {
  std::string name;  // unique within the network, e.g. "layer1.0.conv1"
  std::string type;  // conv, bn, fc, pool, relu, lrn, concat, embedding, attention, layernorm, ...
  std::vector<ParamTensor> params;
  double forward_flops = 0;              // per sample; one multiply-add counts as 2 FLOPs
  std::int64_t activation_elements = 0;  // output elements per sample
  std::int64_t param_elements() const;
};

struct Network {
  std::string name;
  std::string description;
  std::string source;                     // where the layer shapes come from
  std::vector<std::int64_t> input_shape;  // per sample, e.g. {3, 224, 224}
  std::vector<Layer> layers;              // in forward order; the output layer is last
  std::int64_t param_elements() const;
  double forward_flops() const;  // per sample
};

// Loads a network definition file (the schema is in docs/formats.md). Errors name the file and
// the layer.
Expected<Network> load_network_file(const std::string& path);
Expected<Network> parse_network_json(const std::string& text, const std::string& where);

// Bundled networks (datasets/networks/<name>.json); a name that is not bundled but is a readable
// file path is loaded as a file. Unknown names list the bundled ones.
Expected<Network> load_network(const std::string& name_or_path);
std::vector<std::string> bundled_network_names();

}  // namespace dagsgd::model
