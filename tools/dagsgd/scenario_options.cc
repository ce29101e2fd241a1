// Turning scenario flags into a sim::PredictRequest: catalogs, compute model, comm model.
#include "scenario_options.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/network.h"
#include "dagsgd/trace/bcaffe_log.h"

namespace dagsgd::tools {

using model::Error;
using model::Expected;

void add_scenario_options(CLI::App& app, ScenarioOptions& o) {
  app.add_option("--network", o.network,
                 "Bundled network name (alexnet, googlenet, resnet50, vgg16, bert-base, ...) or a "
                 "network definition file")
      ->required();
  app.add_option("--batch", o.batch, "Samples per GPU per iteration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--gpu", o.gpu, "GPU from the catalog (k80, p100, v100, a100, h100, h200)")
      ->capture_default_str();
  app.add_option("--nodes", o.nodes, "Number of nodes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--gpus-per-node", o.gpus_per_node, "GPUs (workers) per node")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--intra", o.intra, "Interconnect inside a node (pcie3, nvlink2, ...)")
      ->capture_default_str();
  app.add_option("--inter", o.inter, "Interconnect between nodes (10gbe, ib-edr, ...)")
      ->capture_default_str();
  app.add_option("--algorithm", o.algorithm,
                 "Collective algorithm: ring, tree, recursive_doubling, rabenseifner, ps, asa, "
                 "hier, auto")
      ->capture_default_str();
  app.add_option("--overlap", o.overlap, "none, wfbp, mgwfbp or bucket:MB")->capture_default_str();
  app.add_option("--precision", o.precision,
                 "Gradient precision on the wire and compute: fp32, fp16")
      ->capture_default_str();
  app.add_option("--topk", o.topk, "Send only this fraction of gradient elements (0 = dense)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--sync", o.sync,
                 "bsp, or easgd:TAU,ALPHA (elastic averaging every TAU iterations)")
      ->capture_default_str();
  app.add_option("--step-time", o.step_time,
                 "Measured single-GPU iteration time in seconds; layer times are scaled to it")
      ->check(CLI::PositiveNumber);
  app.add_option("--layer-profile", o.layer_profile,
                 "Per-layer backward profile (B-Caffe log format) for the network's layers")
      ->check(CLI::ExistingFile);
  app.add_option("--fabric-file", o.fabric_file,
                 "Extra fabric definitions (e.g. from 'dagsgd calibrate --out')")
      ->check(CLI::ExistingFile);
  app.add_option("--prefetch", o.prefetch,
                 "Overlap input loading with the previous iteration: on, off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--io-time", o.io_time, "Seconds to read one batch into host memory")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--iterations", o.iterations, "Iterations to simulate (the last is reported)")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
}

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Expected<sim::EasgdConfig> parse_easgd(const std::string& s) {
  // easgd:TAU,ALPHA
  const std::string body = s.substr(6);
  auto comma = body.find(',');
  if (comma == std::string::npos) {
    return Error{"--sync '" + s + "': expected easgd:TAU,ALPHA (e.g. easgd:4,0.5)"};
  }
  char* end = nullptr;
  std::string tau_s = body.substr(0, comma);
  std::string alpha_s = body.substr(comma + 1);
  long tau = std::strtol(tau_s.c_str(), &end, 10);
  if (tau_s.empty() || *end != '\0' || tau < 1 || tau > 1'000'000) {
    return Error{"--sync '" + s + "': TAU must be a positive integer"};
  }
  double alpha = std::strtod(alpha_s.c_str(), &end);
  if (alpha_s.empty() || *end != '\0' || !(alpha > 0 && alpha < 1)) {
    return Error{"--sync '" + s + "': ALPHA must be in (0, 1)"};
  }
  return sim::EasgdConfig{static_cast<int>(tau), alpha};
}

// Backward times of layers with parameters from a B-Caffe profile; parameter-free layers keep
// their FLOPs-model times scaled by the profile's average ratio to the model.
Expected<void> apply_layer_profile(const std::string& path, const model::Network& net,
                                   std::vector<model::LayerTime>& layers) {
  auto profile = trace::read_bcaffe_log(path);
  if (!profile.ok()) return profile.error();
  const auto& tensors = profile->tensors;
  std::size_t next = 0;
  double model_sum = 0;
  double profile_sum = 0;
  std::vector<bool> measured(layers.size(), false);
  for (std::size_t l = 0; l < net.layers.size(); ++l) {
    const auto& layer = net.layers[l];
    if (layer.params.empty()) continue;
    if (next >= tensors.size()) {
      return Error{"layer profile '" + path + "' has " + std::to_string(tensors.size()) +
                   " tensors, but network '" + net.name + "' needs more (layer " +
                   std::to_string(l) + " '" + layer.name + "')"};
    }
    const auto& first = tensors[next];
    for (const auto& p : layer.params) {
      if (next >= tensors.size()) {
        return Error{"layer profile '" + path + "' ends inside layer '" + layer.name + "'"};
      }
      // B-Caffe logs tensor sizes rounded up to a multiple of 64 elements.
      std::int64_t e = p.elements();
      std::int64_t aligned = (e + 63) / 64 * 64;
      if (tensors[next].elements != e && tensors[next].elements != aligned) {
        return Error{"layer profile '" + path + "': tensor " + std::to_string(next) + " has " +
                     std::to_string(tensors[next].elements) + " elements, but layer '" +
                     layer.name + "' " + p.name + " has " + std::to_string(e)};
      }
      ++next;
    }
    model::Nanos b = model::from_micros(first.backward_us);
    model_sum += static_cast<double>(layers[l].backward);
    profile_sum += static_cast<double>(b);
    layers[l].backward = b;
    layers[l].forward = b / 2;  // the profile has no forward times; forward ~ half of backward
    measured[l] = true;
  }
  if (next != tensors.size()) {
    return Error{"layer profile '" + path + "' has " + std::to_string(tensors.size()) +
                 " tensors, but network '" + net.name + "' has " + std::to_string(next)};
  }
  const double k = model_sum > 0 ? profile_sum / model_sum : 1.0;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    if (measured[l]) continue;
    layers[l].forward = std::llround(static_cast<double>(layers[l].forward) * k);
    layers[l].backward = std::llround(static_cast<double>(layers[l].backward) * k);
  }
  return model::ok();
}

}  // namespace

Expected<BuiltScenario> build_scenario(const ScenarioOptions& o) {
  BuiltScenario b;
  auto net = model::load_network(o.network);
  if (!net.ok()) return net.error();
  auto catalog = model::HardwareCatalog::load_default();
  if (!catalog.ok()) return catalog.error();
  if (!o.fabric_file.empty()) DAGSGD_TRY(catalog->add_fabric_file(o.fabric_file));
  auto gpu = catalog->gpu(o.gpu);
  if (!gpu.ok()) return Error{"--gpu: " + gpu.error().message};
  auto intra = catalog->fabric(o.intra);
  if (!intra.ok()) return Error{"--intra: " + intra.error().message};
  auto inter = catalog->fabric(o.inter);
  if (!inter.ok()) return Error{"--inter: " + inter.error().message};
  auto precision = model::parse_precision(o.precision);
  if (!precision.ok()) return Error{"--precision: " + precision.error().message};
  auto overlap = model::parse_overlap(o.overlap);
  if (!overlap.ok()) return Error{"--overlap: " + overlap.error().message};
  auto efficiency = model::load_default_compute_efficiency();
  if (!efficiency.ok()) return efficiency.error();

  sim::PredictRequest& r = b.request;
  r.batch = o.batch;
  r.iterations = o.iterations;
  r.prefetch = o.prefetch == "on";
  r.overlap = *overlap;
  r.exchange.algorithm = o.algorithm;
  r.exchange.precision = *precision;
  r.exchange.topk = o.topk;
  if (o.sync != "bsp") {
    if (o.sync.rfind("easgd:", 0) != 0) {
      return Error{"--sync '" + o.sync + "': expected bsp or easgd:TAU,ALPHA"};
    }
    auto e = parse_easgd(o.sync);
    if (!e.ok()) return e.error();
    r.easgd = *e;
  }
  r.topology.nodes = o.nodes;
  r.topology.gpus_per_node = o.gpus_per_node;
  r.topology.intra = model::LinkCost::from_fabric(*intra);
  r.topology.inter = model::LinkCost::from_fabric(*inter);

  const double peak = *precision == model::Precision::kFp16 ? gpu->fp16_flops : gpu->fp32_flops;
  const double rate = peak * efficiency->for_precision(*precision);
  r.layers = model::layer_times_from_flops(*net, o.batch, rate);
  r.update = model::update_time(net->param_elements(), gpu->memory_bandwidth);
  r.h2d = model::h2d_time(*net, o.batch, intra->achievable_bandwidth);
  r.io = model::from_seconds(o.io_time);
  std::string compute_source = "FLOPs at " + num(100 * efficiency->for_precision(*precision)) +
                               "% of " + gpu->name + " peak";
  if (!o.layer_profile.empty()) {
    DAGSGD_TRY(apply_layer_profile(o.layer_profile, *net, r.layers));
    compute_source = "layer profile " + o.layer_profile;
  }
  if (o.step_time > 0) {
    auto s = model::scale_to_step_time(r.layers, r.update, model::from_seconds(o.step_time));
    if (!s.ok()) return Error{"--step-time: " + s.error().message};
    compute_source += ", scaled to a " + num(o.step_time) + " s step";
  }

  b.description = {
      {"network", net->name + " (" + num(static_cast<double>(net->param_elements()) / 1e6) +
                      "M parameters, " + std::to_string(net->layers.size()) + " layers)"},
      {"batch per GPU", std::to_string(o.batch)},
      {"gpu", gpu->name},
      {"workers", std::to_string(o.nodes * o.gpus_per_node) + " (" + std::to_string(o.nodes) +
                      " nodes x " + std::to_string(o.gpus_per_node) + " GPUs)"},
      {"intra-node", intra->name},
      {"inter-node", inter->name},
      {"algorithm", o.algorithm},
      {"overlap", overlap->name()},
      {"precision", o.precision},
      {"topk", num(o.topk)},
      {"sync", o.sync},
      {"prefetch", o.prefetch},
      {"compute", compute_source},
  };
  return b;
}

}  // namespace dagsgd::tools
