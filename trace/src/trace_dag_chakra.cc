// The DAG of Chakra execution traces (RunSource::kChakra): one task per node with the node's
// duration, the file's dependencies as edges, and the k-th collective of every rank joined into
// one cross-rank task as the Kineto builder joins them. Iterations: what the files say (dagsgd
// export writes them), else the nodes' `iteration` attributes, else the whole trace as one.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace_dag_builder.h"

namespace dagsgd::trace::detail {

namespace {

class ChakraBuilder : public Builder {
 public:
  using Builder::Builder;

  model::Expected<void> build() {
    out_.mode = TraceMode::kKineto;
    out_.main_rank = 0;
    const std::size_t nr = run_.ranks.size();
    task_of_.resize(nr);
    comm_.resize(nr);
    const auto coll_res = resource("collectives", 1 << 20);
    out_.concurrent_resource = coll_res;
    for (std::size_t r = 0; r < nr; ++r) add_rank_tasks(r);
    join_collectives(coll_res);
    for (std::size_t r = 0; r < nr; ++r) add_rank_edges(r);
    bool timed = true;
    for (const auto& r : run_.ranks) timed = timed && r.chakra.timed;
    if (!timed) derive_starts();
    iterations();
    return model::ok();
  }

 private:
  static TaskKind kind_of(const ImportedEvent& e, std::int8_t stated) {
    if (stated >= 0) return static_cast<TaskKind>(stated);
    if (e.collective >= 0) return TaskKind::kComm;
    if (e.phase != Phase::kNone) return kind_of_phase(e.phase);
    return e.gpu ? TaskKind::kForward : TaskKind::kOther;
  }

  void add_rank_tasks(std::size_t r) {
    const ImportedRank& rank = run_.ranks[r];
    // A Chakra trace has no resources, only dependencies: every node of a rank may run as soon
    // as its dependencies are done.
    const auto res = resource("r" + std::to_string(r) + ".nodes", 1 << 20);
    auto& tasks = task_of_[r];
    tasks.reserve(rank.events.size());
    for (std::size_t i = 0; i < rank.events.size(); ++i) {
      const ImportedEvent& e = rank.events[i];
      EventTask et = of_event(r, i, res);
      et.task.kind = kind_of(e, rank.chakra.task_kind[i]);
      et.task.layer = e.layer >= 0 ? std::stoi(rank.str(e.layer)) : -1;
      et.task.iteration = clamp_iter(e.iteration >= 0 ? std::stoi(rank.str(e.iteration)) : 0);
      et.info.main_thread = !e.gpu;
      et.info.phase = e.collective >= 0 ? Phase::kComm : e.phase;
      const TaskId id = add(et.task, et.info);
      tasks.push_back(id);
      if (e.collective >= 0) comm_[r].push_back(i);
    }
  }

  TraceCollective new_collective(std::size_t r, std::size_t i) const {
    const std::size_t nr = run_.ranks.size();
    const ImportedRank& rank = run_.ranks[r];
    const ImportedEvent& e = rank.events[i];
    TraceCollective c;
    c.arrive.assign(nr, -1);
    c.span_start.assign(nr, -1);
    c.span_end.assign(nr, -1);
    c.name = rank.str(e.collective);
    c.kind = classify_collective(c.name);
    c.bytes = e.bytes;
    c.ranks = e.group_size > 0 ? e.group_size : rank.world_size;
    c.iteration = out_.dag.task(task_of_[r][i]).iteration;
    return c;
  }

  // The k-th collective of every rank is one collective when every rank has as many and each
  // spans the run (comm_ranks unstated or the rank count); else each keeps its own task.
  void join_collectives(model::ResourceId coll_res) {
    const std::size_t nr = run_.ranks.size();
    bool join = nr >= 2;
    for (std::size_t r = 0; r < nr && join; ++r) {
      if (comm_[r].size() != comm_[0].size()) join = false;
      for (std::size_t i : comm_[r]) {
        const ImportedEvent& e = run_.ranks[r].events[i];
        if (e.group_size > 0 && e.group_size != static_cast<int>(nr)) join = false;
      }
    }
    if (!join) {
      for (std::size_t r = 0; r < nr; ++r) {
        for (std::size_t k = 0; k < comm_[r].size(); ++k) keep_own(r, k);
      }
      return;
    }
    for (std::size_t k = 0; k < comm_[0].size(); ++k) {
      TraceCollective c = new_collective(0, comm_[0][k]);
      c.ranks = static_cast<int>(nr);
      c.joined = true;
      c.group = static_cast<int>(k);
      Nanos last_arrive = INT64_MIN;
      Nanos dur = 0;
      for (std::size_t r = 0; r < nr; ++r) {
        const TaskId id = task_of_[r][comm_[r][k]];
        const auto& ti = out_.tasks[static_cast<std::size_t>(id)];
        c.arrive[r] = ti.measured_start;
        c.span_start[r] = ti.measured_start;
        c.span_end[r] = ti.measured_start + ti.measured_dur;
        last_arrive = std::max(last_arrive, ti.measured_start);
        // Every rank's node carries the collective's service time after the last arrival.
        dur = std::max(dur, ti.measured_dur);
      }
      c.measured = dur;
      Task t;
      t.duration = dur;
      t.resource = coll_res;
      t.worker = -1;
      t.iteration = static_cast<std::int16_t>(c.iteration);
      t.kind = TaskKind::kComm;
      TraceTask info;
      info.rank = -1;
      info.collective = static_cast<std::int32_t>(out_.collectives.size());
      info.measured_start = last_arrive;
      info.measured_dur = dur;
      info.phase = Phase::kComm;
      c.task = add(t, info);
      // Each rank's node becomes its arrival (zero length) before the join.
      for (std::size_t r = 0; r < nr; ++r) {
        const TaskId id = task_of_[r][comm_[r][k]];
        out_.dag.mutable_task(id).duration = 0;
        out_.tasks[static_cast<std::size_t>(id)].collective = info.collective;
        edge(id, c.task, EdgeKind::kCollectiveJoin);
        joined_.emplace(id, c.task);
      }
      out_.collectives.push_back(std::move(c));
    }
  }

  void keep_own(std::size_t r, std::size_t k) {
    const TaskId id = task_of_[r][comm_[r][k]];
    const auto& ti = out_.tasks[static_cast<std::size_t>(id)];
    TraceCollective c = new_collective(r, comm_[r][k]);
    c.arrive[r] = ti.measured_start;
    c.span_start[r] = ti.measured_start;
    c.span_end[r] = ti.measured_start + ti.measured_dur;
    c.measured = ti.measured_dur;
    c.group = static_cast<int>(k);
    c.task = id;
    out_.tasks[static_cast<std::size_t>(id)].collective =
        static_cast<std::int32_t>(out_.collectives.size());
    out_.collectives.push_back(std::move(c));
  }

  // The file's dependencies; a child of a joined collective waits for the join.
  void add_rank_edges(std::size_t r) {
    const auto& info = run_.ranks[r].chakra;
    const auto& tasks = task_of_[r];
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const auto b = static_cast<std::size_t>(info.deps_begin[i]);
      const auto e = static_cast<std::size_t>(info.deps_begin[i + 1]);
      for (std::size_t d = b; d < e; ++d) {
        const TaskId parent = tasks[static_cast<std::size_t>(info.deps[d])];
        auto j = joined_.find(parent);
        edge(j != joined_.end() ? j->second : parent, tasks[i], EdgeKind::kData);
      }
    }
  }

  void edge(TaskId from, TaskId to, EdgeKind kind) {
    out_.dag.add_edge(from, to, kind);
    edges_.emplace_back(from, to);
  }

  // Files without start times: each task starts when its last dependency ends, across ranks (a
  // joined collective starts when its last rank has arrived), which is what a replay with the
  // traced durations gives. The importer's per-file starts could not see the other ranks.
  void derive_starts() {
    const std::size_t n = out_.tasks.size();
    std::vector<std::vector<TaskId>> children(n);
    std::vector<std::int32_t> pending(n, 0);
    for (const auto& [from, to] : edges_) {
      children[static_cast<std::size_t>(from)].push_back(to);
      ++pending[static_cast<std::size_t>(to)];
    }
    std::vector<Nanos> start(n, 0);
    std::vector<TaskId> ready;
    for (std::size_t t = 0; t < n; ++t) {
      if (pending[t] == 0) ready.push_back(static_cast<TaskId>(t));
    }
    while (!ready.empty()) {
      const auto t = static_cast<std::size_t>(ready.back());
      ready.pop_back();
      const Nanos end =
          model::saturating_add(start[t], out_.dag.task(static_cast<TaskId>(t)).duration);
      for (TaskId c : children[t]) {
        auto& s = start[static_cast<std::size_t>(c)];
        s = std::max(s, end);
        if (--pending[static_cast<std::size_t>(c)] == 0) ready.push_back(c);
      }
    }
    // (A cycle leaves tasks pending: build_trace_dag refuses the DAG, naming the run.)
    for (std::size_t t = 0; t < n; ++t) out_.tasks[t].measured_start = start[t];
    for (auto& c : out_.collectives) {
      Nanos last_arrive = INT64_MIN;
      for (std::size_t r = 0; r < c.arrive.size(); ++r) {
        if (c.arrive[r] < 0) continue;
        const TaskId own =
            c.joined ? task_of_[r][comm_[r][static_cast<std::size_t>(c.group)]] : c.task;
        const Nanos a = start[static_cast<std::size_t>(own)];
        c.arrive[r] = a;
        c.span_start[r] = a;
        c.span_end[r] = a + out_.tasks[static_cast<std::size_t>(own)].measured_dur;
        last_arrive = std::max(last_arrive, a);
      }
      if (!c.joined) continue;
      // Each rank's part lasts from its arrival to the end of the join.
      out_.tasks[static_cast<std::size_t>(c.task)].measured_start = last_arrive;
      for (std::size_t r = 0; r < c.arrive.size(); ++r) {
        const TaskId own = task_of_[r][comm_[r][static_cast<std::size_t>(c.group)]];
        c.span_end[r] = last_arrive + c.measured;
        out_.tasks[static_cast<std::size_t>(own)].measured_dur = c.span_end[r] - c.arrive[r];
      }
    }
  }

  // Iteration boundaries and measured iterations: as the main rank's file states them (every
  // iteration's first node and the last one's end), else from the nodes' iterations.
  void iterations() {
    const std::size_t nr = run_.ranks.size();
    const auto& main = run_.ranks[0].chakra;
    out_.rank_bounds.assign(nr, {});
    bool stated = !main.iteration_start.empty() && main.iteration_end >= 0 &&
                  main.measured_iteration.size() == main.iteration_start.size() &&
                  main.bounds.size() == main.iteration_start.size() + 1;
    for (auto s : main.iteration_start) stated = stated && s >= 0;
    if (stated) {
      for (auto s : main.iteration_start)
        out_.boundary_task.push_back(task_of_[0][static_cast<std::size_t>(s)]);
      out_.end_task = task_of_[0][static_cast<std::size_t>(main.iteration_end)];
      out_.measured_iteration = main.measured_iteration;
      out_.warmup = main.warmup;
      // A rank whose boundaries do not fit is measured in the main rank's windows.
      for (std::size_t r = 0; r < nr; ++r) {
        const auto& b = run_.ranks[r].chakra.bounds;
        if (b.size() == main.bounds.size()) out_.rank_bounds[r] = b;
      }
      if (out_.warmup >= static_cast<int>(out_.measured_iteration.size())) out_.warmup = 0;
    } else {
      derive_iterations();
    }
    for (std::size_t k = 0; k < out_.measured_iteration.size(); ++k) {
      out_.iteration_names.push_back(out_.measured_iteration.size() == 1
                                         ? std::string("whole trace")
                                         : "iteration " + std::to_string(k));
    }
  }

  void derive_iterations() {
    const std::size_t nr = run_.ranks.size();
    for (std::size_t r = 0; r < nr; ++r) {
      // Per iteration of the rank: its first start (and first task), and the rank's last end.
      std::map<int, std::pair<Nanos, TaskId>> first;
      Nanos end = 0;
      TaskId end_task = model::kNoTask;
      for (const TaskId t : task_of_[r]) {
        const auto& ti = out_.tasks[static_cast<std::size_t>(t)];
        const int k = out_.dag.task(t).iteration;
        auto it = first.find(k);
        if (it == first.end() || ti.measured_start < it->second.first) {
          first[k] = {ti.measured_start, t};
        }
        const Nanos e = ti.measured_start + ti.measured_dur;
        if (end_task == model::kNoTask || e >= end) {
          end = e;
          end_task = t;
        }
      }
      if (end_task == model::kNoTask) continue;
      for (const auto& [k, f] : first) {
        out_.rank_bounds[r].push_back(f.first);
        if (r == 0) out_.boundary_task.push_back(f.second);
      }
      out_.rank_bounds[r].push_back(end);
      if (r == 0) out_.end_task = end_task;
    }
    const auto& b = out_.rank_bounds[0];
    for (std::size_t k = 0; k + 1 < b.size(); ++k)
      out_.measured_iteration.push_back(b[k + 1] - b[k]);
  }

  std::vector<std::vector<TaskId>> task_of_;      // [rank][event]
  std::vector<std::vector<std::size_t>> comm_;    // [rank]: events that are collectives
  std::unordered_map<TaskId, TaskId> joined_;     // a rank's arrival -> the join
  std::vector<std::pair<TaskId, TaskId>> edges_;  // every edge added, for derive_starts
};

}  // namespace

model::Expected<void> build_chakra_dag(const ImportedRun& run, TraceDag& out) {
  return ChakraBuilder(run, out).build();
}

}  // namespace dagsgd::trace::detail
