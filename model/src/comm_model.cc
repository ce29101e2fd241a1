// The cost models of collectives: the formulas on the bare links (each algorithm's plan from
// the table in collective_algorithms.cc), a software stack's choice of algorithm, protocol and
// links above them, and measured allreduce curves.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>

#include "collective_plan.h"
#include "dagsgd/model/check.h"
#include "dagsgd/model/comm_model.h"

namespace dagsgd::model {
namespace detail {

double phase_cost(const Phase& phase, const LinkCost& link) {
  double startup = link.alpha_ns;
  if (link.eager_limit > 0 && phase.message_bytes > static_cast<double>(link.eager_limit)) {
    startup += link.rendezvous_ns;
  }
  return phase.messages * startup + phase.wire_bytes * link.beta_ns_per_byte +
         phase.reduce_bytes * link.gamma_ns_per_byte;
}

namespace {

// The link as a stack sees it: its alpha plus the library's and the protocol's per-message
// cost; its bandwidth times the library's efficiency, between nodes at most what the library's
// connections sustain, and that times the protocol's efficiency (a protocol's lines and flags
// cross a TCP connection as they cross the wire); the library's eager/rendezvous step if it has
// one. Measured curves describe a library already: they do not apply under a stack.
LinkCost stack_link(const LinkCost& bare, const LibrarySpec& lib, const StackProtocol* proto,
                    double protocol_efficiency, LinkClass cls) {
  LinkCost l = bare;
  l.measured.clear();
  l.alpha_ns += lib.per_message_ns;
  if (proto != nullptr) {
    l.alpha_ns +=
        cls == LinkClass::kIntra ? proto->per_message_intra_ns : proto->per_message_inter_ns;
  }
  if (bare.beta_ns_per_byte > 0) {
    double bandwidth = 1e9 / bare.beta_ns_per_byte * lib.efficiency;
    if (cls == LinkClass::kInter && lib.connection_bandwidth > 0) {
      bandwidth = std::min(bandwidth, lib.connection_bandwidth * lib.connections);
    }
    l.beta_ns_per_byte = 1e9 / (bandwidth * protocol_efficiency);
  }
  if (lib.eager_limit >= 0) {
    l.eager_limit = lib.eager_limit;
    l.rendezvous_ns = lib.eager_limit > 0 ? lib.rendezvous_ns : 0;
  }
  return l;
}

double lookup(const std::vector<std::pair<std::string, double>>& v, const std::string& key,
              double fallback) {
  for (const auto& [k, x] : v) {
    if (k == key) return x;
  }
  return fallback;
}

// NCCL's tree correction (tuning.cc treeCorrectionFactor): indexed by log2(bytes / 64).
double tree_correction(const StackProtocol& p, double bytes) {
  if (p.tree_correction.empty() || bytes < 64) return 1.0;
  const auto k = static_cast<std::size_t>(std::floor(std::log2(bytes / 64)));
  return k < p.tree_correction.size() ? p.tree_correction[k] : 1.0;
}

// The framework's and library's per-collective costs for `bytes` per rank.
double fixed_costs(const StackSpec& stack, const Topology& topo, const Shape& shape, double bytes,
                   bool with_framework) {
  double fixed = stack.library.per_collective_ns;
  if (!with_framework || !stack.framework) return fixed;
  const FrameworkSpec& f = *stack.framework;
  fixed += f.per_collective_ns + f.cycle_ns / 2;
  if (f.negotiation && shape.workers() > 1) {
    // Readiness gathered to the coordinator and its decision broadcast: two binomial trees of
    // small messages over the collective's link.
    const LinkCost& link = flat_link(shape) == LinkClass::kIntra ? topo.intra : topo.inter;
    fixed += 2.0 * ceil_log2(shape.workers()) * (link.alpha_ns + stack.library.per_message_ns);
  }
  if (f.host_copy_bandwidth > 0) fixed += 2.0 * bytes / f.host_copy_bandwidth * 1e9;
  return fixed;
}

StackChoice make_choice(const StackSpec& stack, const Topology& topo, const std::string& algorithm,
                        const StackProtocol* proto, double bytes, double fixed) {
  StackChoice c;
  c.algorithm = algorithm;
  c.bytes = bytes;
  double efficiency = 1;
  if (proto != nullptr) {
    c.protocol = proto->name;
    efficiency = lookup(proto->efficiency, algorithm, 1.0);
    if (algorithm == "tree") efficiency *= tree_correction(*proto, bytes);
    fixed += lookup(proto->per_collective_ns, algorithm, 0.0);
    c.protocol_message_intra_ns = proto->per_message_intra_ns;
    c.protocol_message_inter_ns = proto->per_message_inter_ns;
  }
  c.protocol_efficiency = efficiency;
  c.intra = stack_link(topo.intra, stack.library, proto, efficiency, LinkClass::kIntra);
  c.inter = stack_link(topo.inter, stack.library, proto, efficiency, LinkClass::kInter);
  c.fixed_ns = fixed;
  auto scale = [](const LinkCost& stacked, const LinkCost& bare) {
    return bare.beta_ns_per_byte > 0 ? stacked.beta_ns_per_byte / bare.beta_ns_per_byte : 1.0;
  };
  c.intra_scale = scale(c.intra, topo.intra);
  c.inter_scale = scale(c.inter, topo.inter);
  return c;
}

bool supports(const StackProtocol& p, const std::string& algorithm) {
  for (const auto& [a, e] : p.efficiency) {
    if (a == algorithm) return true;
  }
  return false;
}

}  // namespace

int stack_bytes_per_element(const StackSpec& stack, Precision precision) {
  if (precision == Precision::kFp16 && stack.framework &&
      stack.framework->mixed_precision_gradient_bytes > 0) {
    return stack.framework->mixed_precision_gradient_bytes;
  }
  return bytes_per_element(precision);
}

StackChoice stack_choice(const StackSpec& stack, const Topology& topo, const Shape& shape,
                         const std::string& algorithm, double bytes, bool with_framework) {
  const double fixed = fixed_costs(stack, topo, shape, bytes, with_framework);
  const LibrarySpec& lib = stack.library;
  if (lib.kind != "nccl") {
    std::string a = algorithm;
    if (a == kAuto) a = rule_algorithm(call_rules(stack), shape.workers(), bytes);
    DAGSGD_CHECK(!a.empty());  // validated tables cover every size and rank count
    return make_choice(stack, topo, a, nullptr, bytes, fixed);
  }
  // NCCL: the cheapest algorithm and protocol (as its tuning does, with its own constants).
  std::vector<std::string> candidates;
  if (algorithm != kAuto) {
    candidates = {algorithm};
  } else if (shape.nodes <= 1 && !lib.one_node_algorithms.empty()) {
    candidates = lib.one_node_algorithms;
  } else {
    candidates = lib.algorithms;
  }
  std::optional<StackChoice> best;
  double best_cost = 0;
  for (const auto& a : candidates) {
    bool any = false;
    for (const auto& p : lib.protocols) {
      if (!supports(p, a)) continue;
      any = true;
      StackChoice c = make_choice(stack, topo, a, &p, bytes, fixed);
      const double cost = stack_cost(c, shape, false);
      if (!best || cost < best_cost) {
        best = std::move(c);
        best_cost = cost;
      }
    }
    if (!any && algorithm != kAuto) {  // a formula the library has no protocol for
      return make_choice(stack, topo, a, nullptr, bytes, fixed);
    }
  }
  DAGSGD_CHECK(best.has_value());  // validated: at least one algorithm with a protocol
  return *best;
}

double stack_cost(const StackChoice& choice, const Shape& shape, bool startup_only) {
  auto plan = allreduce_plan(choice.algorithm, shape, choice.bytes);
  DAGSGD_CHECK(plan.ok());
  double total = choice.fixed_ns;
  for (auto phase : *plan) {
    const LinkCost& link = phase.link == LinkClass::kIntra ? choice.intra : choice.inter;
    if (startup_only) phase = {phase.link, phase.messages, 0, 0, 0};
    total += phase_cost(phase, link);
  }
  return total;
}

}  // namespace detail

namespace {

using detail::LinkClass;
using detail::Plan;

Expected<void> check_link(const LinkCost& l, const std::string& which) {
  auto bad = [](double v) { return !std::isfinite(v) || v < 0; };
  if (bad(l.alpha_ns) || bad(l.beta_ns_per_byte) || bad(l.gamma_ns_per_byte) ||
      bad(l.rendezvous_ns) || l.eager_limit < 0) {
    return Error{which + " link: costs must be finite and >= 0"};
  }
  const auto max = static_cast<double>(kMaxDuration);
  if (l.alpha_ns >= max || l.rendezvous_ns >= max || l.beta_ns_per_byte >= max ||
      l.gamma_ns_per_byte >= max) {
    return Error{which +
                 " link: a per-message latency or per-byte time reaches 1e15 ns: out of range"};
  }
  return ok();
}

class AnalyticalCommModel final : public CommModel {
 public:
  AnalyticalCommModel(const Topology& topo, const ExchangeConfig& config)
      : topo_(topo),
        config_(config),
        shape_{topo.nodes, topo.gpus_per_node, config.ps_servers},
        tree_threshold_(auto_tree_threshold_bytes(topo)) {}

  Nanos exchange_time(std::int64_t elements) const override {
    if (elements < 0) throw std::invalid_argument("exchange_time: negative element count");
    return saturating_nanos(cost(elements, /*startup_only=*/false));
  }

  Nanos startup_latency() const override {
    return saturating_nanos(cost(1, /*startup_only=*/true));
  }

  // "auto" as NCCL does it: the cheaper of tree and ring at this size (ties: ring), on one node
  // rings only. Without an eager/rendezvous step this is "tree below
  // auto_tree_threshold_bytes()"; with one, the choice follows the step too, which keeps the
  // cost monotone in the size.
  std::string algorithm_for(std::int64_t elements) const override {
    if (config_.topk > 0) return detail::kSparse;
    if (config_.stack) return choice(elements).algorithm;
    if (config_.algorithm != detail::kAuto) return config_.algorithm;
    if (topo_.nodes <= 1 || tree_threshold_ <= 0) return "ring";
    return dense_cost("tree", elements, false) < dense_cost("ring", elements, false) ? "tree"
                                                                                     : "ring";
  }

  std::string protocol_for(std::int64_t elements) const override {
    if (!config_.stack || config_.topk > 0 || topo_.workers() <= 1) return "";
    return choice(elements).protocol;
  }

  // The stack's algorithm, protocol and links for a dense allreduce of `elements`.
  detail::StackChoice choice(std::int64_t elements) const {
    const double bytes = static_cast<double>(elements) *
                         detail::stack_bytes_per_element(*config_.stack, config_.precision);
    return detail::stack_choice(*config_.stack, topo_, shape_, config_.algorithm, bytes);
  }

 private:
  double dense_bytes(std::int64_t elements) const {
    return static_cast<double>(elements) * bytes_per_element(config_.precision);
  }

  double cost(std::int64_t elements, bool startup_only) const {
    if (topo_.workers() <= 1 || elements == 0) return 0;
    if (config_.topk > 0) {
      // k values of the chosen precision plus k int32 indices per worker.
      const double k = std::ceil(config_.topk * static_cast<double>(elements));
      const Plan plan =
          detail::sparse_allgather_plan(shape_, k * (bytes_per_element(config_.precision) + 4));
      if (config_.stack) {
        // The library's links (ring, no protocol choice) and its per-collective costs.
        const detail::StackChoice c = detail::stack_choice(
            *config_.stack, topo_, shape_, "ring", k * (bytes_per_element(config_.precision) + 4));
        return c.fixed_ns + price(plan, startup_only, &c);
      }
      return price(plan, startup_only);
    }
    if (config_.stack) return detail::stack_cost(choice(elements), shape_, startup_only);
    return dense_cost(algorithm_for(elements), elements, startup_only);
  }

  double dense_cost(const std::string& algorithm, std::int64_t elements, bool startup_only) const {
    auto plan = detail::allreduce_plan(algorithm, shape_, dense_bytes(elements));
    DAGSGD_CHECK(plan.ok());  // the name was validated by make_comm_model
    return price(*plan, startup_only);
  }

  double price(const Plan& plan, bool startup_only,
               const detail::StackChoice* stack = nullptr) const {
    double total = 0;
    for (auto phase : plan) {
      const LinkCost& link = phase.link == LinkClass::kIntra
                                 ? (stack != nullptr ? stack->intra : topo_.intra)
                                 : (stack != nullptr ? stack->inter : topo_.inter);
      if (startup_only) phase = {phase.link, phase.messages, 0, 0, 0};
      total += detail::phase_cost(phase, link);
    }
    return total;
  }

  Topology topo_;
  ExchangeConfig config_;
  detail::Shape shape_;
  double tree_threshold_;
};

// Prices a dense allreduce from the fabric's measured latencies for this worker count
// (make_comm_model). `formula` prices sizes above the largest measured one (its growth from
// there) and keeps the precision's bytes per element.
class MeasuredCommModel final : public CommModel {
 public:
  MeasuredCommModel(const MeasuredAllreduce& curve, std::unique_ptr<CommModel> formula,
                    Precision precision)
      : curve_(curve),
        formula_(std::move(formula)),
        bytes_per_element_(bytes_per_element(precision)) {}

  // Until the slowest rank has the result.
  Nanos exchange_time(std::int64_t elements) const override { return phases(elements).total(); }

  // The average rank's latency: startup = the smallest measured size's latency (what a message
  // costs that the wire does not limit), body = the rest; tail = the slowest rank's extra.
  CollectivePhases phases(std::int64_t elements) const override {
    if (elements < 0) throw std::invalid_argument("exchange_time: negative element count");
    CollectivePhases ph;
    if (elements == 0) return ph;
    const Nanos avg = latency(elements, Rank::kAverage);
    const Nanos slow = curve_.slowest.empty() ? avg : latency(elements, Rank::kSlowest);
    ph.startup = std::min(avg, startup_latency());
    ph.body = avg - ph.startup;
    ph.tail = std::max<Nanos>(0, slow - avg);
    if (!curve_.fastest.empty()) ph.first = std::min(avg, latency(elements, Rank::kFastest));
    return ph;
  }

  Nanos startup_latency() const override { return curve_.points.front().second; }

  std::string algorithm_for(std::int64_t /*elements*/) const override { return kMeasuredAlgorithm; }

 private:
  // Linear between measured sizes; below the smallest, its latency (a floor); above the largest,
  // the formula's growth from there.
  enum class Rank { kAverage, kSlowest, kFastest };
  Nanos latency(std::int64_t elements, Rank rank) const {
    const auto& pts = curve_.points;
    auto at = [&](std::size_t k) {
      switch (rank) {
        case Rank::kSlowest:
          return static_cast<double>(curve_.slowest[k]);
        case Rank::kFastest:
          return static_cast<double>(curve_.fastest[k]);
        case Rank::kAverage:
          break;
      }
      return static_cast<double>(pts[k].second);
    };
    const double bytes = static_cast<double>(elements) * bytes_per_element_;
    if (bytes <= static_cast<double>(pts.front().first)) return saturating_nanos(at(0));
    const std::size_t last = pts.size() - 1;
    if (bytes >= static_cast<double>(pts[last].first)) {
      const std::int64_t last_elements =
          std::max<std::int64_t>(1, pts[last].first / bytes_per_element_);
      // Both formula times are saturated at kMaxTimestamp at worst: no overflow here.
      return std::min(kMaxTimestamp,
                      saturating_nanos(at(last)) +
                          std::max<Nanos>(0, formula_->exchange_time(elements) -
                                                 formula_->exchange_time(last_elements)));
    }
    auto hi = std::upper_bound(pts.begin(), pts.end(), bytes,
                               [](double b, const std::pair<Bytes, Nanos>& p) {
                                 return b < static_cast<double>(p.first);
                               });
    const auto k = static_cast<std::size_t>(std::distance(pts.begin(), hi));
    const double f = (bytes - static_cast<double>(pts[k - 1].first)) /
                     static_cast<double>(pts[k].first - pts[k - 1].first);
    return saturating_nanos(at(k - 1) + f * (at(k) - at(k - 1)));
  }

  MeasuredAllreduce curve_;
  std::unique_ptr<CommModel> formula_;
  int bytes_per_element_;
};

}  // namespace

const MeasuredAllreduce* measured_curve(const Topology& topo) {
  const std::vector<MeasuredAllreduce>* curves = nullptr;
  if (topo.nodes == 1) {
    curves = &topo.intra.measured;
  } else if (topo.gpus_per_node == 1 || topo.intra.measured == topo.inter.measured) {
    curves = &topo.inter.measured;
  }
  if (curves == nullptr) return nullptr;
  for (const auto& c : *curves) {
    if (c.ranks == topo.workers() && c.points.size() >= 2 &&
        (c.slowest.empty() || c.slowest.size() == c.points.size()) &&
        (c.fastest.empty() || c.fastest.size() == c.points.size())) {
      return &c;
    }
  }
  return nullptr;
}

namespace {

Error out_of_range(const CommModel& m, std::int64_t elements) {
  return Error{"aggregating " + std::to_string(elements) + " gradient elements (" +
               m.algorithm_for(elements) +
               ") takes 1e15 ns (11.6 days) or more: out of range; check the fabric's "
               "bandwidth and latency"};
}

}  // namespace

Expected<Nanos> CommModel::checked_exchange_time(std::int64_t elements) const {
  const Nanos t = exchange_time(elements);
  if (t < 0 || t >= kMaxDuration) return out_of_range(*this, elements);
  return t;
}

Expected<CollectivePhases> CommModel::checked_phases(std::int64_t elements) const {
  const CollectivePhases ph = phases(elements);
  if (ph.startup < 0 || ph.body < 0 || ph.tail < 0 || ph.startup >= kMaxDuration ||
      ph.body >= kMaxDuration || ph.tail >= kMaxDuration || ph.total() >= kMaxDuration) {
    return out_of_range(*this, elements);
  }
  return ph;
}

CollectivePhases CommModel::phases(std::int64_t elements) const {
  CollectivePhases ph;
  const Nanos total = exchange_time(elements);
  ph.startup = elements > 0 ? std::min(total, startup_latency()) : 0;
  ph.body = total - ph.startup;
  return ph;
}

LinkCost LinkCost::from_fabric(const FabricSpec& f) {
  LinkCost l;
  l.alpha_ns = static_cast<double>(f.latency);
  l.beta_ns_per_byte = f.achievable_bandwidth > 0 ? 1e9 / f.achievable_bandwidth : 0;
  l.eager_limit = f.eager_limit;
  l.rendezvous_ns = static_cast<double>(f.rendezvous_latency);
  l.burst_bytes = f.burst_bytes;
  l.measured = f.measured_allreduce;
  return l;
}

Expected<Precision> parse_precision(const std::string& s) {
  if (s == "fp32") return Precision::kFp32;
  if (s == "fp16") return Precision::kFp16;
  return Error{"unknown precision '" + s + "'; valid precisions: fp32, fp16"};
}

int bytes_per_element(Precision p) { return p == Precision::kFp16 ? 2 : 4; }

std::vector<std::string> comm_algorithm_names() {
  std::vector<std::string> names = detail::algorithm_names(CollectiveOp::kAllreduce);
  names.emplace_back(detail::kAuto);
  return names;
}

const NameRegistry& collective_algorithms() {
  static const NameRegistry kRegistry = [] {
    std::vector<std::string> names = comm_algorithm_names();
    names.emplace_back(kMeasuredAlgorithm);
    return NameRegistry("collective algorithm", std::move(names));
  }();
  return kRegistry;
}

// Tree minus ring (from the two formulas above, on the inter-node link):
//   2α(p-1-d) - M(2β+γ)/p,  d = ceil(lg p)
// so the tree is cheaper below M* = 2pα(p-1-d) / (2β+γ). The eager/rendezvous step is left out
// of the choice, as NCCL's tuning leaves MPI protocol steps out.
double auto_tree_threshold_bytes(const Topology& topo) {
  if (topo.nodes <= 1) return 0;
  const int p = topo.workers();
  const double latency_gain = p - 1 - detail::ceil_log2(p);
  if (latency_gain <= 0) return 0;
  const double per_byte = 2 * topo.inter.beta_ns_per_byte + topo.inter.gamma_ns_per_byte;
  if (per_byte <= 0) return std::numeric_limits<double>::infinity();
  return 2 * p * topo.inter.alpha_ns * latency_gain / per_byte;
}

double reduction_ns_per_byte(const GpuSpec& gpu) {
  return gpu.memory_bandwidth > 0 ? 3 * 1e9 / gpu.memory_bandwidth : 0;
}

namespace {

Expected<void> check_topology(const Topology& topo) {
  if (topo.nodes < 1 || topo.gpus_per_node < 1) {
    return Error{"topology needs at least 1 node and 1 GPU per node, got " +
                 std::to_string(topo.nodes) + " x " + std::to_string(topo.gpus_per_node)};
  }
  if (std::int64_t{topo.nodes} * topo.gpus_per_node > kMaxWorkers) {
    return Error{"topology of " + std::to_string(topo.nodes) + " nodes x " +
                 std::to_string(topo.gpus_per_node) +
                 " GPUs = " + std::to_string(std::int64_t{topo.nodes} * topo.gpus_per_node) +
                 " workers is out of range (at most " + std::to_string(kMaxWorkers) + ")"};
  }
  DAGSGD_TRY(check_link(topo.intra, "intra-node"));
  DAGSGD_TRY(check_link(topo.inter, "inter-node"));
  return ok();
}

}  // namespace

Expected<Nanos> collective_time(const Topology& topo, CollectiveOp op, const std::string& algorithm,
                                double bytes) {
  DAGSGD_TRY(check_topology(topo));
  if (!std::isfinite(bytes) || bytes < 0) {
    return Error{std::string(collective_op_name(op)) + " of " + std::to_string(bytes) +
                 " bytes: the size must be finite and >= 0"};
  }
  std::vector<std::string> names = collective_op_algorithms(op);
  if (algorithm != detail::kAuto) {
    names.emplace_back(detail::kAuto);
    DAGSGD_TRY(
        NameRegistry(std::string(collective_op_name(op)) + " algorithm", names).check(algorithm));
  }
  const detail::Shape shape{topo.nodes, topo.gpus_per_node, 0};
  auto cost = [&](const std::string& name) {
    const detail::CollectiveAlgorithm* a = detail::find_algorithm(op, name);
    DAGSGD_CHECK(a != nullptr);
    detail::Plan plan;
    if (shape.workers() > 1 && bytes > 0) a->plan(plan, shape, bytes);
    double total = 0;
    for (const auto& phase : plan) {
      total += detail::phase_cost(
          phase, phase.link == detail::LinkClass::kIntra ? topo.intra : topo.inter);
    }
    return total;
  };
  double best = 0;
  if (algorithm != detail::kAuto) {
    best = cost(algorithm);
  } else if (op == CollectiveOp::kAllreduce) {
    // As AnalyticalCommModel decides "auto": the cheaper of tree and ring, rings on one node.
    best = cost("ring");
    if (topo.nodes > 1) best = std::min(cost("tree"), best);
  } else {
    best = cost(names.front());
    for (const auto& n : names) best = std::min(best, cost(n));
  }
  const Nanos t = saturating_nanos(best);
  if (t >= kMaxDuration) {
    return Error{std::string(collective_op_name(op)) + " of " + std::to_string(bytes) +
                 " bytes takes 1e15 ns (11.6 days) or more: out of range; check the fabric's "
                 "bandwidth and latency"};
  }
  return t;
}

Expected<std::unique_ptr<CommModel>> make_comm_model(const Topology& topo,
                                                     const ExchangeConfig& config) {
  DAGSGD_TRY(check_topology(topo));
  DAGSGD_TRY(collective_algorithms().check(config.algorithm));
  const bool measured = config.algorithm == kMeasuredAlgorithm;
  if (!(config.topk >= 0 && config.topk <= 1)) {
    return Error{"topk must be a fraction in [0, 1], got " + std::to_string(config.topk)};
  }
  if (config.ps_servers < 0 || config.ps_servers > kMaxWorkers) {
    return Error{"ps_servers must be from 0 to " + std::to_string(kMaxWorkers) + ", got " +
                 std::to_string(config.ps_servers)};
  }
  const MeasuredAllreduce* curve = nullptr;
  if ((measured || config.algorithm == detail::kAuto) && topo.workers() > 1 && !config.stack) {
    curve = measured_curve(topo);
  }
  if (measured && config.stack) {
    return Error{
        "algorithm 'measured' prices from a fabric's measured curve; with a stack the "
        "stack models the library: use 'auto' or a formula"};
  }
  if (config.stack) DAGSGD_TRY(validate_stack(*config.stack));
  if (measured) {
    if (config.topk > 0 || config.ps_servers > 0) {
      return Error{
          "algorithm 'measured' prices dense allreduces: it does not combine with top-k "
          "or parameter servers"};
    }
    if (topo.workers() > 1 && curve == nullptr) {
      return Error{"algorithm 'measured' needs a fabric with a measured allreduce curve for " +
                   std::to_string(topo.workers()) +
                   " ranks over one link (`dagsgd calibrate` writes one from a benchmark log)"};
    }
  }
  if (curve != nullptr && config.topk == 0 && config.ps_servers == 0) {
    // Beyond the curve, the growth of the algorithm the library ran there (when the fabric says).
    ExchangeConfig formula = config;
    formula.algorithm = curve->algorithm.empty() ? std::string(detail::kAuto) : curve->algorithm;
    return std::unique_ptr<CommModel>(std::make_unique<MeasuredCommModel>(
        *curve, std::make_unique<AnalyticalCommModel>(topo, formula), config.precision));
  }
  ExchangeConfig formula = config;
  if (measured) formula.algorithm = detail::kAuto;  // one worker: nothing to price
  return std::unique_ptr<CommModel>(std::make_unique<AnalyticalCommModel>(topo, formula));
}

}  // namespace dagsgd::model
