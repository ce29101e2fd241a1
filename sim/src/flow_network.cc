// The flow-level network tier (flow_network.h). Time inside is exact (double ns) so that an
// uncontended collective takes the analytical formula's time; only what the engine sees is
// rounded to whole nanoseconds.
#include "dagsgd/sim/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "dagsgd/model/check.h"

namespace dagsgd::sim {

using model::Nanos;
using model::TaskId;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A transfer this close to its end (ns) is done: later than that, its end would not move the
// clock (doubles near 1e9 ns are 1e-7 ns apart) and the engine counts whole nanoseconds anyway.
constexpr double kDoneWithin = 1e-3;

}  // namespace

std::vector<double> max_min_rates(const std::vector<const LinkUsage*>& usage,
                                  const std::vector<double>& cap,
                                  const std::vector<double>& capacity) {
  const std::size_t n = usage.size();
  std::vector<double> rate(n, -1);
  // The links the groups cross, numbered in order of first appearance (deterministic ties).
  // slot[link] is a link's local number during a call and -1 otherwise; it is kept between calls
  // so that a call costs what its groups cross, not what the cluster has.
  thread_local std::vector<int> slot;
  if (slot.size() < capacity.size()) slot.resize(capacity.size(), -1);
  std::vector<int> links;  // local number -> link
  std::vector<double> remaining;
  std::vector<double> demand;
  std::vector<std::size_t> first(n + 1, 0);  // group g's entries: [first[g], first[g + 1])
  std::vector<std::size_t> local;            // each entry's local link, in usage order
  for (std::size_t g = 0; g < n; ++g) {
    first[g] = local.size();
    for (const auto& [link, count] : *usage[g]) {
      int& s = slot[static_cast<std::size_t>(link)];
      if (s < 0) {
        s = static_cast<int>(links.size());
        links.push_back(link);
        remaining.push_back(capacity[static_cast<std::size_t>(link)]);
        demand.push_back(0);
      }
      demand[static_cast<std::size_t>(s)] += count;
      local.push_back(static_cast<std::size_t>(s));
    }
  }
  first[n] = local.size();
  for (int link : links) slot[static_cast<std::size_t>(link)] = -1;
  // The groups on each local link, in group order (a group crosses a link at most once).
  std::vector<std::size_t> on_begin(links.size() + 1, 0);
  for (std::size_t l : local) ++on_begin[l + 1];
  for (std::size_t l = 0; l < links.size(); ++l) on_begin[l + 1] += on_begin[l];
  std::vector<std::size_t> on(local.size(), n);  // n: an unused place (a link listed twice)
  std::vector<std::size_t> fill(on_begin.begin(), on_begin.end() - 1);
  for (std::size_t g = 0; g < n; ++g) {
    for (std::size_t e = first[g]; e < first[g + 1]; ++e) {
      const std::size_t l = local[e];
      if (fill[l] == on_begin[l] || on[fill[l] - 1] != g) on[fill[l]++] = g;
    }
  }
  std::size_t unfixed = n;
  std::vector<std::size_t> fixed;
  while (unfixed > 0) {
    double best = kInf;
    std::size_t link = links.size();  // the local link that fixes the rate; none: a cap
    std::size_t capped = n;
    for (std::size_t l = 0; l < remaining.size(); ++l) {
      if (demand[l] <= 0) continue;
      const double share = std::max(0.0, remaining[l]) / demand[l];
      if (share < best) {
        best = share;
        link = l;
      }
    }
    for (std::size_t g = 0; g < n; ++g) {
      if (rate[g] < 0 && cap[g] > 0 && cap[g] < best) {
        best = cap[g];
        link = links.size();
        capped = g;
      }
    }
    // The groups this bound fixes: those on the link, or the one capped group.
    fixed.clear();
    if (link < links.size()) {
      for (std::size_t i = on_begin[link]; i < on_begin[link + 1]; ++i) {
        if (on[i] < n && rate[on[i]] < 0) fixed.push_back(on[i]);
      }
    } else if (capped < n) {
      fixed.push_back(capped);
    } else {
      // Neither a link nor a cap bounds the rest: they cross no link.
      for (std::size_t g = 0; g < n; ++g) {
        if (rate[g] < 0) fixed.push_back(g);
      }
    }
    for (std::size_t g : fixed) {
      rate[g] = best;
      --unfixed;
      std::size_t e = first[g];
      for (const auto& entry : *usage[g]) {
        const std::size_t li = local[e++];
        if (std::isfinite(best)) remaining[li] -= entry.second * best;
        demand[li] -= entry.second;
      }
    }
  }
  return rate;
}

namespace {

// How many of a pattern phase's transfers cross each link.
LinkUsage link_usage(const ClusterTopology& cluster, const std::vector<model::Transfer>& t) {
  std::map<int, int> count;
  for (const auto& tr : t) {
    if (tr.src == tr.dst) continue;
    for (int l : cluster.route(tr.src, tr.dst)) ++count[l];
  }
  return LinkUsage(count.begin(), count.end());
}

// The rate a phase's transfers get with nothing else on the links: the least share of a link
// they cross (its capacity over the transfers on it), +inf on no link.
template <class Capacity>
double alone_rate(const LinkUsage& usage, const Capacity& capacity_of) {
  double rate = kInf;
  for (const auto& [link, count] : usage) rate = std::min(rate, capacity_of(link) / count);
  return rate;
}

}  // namespace

double isolated_time_ns(const ClusterTopology& cluster, const model::FlowPlan& plan,
                        double bandwidth_scale) {
  double t = 0;
  for (std::size_t k = 0; k < plan.amounts.size(); ++k) {
    t += plan.amounts[k].fixed;
    if (plan.amounts[k].bytes <= 0) continue;
    double rate = alone_rate(link_usage(cluster, plan.pattern->phases[k]), [&](int link) {
      return cluster.links()[static_cast<std::size_t>(link)].bandwidth * 1e-9 * bandwidth_scale;
    });
    if (plan.amounts[k].rate_cap > 0 && std::isfinite(rate)) {
      rate = std::min(rate, plan.amounts[k].rate_cap * bandwidth_scale);
    }
    if (std::isfinite(rate)) t += plan.amounts[k].bytes / rate;
  }
  return t;
}

void fit_plan_to(model::FlowPlan& plan, const ClusterTopology& cluster, double target) {
  double fixed = 0;
  double bytes = 0;
  for (const auto& a : plan.amounts) {
    fixed += a.fixed;
    bytes += a.bytes;
  }
  const double ideal = isolated_time_ns(cluster, plan);
  if (bytes <= 0 || target <= 0) return;
  if (target >= ideal) {
    const double extra = target - ideal;
    for (auto& a : plan.amounts) a.fixed += extra * a.bytes / bytes;
    return;
  }
  const double transfers = ideal - fixed;
  const double keep = fixed > 0 ? std::max(0.0, target - transfers) / fixed : 0;
  for (auto& a : plan.amounts) a.fixed *= keep;
  // Faster than the plan's transfers alone: the plan overstates what crosses the links for
  // each call (a stream of rooted collectives overlaps one call's broadcast with the next
  // one's reduction, which a plan of one call cannot). The measurement decides how long; the
  // transfers carry proportionally less, so that they still share the links as planned.
  if (target < transfers && transfers > 0) {
    for (auto& a : plan.amounts) a.bytes *= target / transfers;
  }
}

FlowNetwork::FlowNetwork(std::shared_ptr<const ClusterTopology> cluster, double bandwidth_scale)
    : cluster_(std::move(cluster)), bandwidth_scale_(bandwidth_scale) {
  DAGSGD_CHECK(cluster_ != nullptr && bandwidth_scale > 0);
  for (const auto& l : cluster_->links()) {
    capacity_.push_back(l.bandwidth * 1e-9 * bandwidth_scale);
    burst_.push_back(static_cast<double>(l.burst_bytes));
    shaped_ = shaped_ || l.burst_bytes > 0;
  }
  credit_ = burst_;
}

void FlowNetwork::assign(TaskId t, model::FlowPlan plan) {
  DAGSGD_CHECK(plan.pattern != nullptr && plan.amounts.size() == plan.pattern->phases.size());
  assigned_[t] = Assigned{std::move(plan)};
}

bool FlowNetwork::handles(TaskId t) const { return assigned_.count(t) != 0; }

const LinkUsage& FlowNetwork::usage_of(const model::FlowPattern& pattern, std::size_t phase) {
  auto& per_phase = usage_[&pattern];
  if (per_phase.empty()) {
    for (const auto& transfers : pattern.phases) {
      per_phase.push_back(link_usage(*cluster_, transfers));
    }
  }
  return per_phase[phase];
}

void FlowNetwork::enter_phase(Running& r, double now) {
  r.transferring = false;
  r.waiting = false;
  r.fixed_until = now + r.what->plan.amounts[r.phase].fixed;
}

void FlowNetwork::start(TaskId t, Nanos now) {
  const double at = std::max(static_cast<double>(now), clock_);
  progress_to(at);
  Running r;
  r.task = t;
  r.what = &assigned_.at(t);
  enter_phase(r, at);
  running_.push_back(r);
}

void FlowNetwork::progress_to(double now) {
  const double dt = now - clock_;
  if (dt > 0) {
    Segment seg{clock_, now, {}};
    std::vector<double> load;  // bytes/ns on each shaped link
    if (shaped_) load.assign(capacity_.size(), 0);
    for (auto& r : running_) {
      if (!r.transferring) continue;
      const double moved = std::isfinite(r.rate) ? r.rate * dt : r.remaining;
      r.remaining = std::max(0.0, r.remaining - moved);
      seg.flows.emplace_back(r.usage, moved / dt);
      if (shaped_) {
        for (const auto& [link, count] : *r.usage) {
          load[static_cast<std::size_t>(link)] += count * moved / dt;
        }
      }
    }
    if (!seg.flows.empty()) segments_.push_back(std::move(seg));
    for (std::size_t l = 0; l < load.size(); ++l) {
      if (burst_[l] <= 0) continue;
      credit_[l] = std::clamp(credit_[l] + (capacity_[l] - load[l]) * dt, 0.0, burst_[l]);
    }
  }
  clock_ = std::max(clock_, now);
}

void FlowNetwork::take_burst(Running& r) {
  if (!shaped_) return;
  double free = r.remaining;
  bool crosses_shaped = false;
  for (const auto& [link, count] : *r.usage) {
    const auto l = static_cast<std::size_t>(link);
    if (burst_[l] <= 0) continue;
    crosses_shaped = true;
    free = std::min(free, credit_[l] / count);
  }
  if (!crosses_shaped || !(free > 0)) return;
  r.remaining -= free;
  for (const auto& [link, count] : *r.usage) {
    const auto l = static_cast<std::size_t>(link);
    if (burst_[l] > 0) credit_[l] = std::max(0.0, credit_[l] - free * count);
  }
}

std::vector<LinkLoad> FlowNetwork::loads(double from, double to) const {
  std::vector<LinkLoad> out(capacity_.size());
  std::vector<double> busy_until(capacity_.size(), -kInf);
  for (const auto& seg : segments_) {
    const double a = std::max(from, seg.from);
    const double b = std::min(to, seg.to);
    if (b <= a) continue;
    for (const auto& [usage, rate] : seg.flows) {
      for (const auto& [link, count] : *usage) {
        auto& load = out[static_cast<std::size_t>(link)];
        load.bytes += count * rate * (b - a);
        // Count a segment's time once per link, however many phases cross it.
        auto& until = busy_until[static_cast<std::size_t>(link)];
        if (until < b) {
          load.busy_ns += b - std::max(a, until);
          until = b;
        }
      }
    }
  }
  return out;
}

void FlowNetwork::recompute_rates() {
  std::vector<const LinkUsage*> usage;
  std::vector<double> caps;
  std::vector<Running*> who;
  for (auto& r : running_) {
    if (!r.transferring) continue;
    usage.push_back(r.usage);
    // A stack's per-transfer limit of this phase (0: none).
    caps.push_back(r.what->plan.amounts[r.phase].rate_cap * bandwidth_scale_);
    who.push_back(&r);
  }
  if (who.empty()) return;
  if (who.size() == 1) {
    // One phase alone: max_min_rates' first bound, the least share of a link (or its cap).
    auto [known, fresh] = alone_rate_.emplace(usage.front(), kInf);
    if (fresh) {
      known->second = alone_rate(*usage.front(), [this](int link) {
        return std::max(0.0, capacity_[static_cast<std::size_t>(link)]);
      });
    }
    const double cap = caps.front();
    who.front()->rate = cap > 0 && cap < known->second ? cap : known->second;
    return;
  }
  const auto rates = max_min_rates(usage, caps, capacity_);
  for (std::size_t g = 0; g < who.size(); ++g) who[g]->rate = rates[g];
}

bool FlowNetwork::pair_taken(const Running& r) const {
  auto pair = [](const model::Transfer& x) { return std::minmax(x.src, x.dst); };
  const auto& mine = r.what->plan.pattern->phases[r.phase];
  for (const auto& o : running_) {
    if (&o == &r || !o.transferring) continue;
    for (const auto& a : o.what->plan.pattern->phases[o.phase]) {
      for (const auto& b : mine) {
        if (pair(a) == pair(b)) return true;
      }
    }
  }
  return false;
}

double FlowNetwork::next_exact() const {
  double t = kInf;
  for (const auto& r : running_) {
    if (r.waiting) continue;  // starts when a phase that holds its pairs ends
    if (!r.transferring) {
      t = std::min(t, r.fixed_until);
    } else {
      t = std::min(t, r.rate > 0 && std::isfinite(r.rate) ? clock_ + r.remaining / r.rate : clock_);
    }
  }
  return t;
}

Nanos FlowNetwork::next_event() const {
  const double t = next_exact();
  return std::isfinite(t) ? std::llround(t) : kNever;
}

void FlowNetwork::advance(Nanos now, std::vector<TaskId>& finished) {
  // Every internal event that rounds to `now`, in time order; phases that take no time follow
  // at once.
  for (;;) {
    const double t = next_exact();
    if (!(t <= static_cast<double>(now) + 0.5)) break;
    progress_to(t);
    bool rates_changed = false;
    std::vector<Running> still;
    still.reserve(running_.size());
    for (auto& r : running_) {
      const auto& amount = r.what->plan.amounts[r.phase];
      bool phase_done = false;
      if (!r.transferring && !r.waiting && r.fixed_until <= t) {
        const LinkUsage& u = usage_of(*r.what->plan.pattern, r.phase);
        if (amount.bytes > 0 && !u.empty()) {
          r.waiting = true;  // starts below, once its rank pairs are free
        } else {
          phase_done = true;
        }
      } else if (r.transferring && (r.remaining <= 1e-9 * std::max(1.0, amount.bytes) ||
                                    r.remaining <= r.rate * kDoneWithin)) {
        phase_done = true;
        rates_changed = true;
      }
      if (phase_done) {
        ++r.phase;
        if (r.phase == r.what->plan.amounts.size()) {
          finished.push_back(r.task);
          continue;
        }
        enter_phase(r, t);
      }
      still.push_back(r);
    }
    running_ = std::move(still);
    // The phases ready to move data start, in the order the collectives started.
    for (auto& r : running_) {
      if (!r.waiting || (serial_peers_ && pair_taken(r))) continue;
      r.waiting = false;
      r.transferring = true;
      r.remaining = r.what->plan.amounts[r.phase].bytes;
      r.usage = &usage_of(*r.what->plan.pattern, r.phase);
      take_burst(r);
      rates_changed = true;
    }
    if (rates_changed) recompute_rates();
  }
}

std::vector<LinkUse> busiest_links(const FlowNetwork& net, double from, double to,
                                   std::size_t shown) {
  const auto loads = net.loads(from, to);
  const auto& cluster = net.cluster();
  std::vector<std::size_t> order;
  for (std::size_t l = 0; l < loads.size(); ++l) {
    if (loads[l].bytes > 0) order.push_back(l);
  }
  // The most utilised first: the links whose bandwidth bounds the transfers.
  auto utilization = [&](std::size_t l) {
    return loads[l].bytes / net.capacity(static_cast<int>(l));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return utilization(a) > utilization(b); });
  if (order.size() > shown) order.resize(shown);
  std::vector<LinkUse> out;
  const double span = std::max(1.0, to - from);
  for (std::size_t l : order) {
    const auto& link = cluster.links()[l];
    const auto& dev = cluster.devices();
    out.push_back({dev[static_cast<std::size_t>(link.from)].name + " -> " +
                       dev[static_cast<std::size_t>(link.to)].name,
                   link.kind, loads[l].busy_ns / span,
                   loads[l].bytes / (net.capacity(static_cast<int>(l)) * span),
                   loads[l].bytes * 1e-9});
  }
  return out;
}

}  // namespace dagsgd::sim
