// Collectives as transfers (collective_flows.h). Each algorithm's transfers follow the phases of
// its analytical plan (allreduce_plan.h), so that the fixed parts are priced by the same formula
// and, where no link is shared more than the formula assumes, both tiers give the same time.
#include "dagsgd/model/collective_flows.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "allreduce_plan.h"
#include "dagsgd/model/check.h"

namespace dagsgd::model {

namespace {

using detail::LinkClass;
using detail::Phase;
using detail::Plan;

// The transfers of one plan phase, in sub-steps that run one after another (recursive
// doubling's exchanges), and the bytes of each transfer as a share of the phase's wire bytes
// per sub-step (an endpoint that sends to several peers at once splits its bytes among them).
struct PhaseTransfers {
  std::vector<std::vector<Transfer>> steps;
  double share = 1;
};

int floor_log2(int p) {
  int k = 0;
  while ((2 << k) <= p) ++k;
  return k;
}

// Positions in `order` stand for the ranks at those positions.
class Patterns {
 public:
  Patterns(const std::vector<int>& order, int gpus_per_node)
      : order_(order), gpus_per_node_(std::max(1, gpus_per_node)) {}

  std::vector<Transfer> ring(const std::vector<int>& positions) const {
    std::vector<Transfer> t;
    const std::size_t n = positions.size();
    if (n < 2) return t;
    for (std::size_t i = 0; i < n; ++i) t.push_back(at(positions[i], positions[(i + 1) % n]));
    return t;
  }
  std::vector<int> all() const {
    std::vector<int> v(order_.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
    return v;
  }
  std::vector<Transfer> all_pairs() const {
    std::vector<Transfer> t;
    const int p = static_cast<int>(order_.size());
    for (int i = 0; i < p; ++i) {
      for (int j = 0; j < p; ++j) {
        if (i != j) t.push_back(at(i, j));
      }
    }
    return t;
  }
  // Positions grouped by node, each group in order.
  std::vector<std::vector<int>> by_node() const {
    std::vector<std::vector<int>> groups;
    std::vector<int> node_of_group;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      const int node = order_[i] / gpus_per_node_;
      auto it = std::find(node_of_group.begin(), node_of_group.end(), node);
      if (it == node_of_group.end()) {
        node_of_group.push_back(node);
        groups.emplace_back();
        it = std::prev(node_of_group.end());
      }
      groups[static_cast<std::size_t>(it - node_of_group.begin())].push_back(static_cast<int>(i));
    }
    return groups;
  }
  // Pairwise exchanges at distance `d` among the first `p2` positions (i with i XOR d).
  std::vector<Transfer> exchange(int p2, int d) const {
    std::vector<Transfer> t;
    t.reserve(static_cast<std::size_t>(p2));
    for (int i = 0; i < p2; ++i) t.push_back(at(i, i ^ d));
    return t;
  }
  // The extra ranks beyond the largest power of two fold into (out of) their partners.
  std::vector<Transfer> fold(int p2, bool in) const {
    std::vector<Transfer> t;
    for (int i = p2; i < static_cast<int>(order_.size()); ++i) {
      t.push_back(in ? at(i, i - p2) : at(i - p2, i));
    }
    return t;
  }
  // Double binary tree: tree A a binary heap over the members, tree B the same over them in
  // reverse, so that (for an even count) each member is inner in one tree only. Edges child to
  // parent (`up`) or parent to child.
  std::vector<Transfer> double_tree(const std::vector<int>& members, bool up) const {
    std::vector<Transfer> t;
    const int n = static_cast<int>(members.size());
    for (int mirror = 0; mirror < 2; ++mirror) {
      auto member = [&](int k) {
        return members[static_cast<std::size_t>(mirror == 0 ? k : n - 1 - k)];
      };
      for (int c = 1; c < n; ++c) {
        const int parent = (c - 1) / 2;
        t.push_back(up ? at(member(c), member(parent)) : at(member(parent), member(c)));
      }
    }
    return t;
  }

  Transfer pair(int from_position, int to_position) const { return at(from_position, to_position); }

 private:
  Transfer at(int from_position, int to_position) const {
    return {order_[static_cast<std::size_t>(from_position)],
            order_[static_cast<std::size_t>(to_position)]};
  }
  const std::vector<int>& order_;
  int gpus_per_node_;
};

// NCCL-style trees: a double binary tree over the nodes' first ranks, and each node's ranks in
// a chain to its first one (both trees use the chain, each with half the data).
std::vector<Transfer> tree_phase(const Patterns& pat, bool up) {
  const auto nodes = pat.by_node();
  std::vector<Transfer> t;
  if (nodes.size() == 1) return pat.double_tree(nodes.front(), up);
  std::vector<int> leaders;
  leaders.reserve(nodes.size());
  for (const auto& n : nodes) leaders.push_back(n.front());
  t = pat.double_tree(leaders, up);
  for (const auto& n : nodes) {
    for (std::size_t k = 1; k < n.size(); ++k) {
      for (int tree = 0; tree < 2; ++tree) {
        auto chain = pat.ring({n[k], n[k - 1]});  // {k -> k-1, k-1 -> k}
        t.push_back(up ? chain[0] : chain[1]);
      }
    }
  }
  return t;
}

// The transfers of each phase of `plan` under `algorithm`; parallel to the plan's phases.
std::vector<PhaseTransfers> transfers_of(const std::string& algorithm, const Plan& plan,
                                         const Patterns& pat, int p, int ps_servers) {
  std::vector<PhaseTransfers> out;
  const std::vector<int> all = pat.all();
  const int p2 = 1 << floor_log2(p);
  const bool folded = p != p2;
  auto plain = [](std::vector<Transfer> t, double share = 1) {
    return PhaseTransfers{{std::move(t)}, share};
  };
  if (algorithm == "ring" || algorithm == "allgather") {
    for (std::size_t k = 0; k < plan.size(); ++k) out.push_back(plain(pat.ring(all)));
  } else if (algorithm == "tree") {
    out.push_back(plain(tree_phase(pat, true), 0.5));
    out.push_back(plain(tree_phase(pat, false), 0.5));
  } else if (algorithm == "recursive_doubling") {
    if (folded) out.push_back(plain(pat.fold(p2, true)));
    PhaseTransfers steps;
    for (int d = 1; d < p2; d *= 2) steps.steps.push_back(pat.exchange(p2, d));
    out.push_back(std::move(steps));
    if (folded) out.push_back(plain(pat.fold(p2, false)));
  } else if (algorithm == "rabenseifner") {
    if (folded) out.push_back(plain(pat.fold(p2, true)));
    for (int d = p2 / 2; d >= 1; d /= 2) out.push_back(plain(pat.exchange(p2, d)));  // halving
    for (int d = 1; d < p2; d *= 2) out.push_back(plain(pat.exchange(p2, d)));       // doubling
    if (folded) out.push_back(plain(pat.fold(p2, false)));
  } else if (algorithm == "binomial") {
    // libnbc's allred_sched_diss: virtual rank v (the position) sends to v - 2^(r-1) in reduce
    // round r when v % 2^r == 2^(r-1); then in broadcast round r every v < 2^r sends to v + 2^r.
    PhaseTransfers reduce;
    PhaseTransfers bcast;
    int depth = 0;
    while ((1 << depth) < p) ++depth;
    for (int r = 1; r <= depth; ++r) {
      std::vector<Transfer> t;
      for (int v = 0; v < p; ++v) {
        if (v % (1 << r) == (1 << (r - 1))) t.push_back(pat.pair(v, v - (1 << (r - 1))));
      }
      reduce.steps.push_back(std::move(t));
    }
    for (int r = 0; r < depth; ++r) {
      std::vector<Transfer> t;
      for (int v = 0; v < (1 << r) && v + (1 << r) < p; ++v) t.push_back(pat.pair(v, v + (1 << r)));
      bcast.steps.push_back(std::move(t));
    }
    out.push_back(std::move(reduce));
    out.push_back(std::move(bcast));
  } else if (algorithm == "ps") {
    for (std::size_t k = 0; k < plan.size(); ++k) {
      // Dedicated servers are not GPUs: their phases stay analytical (no transfers).
      out.push_back(ps_servers > 0 ? PhaseTransfers{} : plain(pat.all_pairs(), 1.0 / (p - 1)));
    }
  } else if (algorithm == "asa") {
    out.push_back(plain(pat.all_pairs(), 1.0 / (p - 1)));  // alltoall
    out.push_back(PhaseTransfers{});                       // the sum: computation only
    out.push_back(plain(pat.all_pairs(), 1.0 / (p - 1)));  // allgather
  } else if (algorithm == "hier") {
    const auto nodes = pat.by_node();
    const std::size_t g = nodes.front().size();
    if (nodes.size() == 1 || g == 1) {
      for (std::size_t k = 0; k < plan.size(); ++k) out.push_back(plain(pat.ring(all)));
    } else {
      std::vector<Transfer> intra;
      for (const auto& n : nodes) {
        auto r = pat.ring(n);
        intra.insert(intra.end(), r.begin(), r.end());
      }
      std::vector<Transfer> inter;
      for (std::size_t k = 0; k < g; ++k) {
        std::vector<int> shard;
        shard.reserve(nodes.size());
        for (const auto& n : nodes) shard.push_back(n[std::min(k, n.size() - 1)]);
        auto r = pat.ring(shard);
        inter.insert(inter.end(), r.begin(), r.end());
      }
      out.push_back(plain(intra));
      out.push_back(plain(inter, 1.0 / static_cast<double>(g)));
      out.push_back(plain(intra));
    }
  }
  DAGSGD_CHECK(out.size() == plan.size());
  return out;
}

}  // namespace

namespace detail {

std::vector<double> burst_wire_bytes(const std::string& algorithm, const Plan& plan, int p,
                                     double burst) {
  DAGSGD_CHECK(p >= 1 && burst >= 0);
  std::vector<int> order(static_cast<std::size_t>(p));
  for (int i = 0; i < p; ++i) order[static_cast<std::size_t>(i)] = i;
  const Patterns pat(order, 1);
  const auto phases = transfers_of(algorithm, plan, pat, p, 0);
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

FlowPlan CollectiveFlows::plan(std::int64_t elements) const {
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
  const Patterns pat(order_, topo_.gpus_per_node);
  auto phases = transfers_of(algorithm, plan, pat, p, config_.ps_servers);
  if (config_.stack) {
    phases.insert(phases.begin(), PhaseTransfers{});
    plan.insert(plan.begin(), Phase{LinkClass::kIntra, 0, 0, 0, 0});
  }
  // The pattern depends on the algorithm only: make it once.
  std::shared_ptr<const FlowPattern> pattern;
  for (const auto& known : patterns_) {
    if (known->algorithm == algorithm) pattern = known;
  }
  if (!pattern) {
    auto made = std::make_shared<FlowPattern>();
    made->algorithm = algorithm;
    for (std::size_t k = 0; k < phases.size(); ++k) {
      if (phases[k].steps.empty()) made->phases.emplace_back();
      for (const auto& step : phases[k].steps) made->phases.push_back(step);
      // libnbc's root has the sum after the reduction; its broadcast sends are handed to the
      // transport and complete there while the others still receive.
      if (algorithm == "binomial" && k + 2 == phases.size())
        made->root_phases = made->phases.size();
    }
    patterns_.push_back(made);
    pattern = std::move(made);
  }
  out.pattern = pattern;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const Phase& ph = plan[k];
    const bool intra = ph.link == LinkClass::kIntra;
    const LinkCost& link =
        stack ? (intra ? stack->intra : stack->inter) : (intra ? topo_.intra : topo_.inter);
    const double scale = stack ? (intra ? stack->intra_scale : stack->inter_scale) : 1.0;
    const std::size_t n = std::max<std::size_t>(1, phases[k].steps.size());
    const double nd = static_cast<double>(n);
    if (stack && k == 0) {  // the stack's per-collective costs
      out.amounts.push_back({stack->fixed_ns, 0});
      continue;
    }
    if (phases[k].steps.empty()) {  // no transfers: the whole phase is fixed
      out.amounts.push_back({detail::phase_cost(ph, link), 0});
      continue;
    }
    const Phase step{ph.link, ph.messages / nd, ph.message_bytes, 0, ph.reduce_bytes / nd};
    const double fixed = detail::phase_cost(step, link);
    // The stack's bandwidth limit: each transfer at most its share of the bare link.
    const LinkCost& bare = intra ? topo_.intra : topo_.inter;
    const double cap =
        scale > 1 && bare.beta_ns_per_byte > 0 ? 1.0 / (bare.beta_ns_per_byte * scale) : 0;
    for (std::size_t s = 0; s < n; ++s) {
      out.amounts.push_back(
          {fixed, ph.wire_bytes / nd * phases[k].share * std::min(scale, 1.0), cap});
    }
  }
  DAGSGD_CHECK(out.amounts.size() == out.pattern->phases.size());
  return out;
}

}  // namespace dagsgd::model
