// The DAG of a `dagsgd train` run: each rank's phase spans in program order, one join per
// gradient collective across the ranks, and each rank's lag until it observed the completion.
#include <algorithm>
#include <iterator>
#include <map>

#include "trace_dag_builder.h"

namespace dagsgd::trace::detail {

namespace {

// Our runtime's exchanges as the trace names them (runtime/exchange.h): "asa" and "rsag" are
// allreduces by the model's rows of those names; "ps" (rank 0 the one server) has no plan in the
// model; the others are the collective's own name.
CollectiveKind runtime_collective_kind(const std::string& name) {
  if (is_runtime_allreduce(name)) return CollectiveKind::kAllreduce;
  return classify_collective(name);
}

class SsgdBuilder : public Builder {
 public:
  SsgdBuilder(const ImportedRun& run, TraceDag& out)
      : Builder(run, out),
        links_(run.ranks.size()),
        waits_(run.ranks.size()),
        comm_res_(resource("collectives")),
        // A collective's startup and its slowest rank's tail overlap other collectives
        // (model::CollectivePhases); measured, both are zero-length.
        overlap_res_(resource("collective startups and tails", 1 << 20)) {}

  model::Expected<void> build() {
    out_.mode = TraceMode::kSsgd;
    out_.concurrent_resource = overlap_res_;
    out_.rank_bounds.assign(run_.ranks.size(), {});
    for (std::size_t ri = 0; ri < run_.ranks.size(); ++ri) read_rank(ri);
    join_collectives();
    set_wait_durations();
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
      if (!out_.rank_bounds[r].empty()) out_.rank_bounds[r].push_back(last_end_[r]);
    }
    return model::ok();
  }

 private:
  struct Key {
    int iteration;
    int bucket;
    bool operator<(const Key& o) const {
      return iteration != o.iteration ? iteration < o.iteration : bucket < o.bucket;
    }
  };
  // Per rank and collective: the task that issued it and the wait that consumed it.
  struct Link {
    TaskId issuer = model::kNoTask;
    TaskId consumer = model::kNoTask;
  };
  using MainTasks = std::vector<std::pair<Nanos, TaskId>>;  // start, task (issuer lookup)

  // The rank's main-thread spans become a chain of tasks; its collectives' spans (on the
  // progress thread) are registered for the joins.
  void read_rank(std::size_t ri) {
    const auto& rank = run_.ranks[ri];
    auto res = resource("rank" + std::to_string(ri) + ".main");
    TaskId prev = model::kNoTask;
    int prev_iter = -1;
    MainTasks main;
    std::vector<std::int32_t> comm_events;
    for (std::size_t ei = 0; ei < rank.events.size(); ++ei) {
      const auto& e = rank.events[ei];
      if (e.category == EventCategory::kAnnotation && e.tid == 0 &&
          starts_with(rank.str(e.name), "ProfilerStep#")) {
        if (ri == 0) {
          out_.measured_iteration.push_back(e.dur);
          out_.iteration_names.push_back(rank.str(e.name));
        }
        out_.rank_bounds[ri].push_back(e.ts - run_.origin);
        last_end_[ri] = e.ts + e.dur - run_.origin;
        continue;
      }
      if (e.category != EventCategory::kCpuOp || e.phase == Phase::kNone) continue;
      if (e.tid != 0) {
        if (e.phase == Phase::kComm) comm_events.push_back(static_cast<std::int32_t>(ei));
        continue;
      }
      auto [t, info] = of_event(ri, ei, res);
      t.layer = e.layer;
      t.iteration = clamp_iter(e.iteration);
      t.kind = kind_of_phase(e.phase);
      info.main_thread = true;
      info.phase = e.phase;
      TaskId id = add(t, info);
      if (rank.str(e.name) == "comm_wait") waits_[ri][e.iteration] = id;
      if (prev != model::kNoTask) {
        out_.dag.add_edge(
            prev, id,
            prev_iter != e.iteration ? EdgeKind::kIterationBoundary : EdgeKind::kSequence);
      }
      if (ri == 0 && prev_iter != e.iteration) out_.boundary_task.push_back(id);
      if (ri == 0) out_.end_task = id;
      prev = id;
      prev_iter = e.iteration;
      main.push_back({e.ts, id});
    }
    for (std::int32_t ei : comm_events) {
      register_collective(ri, rank.events[static_cast<std::size_t>(ei)], main);
    }
  }

  void register_collective(std::size_t ri, const ImportedEvent& e, const MainTasks& main) {
    const auto& rank = run_.ranks[ri];
    Key key{e.iteration, e.bucket};
    auto [it, fresh] = coll_index_.emplace(key, out_.collectives.size());
    if (fresh) {
      TraceCollective c;
      c.name = e.collective >= 0 ? rank.str(e.collective) : "allreduce";
      c.kind = runtime_collective_kind(c.name);
      c.bytes = std::max<std::int64_t>(0, e.bytes);
      c.iteration = e.iteration;
      c.group = e.bucket;
      c.arrive.assign(run_.ranks.size(), -1);
      c.span_start.assign(run_.ranks.size(), -1);
      c.span_end.assign(run_.ranks.size(), -1);
      out_.collectives.push_back(c);
    }
    auto& c = out_.collectives[it->second];
    // The issuing span starts where the collective's span starts (docs/runtime.md).
    auto up = std::upper_bound(main.begin(), main.end(), std::make_pair(e.ts, INT32_MAX));
    Link& l = links_[ri][key];
    auto w = waits_[ri].find(e.iteration);
    if (up != main.begin() && w != waits_[ri].end() && std::prev(up)->second == w->second &&
        std::prev(up) != main.begin()) {
      // EASGD: the collective runs inside the blocking elastic step (comm_wait); it is issued
      // by what precedes the wait.
      --up;
    }
    if (up != main.begin()) {
      l.issuer = std::prev(up)->second;
      const auto& ti = out_.tasks[static_cast<std::size_t>(l.issuer)];
      c.arrive[ri] = ti.measured_start + ti.measured_dur;
    }
    c.span_start[ri] = e.ts - run_.origin;
    c.span_end[ri] = e.ts + e.dur - run_.origin;
    if (w != waits_[ri].end()) l.consumer = w->second;
  }

  // One join per collective. Its measured service time runs from the last arrival (or the
  // completion of the collective before it: one progress engine, one comm resource in the DAG)
  // to the first rank that observed its completion. The ranks do not finish together: under
  // Open MPI's reduce + broadcast the root is done when its broadcast is sent, the others when
  // it has arrived, and a rank observes completion only at its next progress call or wait.
  // Each rank's lag after the first completion is a task of its own after the join
  // (rank_tails), so a replay onto another fabric can replace it with that fabric's modeled
  // spread between ranks instead of keeping it as fixed wait time.
  void join_collectives() {
    Nanos prev_end = 0;
    for (std::size_t ci = 0; ci < out_.collectives.size(); ++ci) {
      auto& c = out_.collectives[ci];
      Nanos last_arrive = 0;
      Nanos first_end = INT64_MAX;
      int n = 0;
      for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
        if (c.span_end[r] < 0) continue;
        last_arrive = std::max(last_arrive, c.arrive[r]);
        first_end = std::min(first_end, c.span_end[r]);
        ++n;
      }
      c.ranks = n;
      c.joined = n > 1;
      Nanos join_end = 0;  // where the join ends as measured: after the one before it, too
      if (n > 0) {
        c.measured = std::max<Nanos>(0, first_end - std::max(last_arrive, prev_end));
        c.completed = first_end;
        join_end = std::max(last_arrive, prev_end) + c.measured;
        prev_end = join_end;
      }
      join_ends_.push_back(join_end);
      add_join(ci, last_arrive, join_end);
    }
  }

  void add_join(std::size_t ci, Nanos last_arrive, Nanos join_end) {
    auto& c = out_.collectives[ci];
    Task t;
    t.duration = c.measured;
    t.resource = comm_res_;
    t.worker = -1;
    t.layer = c.group;
    t.iteration = clamp_iter(c.iteration);
    t.kind = TaskKind::kComm;
    TraceTask info;
    info.rank = -1;
    info.collective = static_cast<std::int32_t>(ci);
    info.measured_start = last_arrive;
    info.measured_dur = 0;
    info.phase = Phase::kComm;
    Task edge_task = t;
    edge_task.duration = 0;
    edge_task.resource = overlap_res_;
    c.startup_task = add(edge_task, info);
    info.measured_dur = c.measured;
    c.task = add(t, info);
    out_.dag.add_edge(c.startup_task, c.task, EdgeKind::kSequence);
    c.rank_tails.assign(run_.ranks.size(), model::kNoTask);
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
      auto l = links_[r].find(Key{c.iteration, c.group});
      if (l == links_[r].end()) continue;
      const Link& link = l->second;
      if (link.issuer != model::kNoTask) {
        out_.dag.add_edge(link.issuer, c.startup_task, EdgeKind::kCollectiveJoin);
      }
      // EASGD's elastic step runs after its wait: only a wait that follows the issue consumes.
      if (link.consumer == model::kNoTask || link.issuer == model::kNoTask ||
          out_.tasks[static_cast<std::size_t>(link.consumer)].measured_start <=
              out_.tasks[static_cast<std::size_t>(link.issuer)].measured_start) {
        continue;
      }
      // The rank's lag: from the join's end to its own observation of the completion.
      TraceTask tail_info = info;
      tail_info.measured_start = join_end;
      tail_info.measured_dur = std::max<Nanos>(0, c.span_end[r] - join_end);
      Task tail = edge_task;
      tail.duration = tail_info.measured_dur;
      c.rank_tails[r] = add(tail, tail_info);
      out_.dag.add_edge(c.task, c.rank_tails[r], EdgeKind::kSequence);
      out_.dag.add_edge(c.rank_tails[r], link.consumer, EdgeKind::kData);
    }
    const auto others = static_cast<std::size_t>(
        std::count_if(c.rank_tails.begin() + 1, c.rank_tails.end(),
                      [](model::TaskId id) { return id != model::kNoTask; }));
    if (c.rank_tails.empty() || c.rank_tails[0] == model::kNoTask || others == 0) return;
    TraceTask spread_info = info;
    spread_info.measured_start = join_end;
    spread_info.measured_dur = 0;
    c.spread_task = add(edge_task, spread_info);
    out_.dag.add_edge(c.task, c.spread_task, EdgeKind::kSequence);
    for (std::size_t r = 1; r < c.rank_tails.size(); ++r) {
      if (c.rank_tails[r] != model::kNoTask) {
        out_.dag.add_edge(c.spread_task, c.rank_tails[r], EdgeKind::kSequence);
      }
    }
  }

  // A wait's own duration: from the rank's observation of its last collective to its end.
  void set_wait_durations() {
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
      for (const auto& [iter, wid] : waits_[r]) {
        Nanos last_seen = -1;
        for (std::size_t ci = 0; ci < out_.collectives.size(); ++ci) {
          const auto& c = out_.collectives[ci];
          if (c.iteration == iter && c.span_end[r] >= 0 && !c.rank_tails.empty() &&
              c.rank_tails[r] != model::kNoTask) {
            last_seen = std::max({last_seen, c.span_end[r], join_ends_[ci]});
          }
        }
        const auto& ti = out_.tasks[static_cast<std::size_t>(wid)];
        if (last_seen < 0) continue;
        Nanos end = ti.measured_start + ti.measured_dur;
        out_.dag.mutable_task(wid).duration =
            std::clamp<Nanos>(end - std::max(last_seen, ti.measured_start), 0, ti.measured_dur);
      }
    }
  }

  std::map<Key, std::size_t> coll_index_;
  std::vector<std::map<Key, Link>> links_;
  std::vector<std::map<int, TaskId>> waits_;
  std::vector<Nanos> join_ends_;
  std::map<std::size_t, Nanos> last_end_;
  model::ResourceId comm_res_;
  model::ResourceId overlap_res_;
};

}  // namespace

model::Expected<void> build_ssgd_dag(const ImportedRun& run, TraceDag& out) {
  return SsgdBuilder(run, out).build();
}

}  // namespace dagsgd::trace::detail
