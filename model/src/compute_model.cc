// Layer times from FLOPs and achieved efficiency, or rescaled to a measured step time.
#include "dagsgd/model/compute_model.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::model {

namespace {

// A tenth of a percent of peak: below it a row is a typo, and FLOPs over the rate stay finite.
constexpr double kMinEfficiency = 1e-3;

std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

double input_bytes(const Network& net, int batch) {
  double elements = 1;
  for (auto d : net.input_shape) elements *= static_cast<double>(d);
  return elements * 4.0 * batch;
}

Expected<void> check_rate(double rate, const char* what) {
  if (!(rate > 0) || !std::isfinite(rate)) {
    return Error{std::string(what) + " must be positive and finite"};
  }
  return ok();
}

}  // namespace

Expected<ComputeEfficiency> load_compute_efficiency(const std::string& path) {
  auto text = read_file(path, kMaxDocumentBytes);
  if (!text.ok()) return text.error();
  return parse_compute_efficiency(*text, path);
}

Expected<ComputeEfficiency> parse_compute_efficiency(const std::string& text,
                                                     const std::string& path) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  const std::string where = "compute efficiency '" + path + "'";
  if (j.is_discarded()) return Error{where + ": not valid JSON: " + json_syntax_error(text)};
  if (!j.is_object() || !j.contains("rows") || !j["rows"].is_array()) {
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
    if (!(v >= kMinEfficiency && v <= 1)) {
      return Error{at + ": 'efficiency' must be from 0.001 to 1, got " + row["efficiency"].dump()};
    }
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

Expected<WorkerTimes> worker_times(const Network& net, int batch, double flops_per_s,
                                   double memory_bandwidth, double h2d_bandwidth) {
  if (batch < 1) return Error{"the batch size must be at least 1, got " + std::to_string(batch)};
  DAGSGD_TRY(check_rate(flops_per_s, "the compute rate (FLOP/s)"));
  DAGSGD_TRY(check_rate(memory_bandwidth, "the memory bandwidth"));
  DAGSGD_TRY(check_rate(h2d_bandwidth, "the host-to-device bandwidth"));
  WorkerTimes w;
  w.layers.reserve(net.layers.size());
  double total = 0;  // ns: forward + backward of every layer, and the update
  const std::string at = "network '" + net.name + "' at batch " + std::to_string(batch);
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    const double fwd_s = l.forward_flops * batch / flops_per_s;
    const std::string layer = at + ": layer " + std::to_string(i) + " '" + l.name + "'";
    auto fwd = duration_ns(fwd_s, 1e9,
                           layer + ": forward (" + g(l.forward_flops) + " FLOPs per sample at " +
                               g(flops_per_s) + " FLOP/s)");
    DAGSGD_TRY(fwd);
    auto bwd = duration_ns(fwd_s * kBackwardToForwardFlops, 1e9, layer + ": backward");
    DAGSGD_TRY(bwd);
    total += static_cast<double>(*fwd) + static_cast<double>(*bwd);
    w.layers.push_back(LayerTime{*fwd, *bwd, l.param_elements()});
  }
  auto update = duration_ns(
      static_cast<double>(net.param_elements()) * kUpdateBytesPerParam / memory_bandwidth, 1e9,
      at + ": the parameter update");
  DAGSGD_TRY(update);
  w.update = *update;
  total += static_cast<double>(w.update);
  DAGSGD_TRY(duration_ns(total, at + ": forward + backward + update"));
  auto h2d = duration_ns(input_bytes(net, batch) / h2d_bandwidth, 1e9,
                         at + ": the host-to-device copy of the input");
  DAGSGD_TRY(h2d);
  w.h2d = *h2d;
  return w;
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
  return from_seconds(input_bytes(net, batch) / bandwidth);
}

Expected<void> scale_to_step_time(std::vector<LayerTime>& layers, Nanos update, Nanos step) {
  DAGSGD_TRY(duration_ns(static_cast<double>(step), "the step time"));
  // In double: unchecked layer times may be saturated, and their int64 sum would overflow.
  double compute_ns = 0;
  for (const auto& l : layers) {
    compute_ns += static_cast<double>(l.forward) + static_cast<double>(l.backward);
  }
  DAGSGD_TRY(duration_ns(compute_ns, "the layers' forward + backward"));
  const auto compute = static_cast<Nanos>(compute_ns);
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
