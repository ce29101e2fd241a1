// Resolving scenarios and workloads (scenario.h): names checked against the catalogs once, the
// compute model and calibration of a network workload, a traced run per scenario (its replay's
// options and result in scenario_replay.cc).
#include "dagsgd/sim/scenario.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "dagsgd/model/format.h"
#include "dagsgd/model/job_effects.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;

model::Expected<Catalogs> Catalogs::load(const std::vector<std::string>& fabric_files) {
  auto hardware = model::HardwareCatalog::load_default();
  if (!hardware) return hardware.error();
  for (const auto& f : fabric_files) DAGSGD_TRY(hardware->add_fabric_file(f));
  auto efficiency = model::load_default_compute_efficiency();
  if (!efficiency) return efficiency.error();
  return Catalogs{std::move(*hardware), *efficiency};
}

model::Topology Hardware::topology() const {
  model::Topology t;
  t.nodes = nodes;
  t.gpus_per_node = gpus_per_node;
  t.intra = model::LinkCost::from_fabric(intra);
  t.inter = model::LinkCost::from_fabric(inter);
  return t;
}

namespace {

// The cluster the flow-level tier runs on, when the spec asks for that tier.
Expected<std::shared_ptr<const ClusterTopology>> resolve_cluster(const HardwareSpec& spec,
                                                                 Hardware& h) {
  const std::string& m = spec.network_model;
  if (m != "auto" && m != "analytic" && m != "flow") {
    return Error{"unknown network model '" + m + "'; valid network models: auto, analytic, flow"};
  }
  // A shaped inter-node fabric (burst_bytes) is priced by the flow tier only: auto picks it.
  const bool shaped = h.inter.burst_bytes > 0 && h.nodes > 1;
  const bool flow = m == "flow" || (m == "auto" && (!spec.topology.empty() || shaped));
  if (!flow) {
    if (!spec.topology.empty()) {
      return Error{"the analytical network model does not use a topology ('" + spec.topology +
                   "'); use the flow model"};
    }
    // An option that would change nothing is refused, not silently ignored.
    if (spec.cluster_network != "single-switch") {
      return Error{"the analytical network model does not use a cluster network ('" +
                   spec.cluster_network +
                   "': it prices one switch); give a topology or use the flow model"};
    }
    return std::shared_ptr<const ClusterTopology>();
  }
  NodeType node;
  if (spec.topology.empty()) {
    // The plain two-fabric cluster the analytical formulas assume.
    node = uniform_node_type(h.gpus_per_node, model::link_capacity(h.intra), h.intra.latency);
  } else {
    auto loaded = load_node_type(spec.topology);
    if (!loaded) return model::with_context("topology", loaded.error());
    node = std::move(*loaded);
    const int g = node.gpus_per_node();
    if (h.gpus_per_node != g && !(h.nodes == 1 && h.gpus_per_node < g)) {
      return Error{"topology '" + node.name + "' has " + std::to_string(g) +
                   " GPUs per node, not " + std::to_string(h.gpus_per_node)};
    }
  }
  auto net = parse_network_spec(spec.cluster_network);
  if (!net) return net.error();
  DAGSGD_TRY(set_network_fabric(*net, h.inter));
  auto cluster = ClusterTopology::build(node, h.nodes, *net);
  if (!cluster) return model::with_context("topology", cluster.error());
  return std::shared_ptr<const ClusterTopology>(
      std::make_shared<ClusterTopology>(std::move(*cluster)));
}

}  // namespace

Expected<Hardware> resolve_hardware(const HardwareSpec& spec, const Catalogs& catalogs) {
  if (spec.nodes < 1) return Error{"nodes: at least 1 (got " + std::to_string(spec.nodes) + ")"};
  if (spec.gpus_per_node < 1) {
    return Error{"GPUs per node: at least 1 (got " + std::to_string(spec.gpus_per_node) + ")"};
  }
  Hardware h;
  h.nodes = spec.nodes;
  h.gpus_per_node = spec.gpus_per_node;
  auto intra = catalogs.hardware.fabric(spec.intra);
  if (!intra) return model::with_context("intra-node fabric", intra.error());
  auto inter = catalogs.hardware.fabric(spec.inter);
  if (!inter) return model::with_context("inter-node fabric", inter.error());
  h.intra = std::move(*intra);
  h.inter = std::move(*inter);
  auto cluster = resolve_cluster(spec, h);
  if (!cluster) return cluster.error();
  h.cluster = std::move(*cluster);
  return h;
}

bool stack_groups_gradients(const std::string& stack) {
  if (stack.empty()) return false;
  auto s = model::load_stack(stack);
  return s && s->framework && !s->framework->grouping.empty();
}

Expected<Exchange> resolve_exchange(const ExchangeSpec& spec) {
  Exchange e;
  DAGSGD_TRY(model::collective_algorithms().check(spec.algorithm));
  e.algorithm = spec.algorithm;
  if (!spec.stack.empty()) {
    auto stack = model::load_stack(spec.stack);
    if (!stack) return stack.error();
    if (spec.algorithm == model::kMeasuredAlgorithm) {
      return Error{"algorithm 'measured' uses a fabric's measured curve, stack '" + stack->name +
                   "' models the library itself: use auto or a formula with --stack"};
    }
    e.stack = std::make_shared<const model::StackSpec>(std::move(*stack));
  }
  std::string overlap_name = spec.overlap;
  if (overlap_name == kFrameworkOverlap) {
    if (!e.stack || !e.stack->framework || e.stack->framework->grouping.empty()) {
      return Error{
          "overlap 'framework' takes the gradient grouping of a stack's framework; " +
          (e.stack ? "stack '" + e.stack->name + "' sets none" : std::string("no stack given"))};
    }
    overlap_name = e.stack->framework->grouping;
  }
  auto overlap = model::parse_overlap(overlap_name);
  if (!overlap) return overlap.error();
  e.overlap = *overlap;
  auto precision = model::parse_precision(spec.precision);
  if (!precision) return precision.error();
  e.precision = *precision;
  e.precision_name = spec.precision;
  if (!(spec.topk >= 0 && spec.topk <= 1)) {
    return Error{"top-k fraction must be in [0, 1] (got " + model::num(spec.topk) + ")"};
  }
  e.topk = spec.topk;
  auto sharding = model::parse_sharding(spec.sharding);
  if (!sharding) return sharding.error();
  e.sharding = *sharding;
  if (e.sharding != model::Sharding::kNone && e.topk > 0) {
    return Error{"sharding '" + spec.sharding +
                 "' reduce-scatters dense gradients: it does not combine with top-k"};
  }
  return e;
}

Expected<Scenario> resolve_scenario(const HardwareSpec& hardware, const ExchangeSpec& exchange,
                                    const Catalogs& catalogs) {
  auto h = resolve_hardware(hardware, catalogs);
  if (!h) return h.error();
  auto e = resolve_exchange(exchange);
  if (!e) return e.error();
  return Scenario{std::move(*h), std::move(*e)};
}

Expected<std::optional<EasgdConfig>> parse_sync(const std::string& s) {
  if (s == "bsp") return std::optional<EasgdConfig>();
  if (s.rfind("easgd:", 0) != 0) return Error{"sync '" + s + "': expected bsp or easgd:TAU,ALPHA"};
  const std::string body = s.substr(6);
  auto comma = body.find(',');
  if (comma == std::string::npos) {
    return Error{"sync '" + s + "': expected easgd:TAU,ALPHA (e.g. easgd:4,0.5)"};
  }
  char* end = nullptr;
  std::string tau_s = body.substr(0, comma);
  std::string alpha_s = body.substr(comma + 1);
  long tau = std::strtol(tau_s.c_str(), &end, 10);
  if (tau_s.empty() || *end != '\0' || tau < 1 || tau > 1'000'000) {
    return Error{"sync '" + s + "': TAU must be a positive integer"};
  }
  double alpha = std::strtod(alpha_s.c_str(), &end);
  if (alpha_s.empty() || *end != '\0' || !(alpha > 0 && alpha < 1)) {
    return Error{"sync '" + s + "': ALPHA must be in (0, 1)"};
  }
  return std::optional<EasgdConfig>(EasgdConfig{static_cast<int>(tau), alpha});
}

// ---------------------------------------------------------------------------------------------
// Network workloads

namespace {

// Backward times of layers with parameters from a B-Caffe profile; parameter-free layers keep
// their FLOPs-model times scaled by the profile's average ratio to the model.
Expected<void> apply_layer_profile(const trace::BcaffeLog& profile, const std::string& path,
                                   const model::Network& net,
                                   std::vector<model::LayerTime>& layers) {
  const auto& tensors = profile.tensors;
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

Expected<std::unique_ptr<NetworkWorkload>> NetworkWorkload::resolve(const NetworkSpec& spec,
                                                                    const Catalogs& catalogs) {
  std::unique_ptr<NetworkWorkload> w(new NetworkWorkload());
  w->spec_ = spec;
  auto net = model::load_network(spec.network);
  if (!net) return net.error();
  w->network_ = std::move(*net);
  auto gpu = catalogs.hardware.gpu(spec.gpu);
  if (!gpu) return model::with_context("gpu", gpu.error());
  w->gpu_ = std::move(*gpu);
  w->efficiency_ = catalogs.efficiency;
  if (spec.batch < 1) return Error{"batch: at least 1 sample per GPU"};
  if (spec.iterations < 2) return Error{"simulate at least 2 iterations"};
  auto sync = parse_sync(spec.sync);
  if (!sync) return sync.error();
  w->easgd_ = *sync;
  if (!spec.layer_profile.empty()) {
    auto profile = trace::read_bcaffe_log(spec.layer_profile);
    if (!profile) return profile.error();
    w->profile_ = std::move(*profile);
  }
  DAGSGD_TRY(w->resolve_effects());
  return w;
}

// The compute noise: the flag's, else the effects file's, else for a GPU the bundled
// measurement; the interference: the effects file's, else for a GPU the bundled one. A CPU node
// gets only what was measured for it (docs/gpu-effects.md).
Expected<void> NetworkWorkload::resolve_effects() {
  auto off = model::parse_effects_off(spec_.effects_off);
  if (!off) return model::with_context("effects switched off", off.error());
  std::optional<model::JobEffects> file;
  if (!spec_.effects_file.empty()) {
    auto loaded = model::load_job_effects(spec_.effects_file);
    if (!loaded) return loaded.error();
    file = std::move(*loaded);
  }
  std::optional<model::JobEffects> bundled;
  if (!gpu_.cpu) {
    auto loaded = model::load_default_job_effects();
    if (!loaded) return loaded.error();
    bundled = std::move(*loaded);
  }
  // One effect's measurement: the effects file's, else the bundled one (the value is kept where
  // the bundle lacks it).
  auto measured = [&](auto of, double& value, std::string& from) {
    if (file && of(*file)) {
      value = *of(*file);
      from = "measured in " + spec_.effects_file;
    } else if (bundled) {
      if (of(*bundled)) value = *of(*bundled);
      from = "measured on real traces, datasets/hardware/job_effects.json";
    }
  };
  if (spec_.noise_cv >= 0) {
    if (!(spec_.noise_cv <= 1)) return Error{"noise cv: must be from 0 to 1"};
    noise_cv_ = spec_.noise_cv;
    noise_from_ = "given";
  } else {
    measured(
        [](const model::JobEffects& e) {
          return e.noise ? std::optional(e.noise->iteration_cv) : std::nullopt;
        },
        noise_cv_, noise_from_);
  }
  measured(
      [](const model::JobEffects& e) {
        return e.interference ? std::optional(e.interference->compute_slowdown) : std::nullopt;
      },
      compute_slowdown_, interference_from_);
  if (!off->stragglers) {
    noise_cv_ = 0;
    noise_from_ = "switched off";
  }
  if (!off->interference) {
    compute_slowdown_ = 1;
    interference_from_ = "switched off";
  }
  return model::ok();
}

Expected<PredictRequest> NetworkWorkload::request(const Scenario& s) const {
  PredictRequest r;
  const model::Precision precision = s.exchange.precision;
  r.batch = spec_.batch;
  r.iterations = spec_.iterations;
  r.prefetch = spec_.prefetch;
  r.overlap = s.exchange.overlap;
  r.exchange.algorithm = s.exchange.algorithm;
  r.exchange.precision = precision;
  r.exchange.topk = s.exchange.topk;
  r.exchange.stack = s.exchange.stack;
  r.easgd = easgd_;
  r.sharding = s.exchange.sharding;
  if (r.sharding != model::Sharding::kNone && easgd_) {
    return model::Error{"sharding '" + std::string(model::sharding_name(r.sharding)) +
                        "' needs --sync bsp"};
  }
  // What forward keeps for backward: each layer's output, per sample, in the compute precision.
  r.activation_bytes = model::activation_bytes(network_, spec_.batch, precision);
  r.gpu_memory = gpu_.memory_bytes;
  r.noise_cv = noise_cv_;
  r.compute_slowdown = compute_slowdown_;
  // Framework copies: what the stack's framework copies around its buckets, on a GPU.
  const auto effects = model::parse_effects_off(spec_.effects_off);  // checked by resolve
  const auto* framework =
      s.exchange.stack && s.exchange.stack->framework ? &*s.exchange.stack->framework : nullptr;
  if (framework != nullptr && !gpu_.cpu && effects.ok() && effects->copies) {
    r.copy_in_bytes = framework->copy_in_bytes;
    r.copy_back_bytes = framework->copy_back_bytes;
    r.memory_bandwidth = gpu_.memory_bandwidth;
  }
  r.topology = s.hardware.topology();
  r.cluster = s.hardware.cluster;
  const double peak = precision == model::Precision::kFp16 ? gpu_.fp16_flops : gpu_.fp32_flops;
  const double rate = peak * efficiency_.for_precision(precision);
  r.layers = model::layer_times_from_flops(network_, spec_.batch, rate);
  r.update = model::update_time(network_.param_elements(), gpu_.memory_bandwidth);
  r.h2d = model::h2d_time(network_, spec_.batch, s.hardware.intra.achievable_bandwidth);
  auto io = model::duration_ns(spec_.io_time_s, 1e9, "io time");
  if (!io) return io.error();
  r.io = *io;
  if (spec_.input_rate != 0) {  // NaN included: an error below
    if (!(spec_.input_rate > 0)) return model::Error{"input rate must be > 0 samples/s"};
    // The node's pipeline feeds its GPUs together: each gets its share of the rate.
    const double per_gpu_s =
        static_cast<double>(spec_.batch) * s.hardware.gpus_per_node / spec_.input_rate;
    auto pipeline =
        model::duration_ns(per_gpu_s, 1e9, "input time (batch x GPUs per node / input rate)");
    if (!pipeline) return pipeline.error();
    r.io = std::max(r.io, *pipeline);
  }
  if (profile_) DAGSGD_TRY(apply_layer_profile(*profile_, spec_.layer_profile, network_, r.layers));
  if (spec_.step_time_s != 0) {  // NaN included: an error below, not "no step time"
    auto step = model::duration_ns(spec_.step_time_s, 1e9, "step time");
    if (!step) return step.error();
    auto scaled = model::scale_to_step_time(r.layers, r.update, *step);
    if (!scaled) return model::with_context("step time", scaled.error());
  }
  return r;
}

Expected<void> NetworkWorkload::check(const Scenario& s) const {
  auto r = request(s);
  if (!r) return r.error();
  // The DAG's size and times before a sweep spends memory on it; the gradient groups come
  // from the cost model later (simulate checks again with them).
  model::SsgdConfig c;
  c.layers = r->layers;
  c.workers = s.hardware.workers();
  c.iterations = r->iterations;
  c.io = r->io;
  c.h2d = r->h2d;
  c.update = r->update;
  return model::check_ssgd_config(c);
}

Expected<PredictResult> NetworkWorkload::evaluate(const Scenario& s, bool keep_timeline) const {
  auto r = request(s);
  if (!r) return r.error();
  r->keep_timeline = keep_timeline;
  return predict(*r);
}

Description NetworkWorkload::describe(const Scenario& s) const {
  using model::num;
  const double efficiency = efficiency_.for_precision(s.exchange.precision);
  std::string compute = "FLOPs at " + num(100 * efficiency) + "% of " + gpu_.name + " peak";
  if (profile_) compute = "layer profile " + spec_.layer_profile;
  if (spec_.step_time_s > 0) compute += ", scaled to a " + num(spec_.step_time_s) + " s step";
  const Hardware& h = s.hardware;
  Description d = {
      {"network", network_.name + " (" + num(static_cast<double>(network_.param_elements()) / 1e6) +
                      "M parameters, " + std::to_string(network_.layers.size()) + " layers)"},
      {"batch per GPU", std::to_string(spec_.batch)},
      {"gpu", gpu_.name},
      {"workers", std::to_string(h.workers()) + " (" + std::to_string(h.nodes) + " nodes x " +
                      std::to_string(h.gpus_per_node) + " GPUs)"},
      {"intra-node", h.intra.name},
      {"inter-node", h.inter.name},
      {"algorithm", s.exchange.algorithm},
      {"overlap", s.exchange.overlap.name()},
      {"precision", s.exchange.precision_name},
      {"topk", num(s.exchange.topk)},
      {"sync", spec_.sync},
      {"prefetch", spec_.prefetch ? "on" : "off"},
      {"compute", compute},
  };
  if (noise_cv_ > 0) {
    d.push_back({"stragglers", "per-rank compute cv " + model::fmt("%.2f%%", 100 * noise_cv_) +
                                   " (" + noise_from_ + ")"});
  } else if (!noise_from_.empty()) {
    d.push_back({"stragglers", noise_from_ == "given" ? "none (cv 0)" : noise_from_});
  }
  if (compute_slowdown_ > 1) {
    d.push_back({"interference", "compute x" + model::fmt("%.3f", compute_slowdown_) +
                                     " beside collectives in flight (" + interference_from_ + ")"});
  } else if (!interference_from_.empty()) {
    d.push_back({"interference", interference_from_});
  }
  if (auto r = request(s); r && r->memory_bandwidth > 0) {
    d.push_back({"framework copies", num(r->copy_in_bytes) + " + " + num(r->copy_back_bytes) +
                                         " bytes per gradient element at " +
                                         num(r->memory_bandwidth / 1e9) + " GB/s"});
  }
  if (s.exchange.sharding != model::Sharding::kNone) {
    d.push_back({"sharding", std::string(model::sharding_name(s.exchange.sharding)) +
                                 (model::shards_parameters(s.exchange.sharding)
                                      ? " (parameters, gradients and optimizer state sharded)"
                                  : model::shards_gradients(s.exchange.sharding)
                                      ? " (gradients and optimizer state sharded)"
                                      : " (optimizer state sharded)")});
  }
  if (spec_.input_rate > 0) {
    d.push_back({"input", "at most " + num(spec_.input_rate) + " samples/s per node (" +
                              num(spec_.input_rate / h.gpus_per_node) + " per GPU)"});
  }
  if (s.exchange.stack) {
    const model::StackSpec& st = *s.exchange.stack;
    std::string what = st.name + " (" + st.library.name;
    if (st.framework) what += "; " + st.framework->name;
    d.insert(d.begin() + 7, {"stack", what + ")"});
  }
  if (h.cluster) {
    const auto& c = *h.cluster;
    d.insert(d.begin() + 6,
             {{"topology", c.node_type().name + " x " + std::to_string(c.nodes()) + ", " +
                               network_kind_name(c.network().kind) + " of " + c.network().fabric},
              {"network model", "flow (transfers share the topology's links)"}});
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// Traced workloads

Expected<std::unique_ptr<TracedWorkload>> TracedWorkload::load(
    const std::vector<std::string>& paths, const trace::ImportOptions& options, int batch) {
  std::unique_ptr<TracedWorkload> w(new TracedWorkload());
  auto run = trace::import_run(paths, options);
  if (!run) return run.error();
  w->run_ = std::move(*run);
  auto dag = trace::build_trace_dag(w->run_);
  if (!dag) return dag.error();
  w->dag_ = std::move(*dag);
  const std::string where = "run '" + w->run_.path + "'";
  auto recorded = w->run_.manifest ? trace::recorded_batch(*w->run_.manifest)
                                   : Expected<std::optional<int>>(std::nullopt);
  if (batch > 0) {
    w->batch_ = batch;
  } else if (!recorded) {
    w->batch_problem_ = where + ": " + recorded.error().message;
  } else if (*recorded) {
    w->batch_ = **recorded;
  } else {
    w->batch_problem_ = where + " does not record its batch size (samples per rank per iteration)";
  }
  return w;
}

int TracedWorkload::traced_world() const { return run_topology(dag_).workers(); }

bool TracedWorkload::scales(const Scenario& s) const {
  const int n = s.hardware.workers();
  return n != dag_.ranks && n != traced_world();
}

ReplayOptions TracedWorkload::options_for(const Scenario& s) const {
  ReplayOptions ro = replay_options(s);
  if (scales(s)) ro.world = s.hardware.workers();
  return ro;
}

Expected<void> TracedWorkload::check(const Scenario& s) const {
  if (batch_ == 0) return Error{batch_problem_};
  if (!scales(s)) return model::ok();
  return check_scale(dag_, options_for(s));
}

Expected<PredictResult> TracedWorkload::evaluate(const Scenario& s, bool keep_timeline) const {
  auto r = replay_trace(dag_, options_for(s));
  if (!r) return r.error();
  // The scenario's GPUs run the job; the default grid (the trace's own ranks) keeps its count.
  return replay_as_prediction(dag_, *r, batch_, keep_timeline, s.hardware.workers());
}

Description TracedWorkload::describe(const Scenario& s) const {
  Description w;
  w.emplace_back("traced run", run_.path + " (" + trace::run_source_name(run_.source) + ")");
  w.emplace_back("ranks", std::to_string(dag_.ranks));
  if (run_.manifest) {
    const auto& m = *run_.manifest;
    if (!m.model.empty()) w.emplace_back("model", m.model);
    for (const char* k : {"exchange", "overlap", "precision", "topk", "sync"}) {
      if (m.config.count(k) != 0) w.emplace_back(k, m.config.at(k));
    }
    if (m.iterations.mean_s > 0)
      w.emplace_back("measured iteration", model::fmt("%.3f ms", m.iterations.mean_s * 1e3));
  }
  w.emplace_back("batch per rank", std::to_string(batch_));
  if (s.exchange.stack) w.emplace_back("stack", s.exchange.stack->name);
  // Scaled, the larger counts fill nodes of the grid's GPUs per node (the first point's may be
  // one partly filled node).
  const bool scaled = !scaled_counts_.empty();
  w.emplace_back("GPUs per node",
                 std::to_string(scaled ? scaled_gpus_per_node_ : s.hardware.gpus_per_node));
  w.emplace_back("compute", "as traced (replayed by 'dagsgd replay' on each target fabric)");
  if (scaled) w.emplace_back("scaled", scale_note(traced_world(), scaled_counts_));
  return w;
}

}  // namespace dagsgd::sim
