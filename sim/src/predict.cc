// predict: one DAG per scenario (the job, one GPU, free comm, 2x bandwidth), every worker
// simulated, each in the compact form through one engine.
#include "dagsgd/sim/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "dagsgd/model/check.h"
#include "dagsgd/model/collective_flows.h"
#include "dagsgd/model/format.h"
#include "dagsgd/model/job_effects.h"
#include "dagsgd/sim/engine.h"
#include "dagsgd/sim/flow_network.h"
#include "intervals.h"
#include "sharded.h"

namespace dagsgd::sim {

using model::Nanos;
using model::percent;
using model::times_faster;

namespace {

struct Run {
  IterationAnalysis analysis;
  std::vector<model::GradientGroup> groups;
  std::size_t tasks = 0;
  std::uint64_t events = 0;
  std::vector<TimelineSpan> timeline;
  std::vector<LinkUse> links;
  Nanos interference = 0;   // compute added beside collectives in flight, one worker
  detail::ShardCost shard;  // sharded data parallelism's gathers
};

// The flow-level tier of one simulation: the collectives' transfers and the links' speed.
struct FlowTier {
  const model::CollectiveFlows* flows = nullptr;
  std::shared_ptr<const ClusterTopology> cluster;
  double bandwidth_scale = 1;
};

// Forward and backward times times `factor` (the expected slowest rank's over the mean): before
// the groups are made, since bucketing and fusion follow backward's timing.
void scale_compute(std::vector<model::LayerTime>& layers, double factor) {
  if (factor == 1) return;
  for (auto& l : layers) {
    l.forward = std::llround(static_cast<double>(l.forward) * factor);
    l.backward = std::llround(static_cast<double>(l.backward) * factor);
  }
}

// The expected slowest worker's compute over the mean. Under EASGD the workers meet every tau
// iterations: the slowest of the sums of tau draws (std cv sqrt(tau)) is waited for once per
// tau iterations, so each iteration pays cv / sqrt(tau) of it.
double straggler_factor(const PredictRequest& req, int workers) {
  const double tau = req.easgd ? req.easgd->tau : 1;
  return model::straggler_factor(req.noise_cv / std::sqrt(tau), workers);
}

// Time to move `bytes` through GPU memory at the request's memory bandwidth.
Nanos memory_time(double bytes, const PredictRequest& req) {
  return std::llround(bytes / req.memory_bandwidth * 1e9);
}

// Framework copies on the compute stream: each gradient into its bucket as its backward ends,
// the reduced buckets back into the gradients after the collectives, before the update.
void add_copies(std::vector<model::LayerTime>& layers, Nanos& update, const PredictRequest& req) {
  if (req.memory_bandwidth <= 0) return;
  std::int64_t elements = 0;
  for (auto& l : layers) {
    l.backward += memory_time(static_cast<double>(l.param_elements) * req.copy_in_bytes, req);
    elements += l.param_elements;
  }
  update += memory_time(static_cast<double>(elements) * req.copy_back_bytes, req);
}

// The effects that are on and what each adds to a worker's iteration compute.
std::vector<EffectCost> effect_costs(const PredictRequest& req, int workers) {
  std::vector<EffectCost> out;
  if (req.noise_cv > 0 && workers > 1) {
    std::vector<model::LayerTime> scaled = req.layers;
    const double factor = straggler_factor(req, workers);
    scale_compute(scaled, factor);
    Nanos added = 0;
    for (std::size_t l = 0; l < scaled.size(); ++l) {
      added +=
          scaled[l].forward + scaled[l].backward - req.layers[l].forward - req.layers[l].backward;
    }
    out.push_back({"stragglers", added,
                   "the slowest of " + std::to_string(workers) + " ranks at compute cv " +
                       model::fmt("%.2f%%", 100 * req.noise_cv) + ": forward and backward x" +
                       model::fmt("%.4f", factor)});
  }
  if (req.memory_bandwidth > 0 && workers > 1 && req.copy_in_bytes + req.copy_back_bytes > 0) {
    std::vector<model::LayerTime> copied = req.layers;
    Nanos update = 0;
    add_copies(copied, update, req);
    Nanos added = update;
    for (std::size_t l = 0; l < copied.size(); ++l) {
      added += copied[l].backward - req.layers[l].backward;
    }
    out.push_back({"copies", added,
                   "gradients into the buckets and back, " + model::num(req.copy_in_bytes) + " + " +
                       model::num(req.copy_back_bytes) + " bytes per element at " +
                       model::num(req.memory_bandwidth / 1e9) + " GB/s of GPU memory"});
  }
  return out;
}

// One simulation of the job's S-SGD DAG in its compact form, through the engine and result
// buffers that predict's runs share.
struct Simulator {
  Engine engine;
  SsgdSimResult result;
};

// Runs `dag` through the engine, recording its last iteration; on the flow-level tier the
// collectives' transfers share the network it returns.
model::Expected<std::unique_ptr<FlowNetwork>> run_dag(Simulator& sim, const model::SsgdDag& dag,
                                                      const PredictRequest& req,
                                                      const FlowTier* flow,
                                                      const detail::ShardPricer* shard) {
  const auto& groups = dag.config().groups;
  std::unique_ptr<FlowNetwork> net;
  if (flow != nullptr && !groups.empty()) {
    net = std::make_unique<FlowNetwork>(flow->cluster, flow->bandwidth_scale);
    net->set_serial_peers(req.exchange.stack &&
                          req.exchange.stack->library.peer_transfers == "serial");
    for (int it = 0; it < dag.iterations(); ++it) {
      for (int g = 0; g < dag.group_count(); ++g) {
        const std::int64_t elements = groups[static_cast<std::size_t>(g)].elements;
        if (shard == nullptr) {
          auto plan = flow->flows->plan(elements);
          if (!plan) return plan.error();
          net->assign(dag.comm_id(it, g), std::move(*plan));
          continue;
        }
        auto plan = shard->plan(model::CollectiveOp::kReduceScatter, elements);
        if (!plan) return plan.error();
        net->assign(dag.comm_id(it, g), std::move(*plan));
      }
    }
  }
  DAGSGD_TRY(sim.engine.run(dag, sim.result, net.get(), dag.iterations() - 1));
  return net;
}

// Interference (docs/gpu-effects.md): each forward and backward of the simulated last iteration
// runs (slowdown - 1) x longer for the time a collective was in flight beside it. Workers are
// alike in predict, so worker 0's overlap stands for every worker's; the layers' times in
// `layers` grow by it. A task's compute is the end of it, `layers`' time of it (a sharded job's
// wait for its parameters, before it, computes nothing). Returns the compute added to one
// worker's iteration.
Nanos slow_compute_beside_comm(const model::SsgdDag& dag, const SsgdSimResult& r, double slowdown,
                               std::vector<model::LayerTime>& layers) {
  const int last = dag.iterations() - 1;
  std::vector<Interval> comm;
  for (int g = 0; g < dag.group_count(); ++g) {
    const model::TaskId id = dag.comm_id(last, g);
    comm.push_back({r.start(id), r.finish(id)});
  }
  comm = merge(std::move(comm));
  auto added_to = [&](int position, Nanos compute) {
    const model::TaskId id = dag.task_id(last, 0, position);
    const Nanos start = std::max(r.start(id), r.finish(id) - compute);
    const Nanos beside = length_and(comm, {{start, r.finish(id)}});
    return std::llround(static_cast<double>(beside) * (slowdown - 1));
  };
  Nanos added = 0;
  for (int l = 0; l < dag.layers(); ++l) {
    auto& layer = layers[static_cast<std::size_t>(l)];
    const Nanos forward = added_to(model::SsgdDag::kFirstForward + l, layer.forward);
    const Nanos backward = added_to(dag.first_backward() + dag.layers() - 1 - l, layer.backward);
    layer.forward += forward;
    layer.backward += backward;
    added += forward + backward;
  }
  return added;
}

// Moves sharding's waits for all-gathers out of the compute they were folded into (the DAG's
// forward, backward and update tasks) into exposed communication.
void account_gathers(const detail::ShardCost& s, IterationAnalysis& a) {
  Breakdown& b = a.breakdown;
  b.forward -= s.forward_wait;
  b.backward -= s.backward_wait;
  b.update -= s.update_gather;
  b.comm_total += s.gathers;
  b.comm_exposed += s.forward_wait + s.backward_wait + s.update_gather;
  auto& by_kind = a.critical_path.by_kind;
  Nanos moved = 0;
  for (auto [kind, wait] : {std::pair{model::TaskKind::kForward, s.forward_wait},
                            {model::TaskKind::kBackward, s.backward_wait},
                            {model::TaskKind::kUpdate, s.update_gather}}) {
    Nanos& t = by_kind[static_cast<std::size_t>(kind)];
    const Nanos m = std::min(t, wait);
    t -= m;
    moved += m;
  }
  by_kind[static_cast<std::size_t>(model::TaskKind::kComm)] += moved;
}

// `shard`: how a sharded job's collectives are priced in this run (nullptr: not sharded).
model::Expected<Run> simulate_once(Simulator& sim, const PredictRequest& req, int workers,
                                   const model::CommTimeFn& comm, bool with_comm,
                                   bool keep_timeline = false, const FlowTier* flow = nullptr,
                                   const detail::ShardPricer* shard = nullptr) {
  model::SsgdConfig c;
  c.layers = req.layers;
  scale_compute(c.layers, straggler_factor(req, workers));
  c.workers = workers;
  c.iterations = req.iterations;
  c.prefetch = req.prefetch;
  c.io = req.io;
  c.h2d = req.h2d;
  c.update = req.update;
  if (workers > 1) add_copies(c.layers, c.update, req);
  if (!with_comm || workers < 2) shard = nullptr;
  detail::ShardCost shard_cost;
  const std::vector<model::LayerTime> compute = c.layers;  // without waits for parameters
  if (shard != nullptr) {
    shard_cost = detail::apply_sharding(req.sharding, c, req.overlap, *shard);
  } else if (with_comm && workers > 1) {
    c.groups = model::make_groups(c.layers, req.overlap, comm);
  }
  // Sizes and times from input: an Error before any memory is spent on the DAG.
  DAGSGD_TRY(model::check_ssgd_config(c, /*compact=*/true));
  auto dag = std::make_unique<const model::SsgdDag>(std::move(c));
  const detail::ShardPricer* shard_flows = flow != nullptr ? shard : nullptr;
  auto net = run_dag(sim, *dag, req, flow, shard_flows);
  if (!net) return net.error();
  Run run;
  if (req.compute_slowdown > 1 && dag->group_count() > 0) {
    // Once more with the slowed compute; the gradient groups stay those of the first run.
    model::SsgdConfig slowed = dag->config();
    slowed.layers = compute;
    run.interference =
        slow_compute_beside_comm(*dag, sim.result, req.compute_slowdown, slowed.layers);
    // The gathers wait for the slowed compute.
    if (shard != nullptr && model::shards_parameters(req.sharding)) {
      detail::add_gather_waits(slowed, *shard, shard_cost);
    }
    DAGSGD_TRY(model::check_ssgd_config(slowed, /*compact=*/true));
    dag = std::make_unique<const model::SsgdDag>(std::move(slowed));
    net = run_dag(sim, *dag, req, flow, shard_flows);
    if (!net) return net.error();
  }
  const int last = dag->iterations() - 1;
  const SsgdSimResult& r = sim.result;
  run.analysis = analyze_iteration(*dag, r, last, 0);
  run.shard = shard_cost;
  account_gathers(shard_cost, run.analysis);
  // The longest duration dagsgd states (docs/limits.md): beyond it an answer is no answer.
  if (run.analysis.end - run.analysis.start >= model::kMaxDuration) {
    return model::Error{"the simulated iteration takes " +
                        model::num(model::to_seconds(run.analysis.end - run.analysis.start)) +
                        " s, beyond the " + model::num(model::to_seconds(model::kMaxDuration)) +
                        " s (11.6 days) dagsgd simulates: a link or fabric is far too slow for "
                        "this model"};
  }
  if (*net) {
    run.links = busiest_links(**net, static_cast<double>(run.analysis.start),
                              static_cast<double>(run.analysis.end));
  }
  run.groups = dag->config().groups;
  run.tasks = dag->task_count();
  run.events = r.events();
  if (keep_timeline) {
    // In task order, as the explicit DAG numbers them: each worker's tasks, then collectives.
    const auto first = static_cast<std::size_t>(dag->task_id(last, 0, 0));
    for (std::size_t i = first; i < first + dag->iteration_tasks(); ++i) {
      const auto id = static_cast<model::TaskId>(i);
      const model::Task t = dag->task(id);
      run.timeline.push_back({t.worker, t.kind, t.layer, r.start(id) - run.analysis.start,
                              r.finish(id) - r.start(id)});
    }
  }
  return run;
}

model::Topology faster(model::Topology t, double factor) {
  t.intra.beta_ns_per_byte /= factor;
  t.inter.beta_ns_per_byte /= factor;
  return t;
}

}  // namespace

model::Expected<PredictResult> predict(const PredictRequest& req) {
  if (req.layers.empty()) return model::Error{"the network has no layers"};
  if (req.batch < 1) return model::Error{"the batch size must be at least 1"};
  if (req.iterations < 2) return model::Error{"simulate at least 2 iterations"};
  if (req.topology.nodes < 1 || req.topology.gpus_per_node < 1) {
    return model::Error{"at least one worker is needed"};
  }
  // Every worker is simulated: refuse, before building anything, a job too large to simulate.
  const std::int64_t all_workers =
      std::int64_t{req.topology.nodes} * std::int64_t{req.topology.gpus_per_node};
  DAGSGD_TRY(model::ssgd_task_count(all_workers, static_cast<std::int64_t>(req.layers.size()), 0,
                                    req.iterations));
  const int workers = req.topology.workers();

  auto model_n = model::make_comm_model(req.topology, req.exchange);
  if (!model_n.ok()) return model_n.error();
  auto model_fast = model::make_comm_model(faster(req.topology, 2.0), req.exchange);
  if (!model_fast.ok()) return model_fast.error();
  const model::CommModel& cm = **model_n;
  const model::CommModel& cm_fast = **model_fast;
  auto comm = [&cm](std::int64_t e) { return cm.exchange_time(e); };
  auto comm_fast = [&cm_fast](std::int64_t e) { return cm_fast.exchange_time(e); };
  auto comm_free = [](std::int64_t) { return Nanos{0}; };

  // The flow-level tier: the collectives' transfers on the cluster, in the ring order the
  // library would build.
  std::optional<model::CollectiveFlows> flows;
  FlowTier flow;
  FlowTier flow_fast;
  if (req.cluster && workers > 1) {
    if (req.cluster->gpu_count() < workers) {
      return model::Error{"the cluster has " + std::to_string(req.cluster->gpu_count()) +
                          " GPUs, fewer than the " + std::to_string(workers) + " workers"};
    }
    auto made = model::CollectiveFlows::make(req.topology, req.exchange,
                                             req.cluster->collective_order(workers));
    if (!made) return made.error();
    flows = std::move(*made);
    flow = {&*flows, req.cluster, 1.0};
    flow_fast = {&*flows, req.cluster, 2.0};
  }
  const FlowTier* with_flow = flows ? &flow : nullptr;
  const FlowTier* with_flow_fast = flows ? &flow_fast : nullptr;

  // Sharded data parallelism: its reduce-scatters and all-gathers in each run's tier.
  const bool sharded = req.sharding != model::Sharding::kNone;
  if (sharded && req.easgd) return model::Error{"sharding needs --sync bsp (not EASGD)"};
  if (sharded && req.exchange.topk > 0) {
    return model::Error{"sharding reduce-scatters dense gradients: top-k must be 0"};
  }
  detail::ShardPricer shard{req.topology};
  shard.element_bytes = model::bytes_per_element(req.exchange.precision);
  if (flows) {
    shard.flows = &*flows;
    shard.cluster = req.cluster.get();
  }
  detail::ShardPricer shard_fast = shard;
  shard_fast.topology = faster(req.topology, 2.0);
  shard_fast.bandwidth_scale = 2.0;
  detail::ShardPricer shard_free = shard;
  shard_free.free = true;
  const auto* on_main = sharded ? &shard : nullptr;
  const auto* on_fast = sharded ? &shard_fast : nullptr;
  const auto* on_free = sharded ? &shard_free : nullptr;

  // With EASGD the per-iteration DAG has no gradient exchange; parameters are averaged with the
  // center every tau iterations, after the update, with nothing to overlap.
  const bool easgd = req.easgd.has_value();
  Simulator sim;
  auto main = simulate_once(sim, req, workers, comm, !easgd, req.keep_timeline, with_flow, on_main);
  if (!main.ok()) return main.error();
  auto single = simulate_once(sim, req, 1, comm_free, false);
  if (!single.ok()) return single.error();
  auto free_run = simulate_once(sim, req, workers, comm_free, !easgd, false, nullptr, on_free);
  if (!free_run.ok()) return free_run.error();
  auto fast_run =
      simulate_once(sim, req, workers, comm_fast, !easgd, false, with_flow_fast, on_fast);
  if (!fast_run.ok()) return fast_run.error();

  PredictResult out;
  out.workers = workers;
  out.iteration = main->analysis.time();
  out.if_comm_free = free_run->analysis.time();
  out.if_double_bandwidth = fast_run->analysis.time();
  out.breakdown = main->analysis.breakdown;
  out.groups = main->groups;
  out.tasks = main->tasks;
  out.events = main->events;
  out.timeline = std::move(main->timeline);
  if (flows) {
    out.network_model = "flow";
    out.busiest_links = std::move(main->links);
  }
  std::int64_t params = 0;
  for (const auto& l : req.layers) params += l.param_elements;
  if (easgd && workers > 1) {
    const int tau = req.easgd->tau;
    Nanos exchange = cm.exchange_time(params);
    Nanos exchange_fast = cm_fast.exchange_time(params);
    if (flows) {
      const auto plan = flows->plan(params);
      if (!plan) return plan.error();
      exchange = std::llround(isolated_time_ns(*req.cluster, *plan));
      exchange_fast = std::llround(isolated_time_ns(*req.cluster, *plan, 2.0));
    }
    auto amortized = [tau](Nanos local, Nanos ex) {
      return local + static_cast<Nanos>(std::llround(static_cast<double>(ex) / tau));
    };
    out.iteration = amortized(main->analysis.time(), exchange);
    out.if_double_bandwidth = amortized(main->analysis.time(), exchange_fast);
    out.breakdown.comm_total =
        static_cast<Nanos>(std::llround(static_cast<double>(exchange) / tau));
    out.breakdown.comm_exposed = out.breakdown.comm_total;
    out.groups = {
        model::GradientGroup{0, static_cast<int>(req.layers.size()) - 1, params, exchange}};
  }
  out.algorithm = workers > 1 ? cm.algorithm_for(params) : "none";
  if (!out.groups.empty()) {
    auto largest =
        std::max_element(out.groups.begin(), out.groups.end(),
                         [](const auto& a, const auto& b) { return a.elements < b.elements; });
    out.algorithm = cm.algorithm_for(largest->elements);
  }
  if (sharded && workers > 1) out.algorithm = "ring reduce_scatter + allgather";
  out.sharding = model::sharding_name(req.sharding);
  out.gathers_per_iteration = main->shard.gathers_per_iteration;
  out.memory = model::gpu_memory(req.sharding, params, workers, req.exchange.precision,
                                 main->shard.gathered_elements, req.activation_bytes);
  out.gpu_memory = req.gpu_memory;
  // The model states are exact; the activations counted from the network file are an upper
  // bound (every layer's output kept), so only the states refuse a job.
  if (req.gpu_memory > 0 && out.memory.total() - out.memory.activations > req.gpu_memory) {
    model::GpuMemory states = out.memory;
    states.activations = 0;
    return model::Error{"the job does not fit the GPU's memory: its model states take " +
                        model::memory_text(states) + " per GPU, above its " +
                        model::fmt("%.2f", req.gpu_memory / model::kGiB) + " GiB" +
                        (model::shards_parameters(req.sharding)
                             ? ""
                             : "; sharding (--sharding zero1|zero2|zero3) divides the model "
                               "states over the GPUs")};
  }
  out.single_gpu_iteration = single->analysis.time();
  out.effects = effect_costs(req, workers);
  if (main->interference > 0) {
    out.effects.push_back(
        {"interference", main->interference,
         "forward and backward x" + model::fmt("%.3f", req.compute_slowdown) +
             " while a collective is in flight beside them (compute kernels beside NCCL's)"});
  }
  out.throughput = static_cast<double>(req.batch) * workers / model::to_seconds(out.iteration);
  out.speedup = static_cast<double>(workers) * static_cast<double>(out.single_gpu_iteration) /
                static_cast<double>(out.iteration);
  out.efficiency = out.speedup / workers;

  const CriticalPath& cp = main->analysis.critical_path;
  out.critical_path_tasks = cp.tasks.size();
  for (int k = 0; k < model::kTaskKindCount; ++k) {
    Nanos t = cp.by_kind[static_cast<std::size_t>(k)];
    if (t > 0)
      out.critical_path.push_back({model::task_kind_name(static_cast<model::TaskKind>(k)), t});
  }
  if (cp.wait > 0) out.critical_path.push_back({"wait", cp.wait});
  if (easgd && out.breakdown.comm_total > 0) {
    out.critical_path.push_back({"comm", out.breakdown.comm_total});
  }
  std::stable_sort(out.critical_path.begin(), out.critical_path.end(),
                   [](const PhaseShare& a, const PhaseShare& b) { return a.time > b.time; });

  const double t = static_cast<double>(out.iteration);
  const double exposed = static_cast<double>(out.breakdown.comm_exposed) / t;
  if (workers > 1 && exposed >= 0.25) {
    out.bound = "communication-bound";
    out.bottleneck = out.bound + ": " + percent(exposed) +
                     " of the iteration is exposed gradient aggregation (" + out.algorithm +
                     "); free communication would be " +
                     times_faster(out.iteration, out.if_comm_free) + ", twice the bandwidth " +
                     times_faster(out.iteration, out.if_double_bandwidth);
    if (!out.busiest_links.empty()) {
      const LinkUse& top = out.busiest_links.front();
      out.bottleneck += "; the busiest link is " + top.link + " (" + top.kind + "), busy " +
                        percent(top.busy) + " of the iteration";
    }
  } else {
    out.bound = bound_kind(cp, out.iteration);
    if (out.bound == "communication-bound") out.bound = "compute-bound";
    std::string what = out.bound == "input-bound"    ? "input loading and copies"
                       : out.bound == "update-bound" ? "the parameter update"
                                                     : "forward and backward compute";
    out.bottleneck = out.bound + ": " + what + " dominate" +
                     (what == "the parameter update" ? "s" : "") + " the critical path";
    if (workers > 1) {
      out.bottleneck += "; exposed communication is " + percent(exposed) +
                        " of the iteration (free communication would be " +
                        times_faster(out.iteration, out.if_comm_free) + ")";
    }
  }
  if (!out.effects.empty()) {
    std::string around;
    for (const EffectCost& e : out.effects) {
      const std::string what = e.effect == "stragglers"
                                   ? "stragglers at " + std::to_string(workers) + " GPUs"
                               : e.effect == "interference" ? "compute slowed beside communication"
                                                            : "framework " + e.effect;
      around += (around.empty() ? "" : ", ") + what + " " +
                model::fmt("%.2f ms", model::to_millis(e.time));
    }
    out.bottleneck += "; around the wire: " + around;
  }
  return out;
}

}  // namespace dagsgd::sim
