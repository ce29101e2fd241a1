// The layer stacks `dagsgd train` can run on Fashion-MNIST (28x28 grey images, 10 classes):
// the built-in mlp and cnn, or a network-spec file of fc and relu layers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/layers.h"
#include "dagsgd/runtime/train_config.h"

namespace dagsgd::runtime {

inline constexpr std::int64_t kImageInputs = std::int64_t{28} * 28;
inline constexpr int kImageClasses = 10;

// The layers of `cfg.model`: "mlp" (fc+relu with cfg.widths), "cnn" (two conv+relu+pool blocks,
// then fc+relu+fc), or a network-spec file whose layers are fc and relu only.
model::Expected<std::vector<std::unique_ptr<Layer>>> build_model(const TrainConfig& cfg);

// The fc layers of an fc/relu stack for --device cuda, which fuses each ReLU into the fc before
// it: a ReLU must follow every fc but the last. Errors name `model`.
model::Expected<std::vector<std::unique_ptr<Layer>>> fc_layers_for_device(
    std::vector<std::unique_ptr<Layer>> all, const std::string& model);

}  // namespace dagsgd::runtime
