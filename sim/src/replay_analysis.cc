// Reading a replay's timelines (replay_analysis.h): breakdowns per rank, the critical path of
// a typical iteration, stragglers.
#include "replay_analysis.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace dagsgd::sim::detail {

using model::Nanos;
using model::TaskId;
using model::TaskKind;
using trace::TraceDag;

namespace {

enum class Cls { kCompute, kComm, kMemcpy, kHost };

Cls class_of(const TraceDag& td, TaskId id) {
  switch (td.dag.task(id).kind) {
    case TaskKind::kMemcpy:
      return Cls::kMemcpy;
    case TaskKind::kH2D:
      return td.mode == trace::TraceMode::kKineto ? Cls::kMemcpy : Cls::kCompute;
    case TaskKind::kOther:
      return Cls::kHost;
    case TaskKind::kComm:
      return Cls::kComm;
    default:
      return Cls::kCompute;
  }
}

// The largest class on the critical path names the bound.
std::string bound_of(const std::vector<PathShare>& path) {
  Nanos compute = 0;
  Nanos comm = 0;
  Nanos host = 0;
  Nanos copy = 0;
  for (const auto& p : path) {
    if (p.what == "comm") {
      comm += p.time;
    } else if (p.what.rfind("host", 0) == 0 || p.what == "other" || p.what == "wait") {
      host += p.time;
    } else if (p.what == "memcpy") {
      copy += p.time;
    } else {
      compute += p.time;
    }
  }
  Nanos top = std::max({compute, comm, host, copy});
  return top == comm && comm > 0   ? "communication-bound"
         : top == host && host > 0 ? "host-bound"
         : top == copy && copy > 0 ? "memcpy-bound"
                                   : "compute-bound";
}

// Sorts `spans` by start. They come as a few sorted runs (one per thread or stream, each in
// time order): runs are merged pairwise, in about log2(runs) passes rather than a full sort.
void sort_runs(std::vector<std::pair<Cls, Interval>>& spans) {
  const auto by_start = [](const auto& a, const auto& b) {
    return a.second.first < b.second.first;
  };
  std::vector<std::size_t> bounds{0};
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (by_start(spans[i], spans[i - 1])) bounds.push_back(i);
  }
  bounds.push_back(spans.size());
  while (bounds.size() > 2) {
    std::vector<std::size_t> merged{0};
    for (std::size_t k = 2; k < bounds.size(); k += 2) {
      std::inplace_merge(spans.begin() + static_cast<std::ptrdiff_t>(bounds[k - 2]),
                         spans.begin() + static_cast<std::ptrdiff_t>(bounds[k - 1]),
                         spans.begin() + static_cast<std::ptrdiff_t>(bounds[k]), by_start);
      merged.push_back(bounds[k]);
    }
    if (merged.back() != spans.size()) merged.push_back(spans.size());
    bounds = std::move(merged);
  }
}

}  // namespace

// Per rank, per iteration of `windows`, on the measured or simulated timeline.
std::vector<std::vector<RankTime>> iteration_breakdowns(
    const TraceDag& td, const SimResult* sim, const std::vector<std::vector<Interval>>& windows) {
  const int nr = td.ranks;
  std::vector<std::vector<std::pair<Cls, Interval>>> per_rank(static_cast<std::size_t>(nr));
  for (TaskId t = 0; t < static_cast<TaskId>(td.tasks.size()); ++t) {
    const auto& info = td.tasks[static_cast<std::size_t>(t)];
    if (info.rank < 0 || info.collective >= 0) continue;
    if (info.gap && !info.in_op) continue;  // nothing recorded runs: idle
    Interval iv = sim ? Interval{sim->start[static_cast<std::size_t>(t)],
                                 sim->finish[static_cast<std::size_t>(t)]}
                      : Interval{info.measured_start, info.measured_start + info.measured_dur};
    per_rank[static_cast<std::size_t>(info.rank)].push_back({class_of(td, t), iv});
  }
  for (const auto& c : td.collectives) {
    for (int r = 0; r < nr; ++r) {
      auto ru = static_cast<std::size_t>(r);
      if (c.span_end[ru] < 0) continue;
      Interval iv{c.span_start[ru], c.span_end[ru]};
      if (sim) {
        auto ti = static_cast<std::size_t>(c.task);
        iv = {sim->start[ti], sim->finish[ti]};
      }
      per_rank[ru].push_back({Cls::kComm, iv});
    }
  }
  std::vector<std::vector<RankTime>> out(static_cast<std::size_t>(nr));
  for (int r = 0; r < nr; ++r) {
    // Each window reads only the spans that can reach into it: by start, those from the first
    // whose running latest end passes the window's start up to the first starting after its end
    // (every window scanning every span was a tenth of `analyze` of a 48-iteration trace). The
    // unions below do not depend on the order the spans come in.
    auto& spans = per_rank[static_cast<std::size_t>(r)];
    sort_runs(spans);
    std::vector<Nanos> reach(spans.size());
    Nanos latest = INT64_MIN;
    for (std::size_t i = 0; i < spans.size(); ++i) {
      latest = std::max(latest, spans[i].second.second);
      reach[i] = latest;
    }
    for (const auto& [lo, hi] : windows[static_cast<std::size_t>(r)]) {
      RankTime t;
      t.rank = r;
      std::vector<Interval> cls[4];
      std::vector<Interval> all;
      const auto from = static_cast<std::size_t>(std::upper_bound(reach.begin(), reach.end(), lo) -
                                                 reach.begin());
      for (std::size_t i = from; i < spans.size() && spans[i].second.first < hi; ++i) {
        const auto& [c, iv] = spans[i];
        Interval x{std::max(iv.first, lo), std::min(iv.second, hi)};
        if (x.second <= x.first) continue;
        cls[static_cast<int>(c)].push_back(x);
        all.push_back(x);
      }
      auto compute = merge(cls[0]);
      auto comm = merge(cls[1]);
      t.window = hi - lo;
      t.compute = length(compute);
      t.comm_total = length(comm);
      t.overlap = length_and(comm, compute);
      t.comm_exposed = t.comm_total - t.overlap;
      t.memcpy = length(merge(cls[2]));
      t.host = length(merge(cls[3]));
      t.idle = (hi - lo) - length(merge(all));
      out[static_cast<std::size_t>(r)].push_back(t);
    }
  }
  return out;
}

std::vector<RankTime> breakdowns(const TraceDag& td, const SimResult* sim,
                                 const std::vector<std::vector<Interval>>& windows, int warmup) {
  std::vector<RankTime> out;
  for (const auto& its : iteration_breakdowns(td, sim, windows)) {
    RankTime sum;
    sum.rank = static_cast<int>(out.size());
    int n = 0;
    for (std::size_t k = static_cast<std::size_t>(warmup); k < its.size(); ++k, ++n) {
      const RankTime& t = its[k];
      sum.window += t.window;
      sum.compute += t.compute;
      sum.comm_total += t.comm_total;
      sum.comm_exposed += t.comm_exposed;
      sum.overlap += t.overlap;
      sum.memcpy += t.memcpy;
      sum.host += t.host;
      sum.idle += t.idle;
    }
    if (n > 0) {
      for (Nanos* f : {&sum.window, &sum.compute, &sum.comm_total, &sum.comm_exposed, &sum.overlap,
                       &sum.memcpy, &sum.host, &sum.idle}) {
        *f /= n;
      }
    }
    out.push_back(sum);
  }
  return out;
}

std::vector<Nanos> sim_iterations(const TraceDag& td, const SimResult& r) {
  std::vector<Nanos> out;
  const auto& b = td.boundary_task;
  for (std::size_t k = 0; k < b.size(); ++k) {
    Nanos s = r.start[static_cast<std::size_t>(b[k])];
    Nanos e = k + 1 < b.size() ? r.start[static_cast<std::size_t>(b[k + 1])]
                               : r.finish[static_cast<std::size_t>(td.end_task)];
    out.push_back(e - s);
  }
  return out;
}

double mean_s(const std::vector<Nanos>& v, int warmup) {
  double s = 0;
  int n = 0;
  for (std::size_t k = static_cast<std::size_t>(warmup); k < v.size(); ++k) {
    s += static_cast<double>(v[k]);
    ++n;
  }
  return n > 0 ? s / n * 1e-9 : 0;
}

void analyze_critical_path(const TraceDag& td, const std::vector<Interval>& sim_main,
                           ReplayResult& out) {
  // Critical path of a typical iteration: the median simulated one after the warm-up.
  if (sim_main.empty()) return;
  std::vector<std::pair<Nanos, std::size_t>> by_time;
  for (std::size_t k = static_cast<std::size_t>(out.warmup); k < sim_main.size(); ++k) {
    by_time.push_back({out.predicted_iteration[k], k});
  }
  if (by_time.empty()) by_time.push_back({0, sim_main.size() - 1});
  std::sort(by_time.begin(), by_time.end());
  const std::size_t k = by_time[by_time.size() / 2].second;
  out.critical_path_iteration = static_cast<int>(k);
  auto [lo, hi] = sim_main[k];
  std::map<std::string, Nanos> share;
  std::set<int> ranks;
  TaskId t = k + 1 < td.boundary_task.size()
                 ? out.sim.gate[static_cast<std::size_t>(td.boundary_task[k + 1])]
                 : td.end_task;
  Nanos cursor = hi;
  std::vector<std::string> names;
  while (t != model::kNoTask) {
    auto ti = static_cast<std::size_t>(t);
    if (out.sim.finish[ti] <= lo && out.sim.start[ti] < lo) break;
    Nanos s = std::max(out.sim.start[ti], lo);
    Nanos e = std::min(out.sim.finish[ti], cursor);
    const auto& info = td.tasks[ti];
    std::string what = info.rank < 0 || td.dag.task(t).kind == TaskKind::kComm
                           ? "comm"
                           : (info.gap ? std::string("host:") + trace::phase_name(info.phase)
                                       : model::task_kind_name(td.dag.task(t).kind));
    if (info.gap && info.phase == trace::Phase::kNone) what = "host";
    if (e > s) share[what] += e - s;
    if (info.rank >= 0) ranks.insert(info.rank);
    ++out.critical_path_length;
    if (names.size() < 40) {
      std::string n = info.rank < 0 ? "join" : "rank" + std::to_string(info.rank);
      if (info.rank < 0 && info.collective >= 0) {
        n += " " + td.collectives[static_cast<std::size_t>(info.collective)].name;
      } else if (info.name >= 0) {
        n += " '" + td.task_name(t) + "'";
      } else {
        n += " host gap";
      }
      names.push_back(n);
    }
    TaskId g = out.sim.gate[ti];
    Nanos gate_end = g == model::kNoTask ? lo : out.sim.finish[static_cast<std::size_t>(g)];
    if (s > std::max(gate_end, lo)) share["wait"] += s - std::max(gate_end, lo);
    cursor = s;
    if (s <= lo) break;
    t = g;
  }
  std::reverse(names.begin(), names.end());
  out.critical_path_tasks = names;
  out.critical_path_ranks.assign(ranks.begin(), ranks.end());
  for (const auto& [what, v] : share) out.critical_path.push_back({what, v});
  std::stable_sort(out.critical_path.begin(), out.critical_path.end(),
                   [](const PathShare& a, const PathShare& b) { return a.time > b.time; });
  out.bound = bound_of(out.critical_path);
}

std::vector<Straggler> find_stragglers(const TraceDag& td) {
  std::vector<Straggler> stragglers;
  // Stragglers: the last rank to arrive at each joined collective.
  for (std::size_t ci = 0; ci < td.collectives.size(); ++ci) {
    const auto& c = td.collectives[ci];
    if (!c.joined) continue;
    int late = -1;
    Nanos first = INT64_MIN;
    Nanos second = INT64_MIN;
    for (std::size_t r = 0; r < c.arrive.size(); ++r) {
      Nanos a = c.arrive[r];
      if (a < 0 && c.span_end[r] < 0) continue;
      if (a > first) {
        second = first;
        first = a;
        late = static_cast<int>(r);
      } else if (a > second) {
        second = a;
      }
    }
    if (late >= 0 && second != INT64_MIN && first > second) {
      stragglers.push_back({static_cast<int>(ci), late, first - second});
    }
  }
  return stragglers;
}

}  // namespace dagsgd::sim::detail
