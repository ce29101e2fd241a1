// The communication model of a replay (replay_comm.h): a target fabric's, or alpha-beta fitted
// to the run's own allreduces, and what it makes of every traced collective.
#include "replay_comm.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "dagsgd/model/calibration.h"
#include "dagsgd/sim/flow_network.h"
#include "replay_collectives.h"

namespace dagsgd::sim::detail {

using model::Nanos;
using trace::CollectiveKind;
using trace::TraceDag;

namespace {

bool is_allreduce(const trace::TraceCollective& c) { return c.kind == CollectiveKind::kAllreduce; }

// The rank count most of the run's sized allreduces have (0: none).
int common_allreduce_ranks(const TraceDag& td) {
  std::map<int, int> p_count;
  for (const auto& c : td.collectives) {
    if (is_allreduce(c) && c.bytes > 0 && c.measured > 0 && c.ranks > 1) p_count[c.ranks]++;
  }
  int p = 0;
  int best = 0;
  for (const auto& [pp, n] : p_count) {
    if (n > best) {
      best = n;
      p = pp;
    }
  }
  return p;
}

// Our runtime observes completions only at progress calls and the wait, so single service
// times are not measurable; the per-iteration exposed tail is. The bandwidth such that the
// serialized collectives, started at their measured arrivals, complete on average when the last
// of each iteration after the warm-up was measured to complete (0: no such bandwidth).
double fit_completion_beta(const TraceDag& td, double pd) {
  auto err = [&](double beta) {
    double e = 0;
    Nanos prev = INT64_MIN;
    for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
      const auto& c = td.collectives[ci];
      if (c.completed < 0) continue;
      Nanos arrive = *std::max_element(c.arrive.begin(), c.arrive.end());
      Nanos start = std::max(arrive, prev);
      double t = is_allreduce(c) && c.bytes > 0
                     ? 2.0 * (pd - 1) / pd * static_cast<double>(c.bytes) * beta
                     : static_cast<double>(c.measured);
      prev = start + static_cast<Nanos>(std::llround(t));
      bool last =
          ci + 1 == td.collectives.size() || td.collectives[ci + 1].iteration != c.iteration;
      // The warm-up iterations (connection set-up, first touches) stay out of the fit as they
      // stay out of the mean it is compared with: fitted to them, the steady state came out slow.
      if (last && c.iteration >= td.warmup) e += static_cast<double>(prev - c.completed);
    }
    return e;
  };
  double lo = 0;
  double hi = 1;
  while (err(hi) < 0 && hi < 1e6) hi *= 2;
  if (!(err(lo) < 0 && err(hi) >= 0)) return 0;
  for (int k = 0; k < 100; ++k) {
    double mid = 0.5 * (lo + hi);
    (err(mid) < 0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Fits alpha/beta under the ring formula to the run's own allreduces of rank count p.
model::LinkCost fit_run_link(const TraceDag& td, int p, CommModelInfo& info) {
  model::LinkCost link;
  std::vector<model::TimingPoint> pts;
  std::set<model::Bytes> sizes;
  double total = 0;
  double weight = 0;  // sum of the ring's per-byte factor times the bytes
  const double pd = p;
  for (const auto& c : td.collectives) {
    if (is_allreduce(c) && c.bytes > 0 && c.ranks == p) {
      total += static_cast<double>(c.measured);
      weight += 2.0 * (pd - 1) / pd * static_cast<double>(c.bytes);
      if (c.measured > 0) pts.push_back({c.bytes, static_cast<double>(c.measured)});
      sizes.insert(c.bytes);
    }
  }
  info.points = static_cast<int>(pts.size());
  if (sizes.size() >= 3 && pts.size() >= 3) {
    model::CalibrationOptions co;
    co.algorithm = info.algorithm;
    co.ranks = p;
    co.fit_step = false;
    auto fit = model::calibrate_allreduce(pts, co);
    if (fit) {
      // Keep the per-message fit only if it also explains the run's total communication time
      // (a fit on relative error can follow the many small messages and miss it).
      double sum = 0;
      for (const auto& c : td.collectives) {
        if (is_allreduce(c) && c.bytes > 0 && c.ranks == p) {
          sum += 2.0 * (pd - 1) * fit->link.alpha_ns +
                 2.0 * (pd - 1) / pd * static_cast<double>(c.bytes) * fit->link.beta_ns_per_byte;
        }
      }
      if (total > 0 && std::abs(sum - total) / total < 0.05) {
        info.rms_relative = fit->rms_relative;
        info.note = "alpha-beta fit to " + std::to_string(pts.size()) + " allreduces";
        return fit->link;
      }
    }
  }
  if (td.mode == trace::TraceMode::kSsgd && total > 0) {
    const double beta = fit_completion_beta(td, pd);
    if (beta > 0) {
      link.beta_ns_per_byte = beta;
      info.note = std::string("bandwidth fit to the measured completion of the last ") +
                  "collective of each iteration (" + std::to_string(info.points) + " allreduces)";
      return link;
    }
  }
  if (weight > 0) {
    // The effective bandwidth that reproduces the run's total service time.
    link.beta_ns_per_byte = total / weight;
    info.note = "effective-bandwidth fit to the total of " + std::to_string(info.points) +
                " allreduces (" + std::to_string(sizes.size()) + " size(s))";
  }
  return link;
}

}  // namespace

model::Expected<CommModelInfo> choose_comm_model(const TraceDag& td, const ReplayOptions& options) {
  CommModelInfo info;
  info.topology = run_topology(td);
  if (options.comm == CommMode::kMeasured) {
    info.source = CommSource::kMeasured;
    info.algorithm = "as traced";
    return info;
  }
  if (options.target) {
    info.source = CommSource::kFabric;
    info.algorithm = options.algorithm;
    // "auto": what the trace says (NCCL's kernel names), unless the target fabric carries
    // measured latencies: those already are what the library does there.
    if (info.algorithm == "auto" && !td.traced_algorithm.empty() && !options.stack &&
        options.target->intra.measured.empty() && options.target->inter.measured.empty()) {
      info.algorithm = td.traced_algorithm;
    }
    // Our runtime's asa and rsag are not the library's allreduce that curves and stacks describe.
    if (info.algorithm == "auto" && !td.exchange_algorithm.empty()) {
      info.algorithm = td.exchange_algorithm;
    }
    info.topology.intra = options.target->intra;
    info.topology.inter = options.target->inter;
    if (options.target->nodes > 0 && options.target->gpus_per_node > 0) {
      info.topology.nodes = options.target->nodes;
      info.topology.gpus_per_node = options.target->gpus_per_node;
    }
    return info;
  }
  info.source = CommSource::kRun;
  info.algorithm = "ring";
  const int p = common_allreduce_ranks(td);
  model::LinkCost link;
  if (p > 1) {
    link = fit_run_link(td, p, info);
  } else {
    info.note = "no allreduce with a size and all ranks present: measured durations kept";
  }
  info.topology.intra = link;
  info.topology.inter = link;
  return info;
}

namespace {

// Splits a rooted plan where its root has the result: the root waits for its reduction and
// for the share `kept` (0..1) of its broadcast that the transport does not take off its hands
// (a large message does not fit the socket buffers), and the rest of the broadcast runs on the
// spread task, which the other ranks wait for. The broadcast-only patterns are made once per
// pattern.
class RootSplit {
 public:
  std::pair<model::FlowPlan, model::FlowPlan> operator()(const model::FlowPlan& plan, double kept) {
    const std::size_t k = plan.pattern->root_phases;
    auto& rest_pattern = patterns_[plan.pattern.get()];
    if (!rest_pattern) {
      auto rest = std::make_shared<model::FlowPattern>();
      rest->algorithm = plan.pattern->algorithm;
      const auto& ph = plan.pattern->phases;
      rest->phases.assign(ph.begin() + static_cast<std::ptrdiff_t>(k), ph.end());
      rest_pattern = std::move(rest);
    }
    model::FlowPlan root = plan;
    model::FlowPlan others{rest_pattern, {}, plan.analytical};
    for (std::size_t i = k; i < plan.amounts.size(); ++i) {
      model::FlowPhaseAmount a = plan.amounts[i];
      root.amounts[i].fixed *= kept;
      root.amounts[i].bytes *= kept;
      a.fixed *= 1 - kept;
      a.bytes *= 1 - kept;
      others.amounts.push_back(a);
    }
    return {std::move(root), std::move(others)};
  }

  static bool applies(const model::FlowPlan& plan) {
    return plan.pattern && plan.pattern->root_phases > 0 &&
           plan.pattern->root_phases < plan.pattern->phases.size();
  }

  // The share of the broadcast the root waits for when a curve says the fastest rank (the root)
  // is done after `first` of the slowest one's `last`: the plan's time at the links' rates is
  // divided in that proportion (the reduction's all before the root's completion).
  static double kept_share(const ClusterTopology& cluster, const model::FlowPlan& plan,
                           double first, double last) {
    model::FlowPlan reduce = plan;
    for (std::size_t i = plan.pattern->root_phases; i < reduce.amounts.size(); ++i) {
      reduce.amounts[i].fixed = 0;
      reduce.amounts[i].bytes = 0;
    }
    const double r = isolated_time_ns(cluster, reduce);
    const double b = isolated_time_ns(cluster, plan) - r;
    if (b <= 0 || last <= 0) return 0;
    return std::clamp((first / last * (r + b) - r) / b, 0.0, 1.0);
  }

 private:
  std::map<const model::FlowPattern*, std::shared_ptr<const model::FlowPattern>> patterns_;
};

}  // namespace

model::Expected<CollectiveTimes> collective_times(const TraceDag& td, const ReplayOptions& options,
                                                  const CommModelInfo& info) {
  // By the group's nodes and GPUs per node.
  std::map<std::pair<int, int>, std::unique_ptr<model::CommModel>> models;
  auto model_for = [&](const trace::TraceCollective& c) -> model::Expected<model::CommModel*> {
    const model::Topology topo = group_topology(info.topology, c);
    const std::pair<int, int> shape{topo.nodes, topo.gpus_per_node};
    auto it = models.find(shape);
    if (it != models.end()) return it->second.get();
    model::ExchangeConfig cfg;
    cfg.algorithm = info.algorithm;
    // A measured curve of this rank count is what the library did on the target: it prices the
    // collectives, and the stack (if any) only says which transfers they are (flows_for).
    if (info.source == CommSource::kFabric && model::measured_curve(topo) == nullptr) {
      cfg.stack = options.stack;
    }
    auto m = model::make_comm_model(topo, cfg);
    if (!m) return m.error();
    auto* raw = m->get();
    models.emplace(shape, std::move(*m));
    return raw;
  };
  // The flow-level tier: transfers on the cluster, in the ring order of each group size.
  const bool flow = options.cluster != nullptr && info.source == CommSource::kFabric &&
                    td.concurrent_resource >= 0;
  // By the group's ranks in the order the flow tier runs them.
  std::map<std::vector<int>, std::unique_ptr<model::CollectiveFlows>> flows_by_group;
  auto flows_for =
      [&](const trace::TraceCollective& c) -> model::Expected<model::CollectiveFlows*> {
    auto order = group_order(*options.cluster, c);
    if (!order) return order.error();
    auto it = flows_by_group.find(*order);
    if (it != flows_by_group.end()) return it->second.get();
    model::Topology topo = info.topology;
    topo.nodes = std::max(1, c.ranks / std::max(1, topo.gpus_per_node));
    topo.gpus_per_node = std::max(1, c.ranks / topo.nodes);
    if (placed_group(c)) topo = group_topology(info.topology, c);
    // The formula's pattern: a measured curve says how long, not which transfers.
    topo.intra.measured.clear();
    topo.inter.measured.clear();
    model::ExchangeConfig cfg;
    cfg.algorithm = info.algorithm == model::kMeasuredAlgorithm ? "auto" : info.algorithm;
    // The stack's algorithm choice decides which transfers (under a measured curve too).
    if (info.source == CommSource::kFabric) cfg.stack = options.stack;
    auto f = model::CollectiveFlows::make(topo, cfg, *order);
    if (!f) return f.error();
    return flows_by_group.emplace(*order, std::make_unique<model::CollectiveFlows>(std::move(*f)))
        .first->second.get();
  };
  const bool from_run = info.source == CommSource::kRun;
  CollectiveTimes out;
  out.phases.resize(td.collectives.size());
  out.modeled_tails.assign(td.collectives.size(), false);
  RootSplit root_split;
  if (flow) {
    out.flows.resize(td.collectives.size());
    out.spread_flows.resize(td.collectives.size());
  }
  // Every collective but the allreduce: its formula in the model's table at the size the trace
  // recorded, on the links of its group; on the flow tier, that formula's transfers.
  auto price_other = [&](const trace::TraceCollective& c, std::size_t ci) -> model::Expected<void> {
    const model::CollectiveOp op = *traced_op(c.kind);
    const double size = traced_size(c);
    const model::Topology topo = group_topology(info.topology, c);
    auto algorithm = op_algorithm(topo, op, info.algorithm, size);
    if (!algorithm) return algorithm.error();
    auto t = model::collective_time(topo, op, *algorithm, size);
    if (!t) return t.error();
    out.phases[ci] = {0, *t, 0};
    if (c.startup_task != model::kNoTask && info.source == CommSource::kFabric) {
      out.modeled_tails[ci] = true;
    }
    if (flow && c.joined) {
      auto f = flows_for(c);
      if (!f) return f.error();
      auto plan = (*f)->plan_collective(op, *algorithm, size);
      if (!plan) return plan.error();
      out.flows[ci] = std::move(*plan);
      out.phases[ci] = {0, 0, 0};
    }
    return model::ok();
  };
  const model::Topology traced = run_topology(td);
  trace::TraceCollective scaled;  // the group a collective has on a larger target
  for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
    const auto& traced_c = td.collectives[ci];
    out.phases[ci] = {0, traced_c.measured, 0};
    const bool model_known = options.comm == CommMode::kModeled &&
                             !(from_run && info.topology.intra.beta_ns_per_byte <= 0);
    const std::string unpriced = model_known ? unpriced_reason(td, traced_c) : "";
    if (!unpriced.empty()) ++out.unpriced[unpriced];
    if (!model_known || !unpriced.empty()) {
      ++out.measured;
      continue;
    }
    const trace::TraceCollective* group = &traced_c;
    if (options.world > 0) {
      auto g = scale_group(traced, info.topology, traced_c);
      if (!g) return g.error();
      if (g->how == GroupScale::kKept) {
        ++out.kept[traced_name(td, traced_c) + " of " + std::to_string(traced_c.ranks) + " ranks"];
      } else if (g->how == GroupScale::kNodeLocal) {
        ++out.node_local;
      } else {
        ++out.grown;
      }
      scaled = traced_c;
      scaled.ranks = g->ranks;
      scaled.group_ranks = std::move(g->group_ranks);
      group = &scaled;
    }
    const trace::TraceCollective& c = *group;
    if (c.kind != CollectiveKind::kAllreduce) {
      DAGSGD_TRY(price_other(c, ci));
      ++out.modeled;
      continue;
    }
    auto m = model_for(c);
    if (!m) return m.error();
    auto elements = static_cast<std::int64_t>(static_cast<double>(c.bytes) / 4.0);
    out.phases[ci] = (*m)->phases(std::max<std::int64_t>(1, elements));
    if ((*m)->algorithm_for(elements) == model::kMeasuredAlgorithm) {
      out.used_measured_curves = true;
    }
    // Onto a target fabric, the modeled parts replace the measured ones, the ranks' lags
    // included. The run's own fit keeps the measured lags and serializes whole collectives (it
    // was fitted so), and Kineto traces have no startup or tail tasks: there the whole time is
    // the join's.
    if (c.startup_task != model::kNoTask && info.source == CommSource::kFabric) {
      out.modeled_tails[ci] = true;
    } else {
      out.phases[ci] = {0, out.phases[ci].total(), 0};
    }
    if (flow && c.joined) {
      // The startup goes into the transfers' fixed parts: collectives progress together.
      auto f = flows_for(c);
      if (!f) return f.error();
      const auto& ph = out.phases[ci];
      auto planned = (*f)->plan(std::max<std::int64_t>(1, elements));
      if (!planned) return planned.error();
      model::FlowPlan plan = std::move(*planned);
      Nanos tail = ph.tail;
      const bool curve = (*m)->algorithm_for(elements) == model::kMeasuredAlgorithm;
      // A rooted algorithm: the root (rank 0) has its result when the reduction is in; the
      // others wait for the broadcast on the spread task. A curve that reports the fastest rank
      // prices the two parts: the fastest rank is the root, the slowest one a receiver.
      const bool rooted = c.spread_task != model::kNoTask && RootSplit::applies(plan) &&
                          (!curve || (ph.first >= 0 && ph.first <= ph.total()));
      if (rooted) {
        // Without a curve the root is done once its broadcast is handed to the transport.
        const double kept =
            curve ? RootSplit::kept_share(*options.cluster, plan, static_cast<double>(ph.first),
                                          static_cast<double>(ph.total()))
                  : 0.0;
        auto [root, others] = root_split(plan, kept);
        if (curve) {
          fit_plan_to(root, *options.cluster, static_cast<double>(ph.first));
          fit_plan_to(others, *options.cluster, static_cast<double>(ph.total() - ph.first));
          tail = 0;
        }
        plan = std::move(root);
        out.spread_flows[ci] = std::move(others);
      } else if (curve) {
        // What was measured there decides how long; the topology, what the transfers share.
        // The transfers end when the last rank has its result: the slowest rank's latency,
        // whose spread over the average one is then no longer a tail of its own.
        fit_plan_to(plan, *options.cluster, static_cast<double>(ph.startup + ph.body + ph.tail));
        tail = 0;
      }
      out.flows[ci] = std::move(plan);
      out.phases[ci] = {0, 0, tail};
    }
    ++out.modeled;
  }
  return out;
}

}  // namespace dagsgd::sim::detail
