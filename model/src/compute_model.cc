// Layer times from FLOPs and achieved efficiency, or rescaled to a measured step time.
#include "dagsgd/model/compute_model.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::model {

Expected<ComputeEfficiency> load_compute_efficiency(const std::string& path) {
  auto text = read_file(path);
  if (!text.ok()) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  const std::string where = "compute efficiency '" + path + "'";
  if (j.is_discarded() || !j.is_object() || !j.contains("rows") || !j["rows"].is_array()) {
    return Error{where + ": expected an object with a 'rows' list"};
  }
  ComputeEfficiency e;
  std::size_t i = 0;
  for (const auto& row : j["rows"]) {
    const std::string at = where + ": row " + std::to_string(i++);
    if (!row.is_object() || !row.contains("precision") || !row["precision"].is_string() ||
        !row.contains("efficiency") || !row["efficiency"].is_number()) {
      return Error{at + ": needs 'precision' (string) and 'efficiency' (number)"};
    }
    double v = row["efficiency"].get<double>();
    if (!(v > 0 && v <= 1)) return Error{at + ": 'efficiency' must be in (0, 1]"};
    auto p = parse_precision(row["precision"].get<std::string>());
    if (!p.ok()) return with_context(at, p.error());
    (*p == Precision::kFp16 ? e.fp16 : e.fp32) = v;
  }
  if (e.fp32 == 0 || e.fp16 == 0) return Error{where + ": needs rows for fp32 and fp16"};
  return e;
}

Expected<ComputeEfficiency> load_default_compute_efficiency() {
  return load_compute_efficiency(data_path("hardware/compute_efficiency.json"));
}

std::vector<LayerTime> layer_times_from_flops(const Network& net, int batch, double flops_per_s) {
  std::vector<LayerTime> out;
  out.reserve(net.layers.size());
  for (const auto& l : net.layers) {
    double fwd = l.forward_flops * batch / flops_per_s;
    out.push_back(LayerTime{from_seconds(fwd), from_seconds(fwd * kBackwardToForwardFlops),
                            l.param_elements()});
  }
  return out;
}

Nanos update_time(std::int64_t params, double memory_bandwidth) {
  return from_seconds(static_cast<double>(params) * kUpdateBytesPerParam / memory_bandwidth);
}

Nanos h2d_time(const Network& net, int batch, double bandwidth) {
  double elements = 1;
  for (auto d : net.input_shape) elements *= static_cast<double>(d);
  return from_seconds(elements * 4.0 * batch / bandwidth);
}

Expected<void> scale_to_step_time(std::vector<LayerTime>& layers, Nanos update, Nanos step) {
  Nanos compute = 0;
  for (const auto& l : layers) compute += l.forward + l.backward;
  if (step <= update) {
    return Error{"the step time (" + std::to_string(to_seconds(step)) +
                 " s) must exceed the modeled update time (" + std::to_string(to_seconds(update)) +
                 " s)"};
  }
  if (compute <= 0) return Error{"the network has no compute to scale to a step time"};
  const double k = static_cast<double>(step - update) / static_cast<double>(compute);
  for (auto& l : layers) {
    l.forward = std::llround(static_cast<double>(l.forward) * k);
    l.backward = std::llround(static_cast<double>(l.backward) * k);
  }
  return ok();
}

}  // namespace dagsgd::model
