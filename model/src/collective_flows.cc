// Collectives as transfers (collective_flows.h). Each algorithm's transfers follow the phases of
// its analytical plan (collective_plan.h), so that the fixed parts are priced by the same formula
// and, where no link is shared more than the formula assumes, both tiers give the same time.
#include "dagsgd/model/collective_flows.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>

#include "collective_patterns.h"
#include "collective_plan.h"
#include "dagsgd/model/check.h"

namespace dagsgd::model {

using detail::LinkClass;
using detail::Patterns;
using detail::Phase;
using detail::PhaseTransfers;
using detail::Plan;

namespace detail {
namespace {

// The transfers of each phase of `plan` under `algorithm` (the top-k allgather when `algorithm`
// is kSparse), from the table of algorithms; parallel to the plan's phases.
const CollectiveAlgorithm& row_of(const std::string& algorithm) {
  const CollectiveAlgorithm* a = algorithm == kSparse
                                     ? find_algorithm(CollectiveOp::kAllgather, "ring")
                                     : find_algorithm(CollectiveOp::kAllreduce, algorithm);
  DAGSGD_CHECK(a != nullptr);  // every name here came from the cost model
  return *a;
}

std::vector<PhaseTransfers> transfers_of(const std::string& algorithm, const Plan& plan,
                                         const Patterns& pat, const Shape& shape) {
  auto out = row_of(algorithm).transfers(plan, pat, shape);
  DAGSGD_CHECK(out.size() == plan.size());
  return out;
}

}  // namespace

Expected<std::vector<double>> burst_wire_bytes(const std::string& algorithm, const Plan& plan,
                                               int p, double burst) {
  DAGSGD_CHECK(p >= 1 && burst >= 0);
  DAGSGD_TRY(check_transfer_count(row_of(algorithm), plan, Shape{p, 1, 0}));
  std::vector<int> order(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) order[static_cast<std::size_t>(i)] = i;
  const Patterns pat(order, 1);
  const auto phases = transfers_of(algorithm, plan, pat, Shape{p, 1, 0});
  std::vector<double> up(order.size(), burst);  // what each port has left, per direction
  std::vector<double> down(order.size(), burst);
  std::vector<double> out;
  out.reserve(plan.size());
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const Phase& ph = plan[k];
    if (phases[k].steps.empty()) {
      out.push_back(ph.wire_bytes);
      continue;
    }
    const double bytes =
        ph.wire_bytes / static_cast<double>(phases[k].steps.size()) * phases[k].share;
    double waits = 0;
    for (const auto& step : phases[k].steps) {
      std::vector<double> sent(order.size(), 0);
      std::vector<double> received(order.size(), 0);
      for (const auto& t : step) {
        sent[static_cast<std::size_t>(t.src)] += bytes;
        received[static_cast<std::size_t>(t.dst)] += bytes;
      }
      double slowest = 0;
      auto take = [&](double demand, double& left) {
        const double free = std::min(left, demand);
        left -= free;
        slowest = std::max(slowest, demand - free);
      };
      for (std::size_t i = 0; i < order.size(); ++i) {
        take(sent[i], up[i]);
        take(received[i], down[i]);
      }
      waits += slowest;
    }
    out.push_back(waits);
  }
  return out;
}

}  // namespace detail

namespace {

// The pattern of `key` (an algorithm: the transfers depend on it and the ranks only), made once
// and kept in `cache`.
std::shared_ptr<const FlowPattern> pattern_of(
    std::vector<std::shared_ptr<const FlowPattern>>& cache, const std::string& key,
    const std::vector<PhaseTransfers>& phases) {
  for (const auto& known : cache) {
    if (known->algorithm == key) return known;
  }
  auto made = std::make_shared<FlowPattern>();
  made->algorithm = key;
  for (std::size_t k = 0; k < phases.size(); ++k) {
    if (phases[k].steps.empty()) made->phases.emplace_back();
    for (const auto& step : phases[k].steps) made->phases.push_back(step);
    // libnbc's root has the sum after the reduction; its broadcast sends are handed to the
    // transport and complete there while the others still receive.
    if (key == "binomial" && k + 2 == phases.size()) made->root_phases = made->phases.size();
  }
  cache.push_back(made);
  return made;
}

// What each pattern phase costs: its fixed part and the bytes of each of its transfers. Under a
// stack (whose per-collective costs are the plan's first, empty phase) on the stack's links.
std::vector<FlowPhaseAmount> amounts_of(const Topology& topo, const Plan& plan,
                                        const std::vector<std::pair<std::size_t, double>>& phases,
                                        const std::optional<detail::StackChoice>& stack) {
  std::vector<FlowPhaseAmount> amounts;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const Phase& ph = plan[k];
    const bool intra = ph.link == LinkClass::kIntra;
    const LinkCost& link =
        stack ? (intra ? stack->intra : stack->inter) : (intra ? topo.intra : topo.inter);
    const double scale = stack ? (intra ? stack->intra_scale : stack->inter_scale) : 1.0;
    const std::size_t n = std::max<std::size_t>(1, phases[k].first);
    const double nd = static_cast<double>(n);
    if (stack && k == 0) {  // the stack's per-collective costs
      amounts.push_back({stack->fixed_ns, 0});
      continue;
    }
    if (phases[k].first == 0) {  // no transfers: the whole phase is fixed
      amounts.push_back({detail::phase_cost(ph, link), 0});
      continue;
    }
    const Phase step{ph.link, ph.messages / nd, ph.message_bytes, 0, ph.reduce_bytes / nd};
    const double fixed = detail::phase_cost(step, link);
    // The stack's bandwidth limit: each transfer at most its share of the bare link.
    const LinkCost& bare = intra ? topo.intra : topo.inter;
    const double cap =
        scale > 1 && bare.beta_ns_per_byte > 0 ? 1.0 / (bare.beta_ns_per_byte * scale) : 0;
    for (std::size_t s = 0; s < n; ++s) {
      amounts.push_back({fixed, ph.wire_bytes / nd * phases[k].second * std::min(scale, 1.0), cap});
    }
  }
  return amounts;
}

// Each phase's transfer steps and share: all amounts_of needs of the transfers.
std::vector<std::pair<std::size_t, double>> skeleton_of(const std::vector<PhaseTransfers>& phases) {
  std::vector<std::pair<std::size_t, double>> out;
  out.reserve(phases.size());
  for (const auto& ph : phases) out.emplace_back(ph.steps.size(), ph.share);
  return out;
}

}  // namespace

Expected<CollectiveFlows> CollectiveFlows::make(const Topology& topo, const ExchangeConfig& config,
                                                std::vector<int> order) {
  if (static_cast<int>(order.size()) != topo.workers()) {
    return Error{"collective flows: " + std::to_string(order.size()) + " ranks in the order, " +
                 std::to_string(topo.workers()) + " workers"};
  }
  auto analytical = make_comm_model(topo, config);
  if (!analytical) return analytical.error();
  CollectiveFlows f;
  f.topo_ = topo;
  f.config_ = config;
  f.order_ = std::move(order);
  f.analytical_ = std::move(*analytical);
  return f;
}

Expected<FlowPlan> CollectiveFlows::plan(std::int64_t elements) const {
  FlowPlan out;
  out.analytical = analytical_->exchange_time(elements);
  const int p = topo_.workers();
  const std::string algorithm = p > 1 ? analytical_->algorithm_for(elements) : "none";
  auto whole = [&](const std::string& name) {
    // One fixed phase: what the analytical model (or a measured curve) says.
    auto pattern = std::make_shared<FlowPattern>();
    pattern->algorithm = name;
    pattern->phases.emplace_back();
    out.pattern = std::move(pattern);
    out.amounts = {{static_cast<double>(out.analytical), 0}};
    return out;
  };
  if (p <= 1 || elements <= 0 || algorithm == kMeasuredAlgorithm) return whole(algorithm);
  const detail::Shape shape{topo_.nodes, topo_.gpus_per_node, config_.ps_servers};
  // Under a stack: its links (per-message costs; bandwidth limits as more bytes on the bare
  // links, which the flow network carries) and a leading phase of its per-collective costs.
  std::optional<detail::StackChoice> stack;
  Plan plan;
  if (config_.topk > 0) {
    const double k = std::ceil(config_.topk * static_cast<double>(elements));
    const double local = k * (bytes_per_element(config_.precision) + 4);
    plan = detail::sparse_allgather_plan(shape, local);
    if (config_.stack) stack = detail::stack_choice(*config_.stack, topo_, shape, "ring", local);
  } else {
    double bytes = static_cast<double>(elements) * bytes_per_element(config_.precision);
    if (config_.stack) {
      bytes = static_cast<double>(elements) *
              detail::stack_bytes_per_element(*config_.stack, config_.precision);
      stack = detail::stack_choice(*config_.stack, topo_, shape, config_.algorithm, bytes);
    }
    auto dense = detail::allreduce_plan(algorithm, shape, bytes);
    DAGSGD_CHECK(dense.ok());  // the algorithm came from the analytical model
    plan = std::move(*dense);
  }
  // The transfers depend on the algorithm and the plan's length only: made once for each.
  const std::string key = algorithm + "/" + std::to_string(plan.size());
  auto known = std::find_if(skeletons_.begin(), skeletons_.end(),
                            [&](const Skeleton& k) { return k.key == key; });
  if (known == skeletons_.end()) {
    DAGSGD_TRY(detail::check_transfer_count(detail::row_of(algorithm), plan, shape));
    const Patterns pat(order_, topo_.gpus_per_node);
    auto phases = detail::transfers_of(algorithm, plan, pat, shape);
    if (config_.stack) phases.insert(phases.begin(), PhaseTransfers{});
    pattern_of(patterns_, algorithm, phases);
    skeletons_.push_back({key, skeleton_of(phases)});
    known = std::prev(skeletons_.end());
  }
  if (config_.stack) plan.insert(plan.begin(), Phase{LinkClass::kIntra, 0, 0, 0, 0});
  out.pattern = pattern_of(patterns_, algorithm, {});
  out.amounts = amounts_of(topo_, plan, known->phases, stack);
  DAGSGD_CHECK(out.amounts.size() == out.pattern->phases.size());
  return out;
}

Expected<double> flow_transfer_count(const Topology& topo, CollectiveOp op,
                                     const std::string& algorithm) {
  const detail::CollectiveAlgorithm* a = detail::find_algorithm(op, algorithm);
  if (a == nullptr) {
    return Error{std::string("no ") + collective_op_name(op) + " algorithm '" + algorithm + "'"};
  }
  const detail::Shape shape{topo.nodes, topo.gpus_per_node, 0};
  Plan plan;
  if (shape.workers() > 1) a->plan(plan, shape, 1);  // the phases do not depend on the size
  return plan.empty() ? 0 : a->transfer_count(plan, shape);
}

Expected<FlowPlan> CollectiveFlows::plan_collective(CollectiveOp op, const std::string& algorithm,
                                                    double bytes) const {
  auto t = collective_time(topo_, op, algorithm, bytes);
  if (!t) return t.error();
  const detail::CollectiveAlgorithm* a = detail::find_algorithm(op, algorithm);
  if (a == nullptr) {
    return Error{std::string("the flow tier needs a concrete ") + collective_op_name(op) +
                 " algorithm, not '" + algorithm + "'"};
  }
  FlowPlan out;
  out.analytical = *t;
  const std::string key = std::string(collective_op_name(op)) + ":" + algorithm;
  const detail::Shape shape{topo_.nodes, topo_.gpus_per_node, 0};
  Plan plan;
  if (shape.workers() > 1 && bytes > 0) a->plan(plan, shape, bytes);
  if (plan.empty()) {  // nothing to move: one empty phase
    auto pattern = std::make_shared<FlowPattern>();
    pattern->algorithm = key;
    pattern->phases.emplace_back();
    out.pattern = std::move(pattern);
    out.amounts = {{0, 0}};
    return out;
  }
  DAGSGD_TRY(detail::check_transfer_count(*a, plan, shape));
  const Patterns pat(order_, topo_.gpus_per_node);
  auto phases = a->transfers(plan, pat, shape);
  DAGSGD_CHECK(phases.size() == plan.size());
  out.pattern = pattern_of(patterns_, key, phases);
  out.amounts = amounts_of(topo_, plan, skeleton_of(phases), std::nullopt);
  DAGSGD_CHECK(out.amounts.size() == out.pattern->phases.size());
  return out;
}

}  // namespace dagsgd::model
