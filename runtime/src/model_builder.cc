// Building the trainer's layer stack from --model: the built-in networks and fc/relu spec files.
#include "dagsgd/runtime/model_builder.h"

#include "dagsgd/model/network.h"

namespace dagsgd::runtime {

namespace {

model::Expected<std::vector<std::unique_ptr<Layer>>> layers_from_network(const std::string& path) {
  auto net = model::load_network(path);
  if (!net) return net.error();
  std::string where = "network '" + path + "'";
  for (const auto& l : net->layers) {
    if (l.type != "fc" && l.type != "relu") {
      return model::Error{where + ": layer '" + l.name + "' has type '" + l.type +
                          "'; dagsgd train runs networks of fc and relu layers only"};
    }
  }
  std::int64_t in = 1;
  for (auto d : net->input_shape) in *= d;
  if (net->input_shape.empty()) in = kImageInputs;
  if (in != kImageInputs) {
    return model::Error{where + ": input has " + std::to_string(in) +
                        " elements; Fashion-MNIST images have 784 (28x28)"};
  }
  std::vector<std::unique_ptr<Layer>> layers;
  std::int64_t cur = in;
  for (const auto& l : net->layers) {
    if (l.type == "fc") {
      const model::ParamTensor* w = nullptr;
      for (const auto& p : l.params) {
        if (p.name == "weight") w = &p;
      }
      if (w == nullptr || w->shape.size() != 2) {
        return model::Error{where + ": layer '" + l.name +
                            "': an fc layer needs a 'weight' of shape [out, in]"};
      }
      if (w->shape[1] != cur) {
        return model::Error{where + ": layer '" + l.name + "' takes " +
                            std::to_string(w->shape[1]) + " inputs but receives " +
                            std::to_string(cur)};
      }
      cur = w->shape[0];
      layers.push_back(make_dense(l.name, w->shape[1], cur));
    } else {
      layers.push_back(make_relu(l.name, cur));
    }
  }
  if (layers.empty() || cur != kImageClasses) {
    return model::Error{where +
                        ": the last layer must have 10 outputs (Fashion-MNIST classes), has " +
                        std::to_string(cur)};
  }
  return layers;
}

}  // namespace

// Keeps the fc layers of an fc/relu stack for the GPU, which fuses the ReLU into the fc before it:
// a ReLU must follow every fc but the last.
model::Expected<std::vector<std::unique_ptr<Layer>>> fc_layers_for_device(
    std::vector<std::unique_ptr<Layer>> all, const std::string& model) {
  std::vector<std::unique_ptr<Layer>> fc;
  std::string where = "--device cuda: model '" + model + "': ";
  for (std::size_t i = 0; i < all.size(); i += 2) {
    if (std::string(all[i]->type()) != "fc") {
      return model::Error{where + "layer '" + all[i]->name() + "' is a " + all[i]->type() +
                          "; the GPU runs fc layers, each but the last followed by a relu"};
    }
    if (i + 1 < all.size() && std::string(all[i + 1]->type()) != "relu") {
      return model::Error{where + "layer '" + all[i + 1]->name() +
                          "' follows an fc but is no relu; the GPU fuses a relu into each fc"};
    }
    if (i + 2 == all.size()) {
      return model::Error{where + "it ends with relu '" + all[i + 1]->name() +
                          "'; the GPU needs an fc layer last"};
    }
    fc.push_back(std::move(all[i]));
  }
  return fc;
}

model::Expected<std::vector<std::unique_ptr<Layer>>> build_model(const TrainConfig& cfg) {
  std::vector<std::unique_ptr<Layer>> layers;
  if (cfg.model == "mlp") {
    std::int64_t in = kImageInputs;
    int i = 1;
    for (auto w : cfg.widths) {
      layers.push_back(make_dense("fc" + std::to_string(i), in, w));
      layers.push_back(make_relu("relu" + std::to_string(i), w));
      in = w;
      ++i;
    }
    layers.push_back(make_dense("fc" + std::to_string(i), in, kImageClasses));
    return layers;
  }
  if (cfg.model == "cnn") {
    // Small LeNet-like net: 8 and 16 5x5 filters keep an epoch affordable on one core.
    layers.push_back(make_conv("conv1", 1, 28, 28, 8, 5, 2));
    layers.push_back(make_relu("relu1", std::int64_t{8} * 28 * 28));
    layers.push_back(make_maxpool2("pool1", 8, 28, 28));
    layers.push_back(make_conv("conv2", 8, 14, 14, 16, 5, 2));
    layers.push_back(make_relu("relu2", std::int64_t{16} * 14 * 14));
    layers.push_back(make_maxpool2("pool2", 16, 14, 14));
    layers.push_back(make_dense("fc1", std::int64_t{16} * 7 * 7, 128));
    layers.push_back(make_relu("relu3", 128));
    layers.push_back(make_dense("fc2", 128, kImageClasses));
    return layers;
  }
  return layers_from_network(cfg.model);
}

}  // namespace dagsgd::runtime
