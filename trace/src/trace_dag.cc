// DAG building from imported traces: our runtime's phase spans ("ssgd") or Kineto/PMPI calls,
// kernels and syncs ("kineto"). Host time between recorded calls becomes gap tasks so that a
// replay with measured durations reproduces every thread's timeline.
#include "dagsgd/trace/trace_dag.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>
#include <unordered_map>

namespace dagsgd::trace {

using model::EdgeKind;
using model::Nanos;
using model::Task;
using model::TaskId;
using model::TaskKind;

namespace {

TaskKind kind_of_phase(Phase p) {
  switch (p) {
    case Phase::kIo:
      return TaskKind::kIo;
    case Phase::kH2D:
      return TaskKind::kH2D;
    case Phase::kForward:
      return TaskKind::kForward;
    case Phase::kBackward:
      return TaskKind::kBackward;
    case Phase::kUpdate:
      return TaskKind::kUpdate;
    case Phase::kComm:
    case Phase::kNone:
      return TaskKind::kOther;
  }
  return TaskKind::kOther;
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
bool contains(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }

std::int16_t clamp_iter(int k) { return static_cast<std::int16_t>(std::clamp(k, 0, 32767)); }

class Builder {
 public:
  Builder(const ImportedRun& run, TraceDag& out) : run_(run), out_(out) {}

  TaskId add(const Task& t, const TraceTask& info) {
    TaskId id = out_.dag.add_task(t);
    out_.tasks.push_back(info);
    return id;
  }
  model::ResourceId resource(const std::string& name, int capacity = 1) {
    auto it = resources_.find(name);
    if (it != resources_.end()) return it->second;
    auto id = out_.dag.add_resource(name, capacity);
    resources_.emplace(name, id);
    return id;
  }

 protected:
  const ImportedRun& run_;
  TraceDag& out_;
  std::map<std::string, model::ResourceId> resources_;
};

// ---------------------------------------------------------------- our runtime (dagsgd train)

class SsgdBuilder : public Builder {
 public:
  using Builder::Builder;

  model::Expected<void> build() {
    out_.mode = "ssgd";
    auto comm_res = resource("collectives");
    // A collective's startup and its slowest rank's tail overlap other collectives
    // (model::CollectivePhases); measured, both are zero-length.
    auto overlap_res = resource("collective startups and tails", 1 << 20);
    struct Key {
      int iteration;
      int bucket;
      bool operator<(const Key& o) const {
        return iteration != o.iteration ? iteration < o.iteration : bucket < o.bucket;
      }
    };
    std::map<Key, std::size_t> coll_index;
    const int nranks = static_cast<int>(run_.ranks.size());
    // Per rank: its main tasks and, per (iteration, bucket), the issuing and consuming tasks.
    struct Link {
      TaskId issuer = model::kNoTask;
      TaskId consumer = model::kNoTask;
    };
    std::vector<std::map<Key, Link>> links(run_.ranks.size());
    std::vector<std::map<int, TaskId>> waits(run_.ranks.size());
    out_.rank_bounds.assign(run_.ranks.size(), {});
    for (std::size_t ri = 0; ri < run_.ranks.size(); ++ri) {
      const auto& rank = run_.ranks[ri];
      auto res = resource("rank" + std::to_string(ri) + ".main");
      TaskId prev = model::kNoTask;
      int prev_iter = -1;
      std::vector<std::pair<Nanos, TaskId>> main;  // start, task (for issuer lookup)
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
        const std::string& name = rank.str(e.name);
        Task t;
        t.duration = e.dur;
        t.resource = res;
        t.worker = static_cast<std::int32_t>(ri);
        t.layer = e.layer;
        t.iteration = clamp_iter(e.iteration);
        t.kind = kind_of_phase(e.phase);
        TraceTask info;
        info.rank = static_cast<std::int32_t>(ri);
        info.event = static_cast<std::int32_t>(ei);
        info.measured_start = e.ts - run_.origin;
        info.measured_dur = e.dur;
        info.main_thread = true;
        info.phase = e.phase;
        TaskId id = add(t, info);
        if (name == "comm_wait") waits[ri][e.iteration] = id;
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
        const auto& e = rank.events[static_cast<std::size_t>(ei)];
        Key key{e.iteration, e.bucket};
        auto [it, fresh] = coll_index.emplace(key, out_.collectives.size());
        if (fresh) {
          TraceCollective c;
          c.name = e.collective >= 0 ? rank.str(e.collective) : "allreduce";
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
        Link& l = links[ri][key];
        auto w = waits[ri].find(e.iteration);
        if (up != main.begin() && w != waits[ri].end() && std::prev(up)->second == w->second &&
            std::prev(up) != main.begin()) {
          // EASGD: the collective runs inside the blocking elastic step (comm_wait); it is
          // issued by what precedes the wait.
          --up;
        }
        if (up != main.begin()) {
          l.issuer = std::prev(up)->second;
          const auto& ti = out_.tasks[static_cast<std::size_t>(l.issuer)];
          c.arrive[ri] = ti.measured_start + ti.measured_dur;
        }
        c.span_start[ri] = e.ts - run_.origin;
        c.span_end[ri] = e.ts + e.dur - run_.origin;
        if (w != waits[ri].end()) l.consumer = w->second;
      }
    }
    // One join per collective. Its measured service time runs from the last arrival (or the
    // completion of the collective before it: one progress engine, one comm resource in the
    // DAG) to the first rank that observed its completion. The ranks do not finish together:
    // under Open MPI's reduce + broadcast the root is done when its broadcast is sent, the others
    // when it has arrived, and a rank observes completion only at its next progress call or
    // wait. Each rank's lag after the first completion is a task of its own after the join
    // (rank_tails), so a replay onto another fabric can replace it with that fabric's modeled
    // spread between ranks instead of keeping it as fixed wait time.
    Nanos prev_end = 0;
    std::vector<Nanos> join_ends;
    for (std::size_t ci = 0; ci < out_.collectives.size(); ++ci) {
      auto& c = out_.collectives[ci];
      Nanos last_arrive = 0;
      Nanos first_end = INT64_MAX;
      int n = 0;
      for (int r = 0; r < nranks; ++r) {
        auto ru = static_cast<std::size_t>(r);
        if (c.span_end[ru] < 0) continue;
        last_arrive = std::max(last_arrive, c.arrive[ru]);
        first_end = std::min(first_end, c.span_end[ru]);
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
      join_ends.push_back(join_end);
      Task t;
      t.duration = c.measured;
      t.resource = comm_res;
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
      edge_task.resource = overlap_res;
      c.startup_task = add(edge_task, info);
      info.measured_dur = c.measured;
      c.task = add(t, info);
      out_.dag.add_edge(c.startup_task, c.task, EdgeKind::kSequence);
      c.rank_tails.assign(run_.ranks.size(), model::kNoTask);
      for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
        auto l = links[r].find(Key{c.iteration, c.group});
        if (l == links[r].end()) continue;
        if (l->second.issuer != model::kNoTask) {
          out_.dag.add_edge(l->second.issuer, c.startup_task, EdgeKind::kCollectiveJoin);
        }
        // EASGD's elastic step runs after its wait: only a wait that follows the issue consumes.
        if (l->second.consumer != model::kNoTask && l->second.issuer != model::kNoTask &&
            out_.tasks[static_cast<std::size_t>(l->second.consumer)].measured_start >
                out_.tasks[static_cast<std::size_t>(l->second.issuer)].measured_start) {
          // The rank's lag: from the join's end to its own observation of the completion.
          TraceTask tail_info = info;
          tail_info.measured_start = join_end;
          tail_info.measured_dur = std::max<Nanos>(0, c.span_end[r] - join_end);
          Task tail = edge_task;
          tail.duration = tail_info.measured_dur;
          c.rank_tails[r] = add(tail, tail_info);
          out_.dag.add_edge(c.task, c.rank_tails[r], EdgeKind::kSequence);
          out_.dag.add_edge(c.rank_tails[r], l->second.consumer, EdgeKind::kData);
        }
      }
    }
    // A wait's own duration: from the rank's observation of its last collective to its end.
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
      for (const auto& [iter, wid] : waits[r]) {
        Nanos last_seen = -1;
        for (std::size_t ci = 0; ci < out_.collectives.size(); ++ci) {
          const auto& c = out_.collectives[ci];
          if (c.iteration == iter && c.span_end[r] >= 0 && !c.rank_tails.empty() &&
              c.rank_tails[r] != model::kNoTask) {
            last_seen = std::max({last_seen, c.span_end[r], join_ends[ci]});
          }
        }
        const auto& ti = out_.tasks[static_cast<std::size_t>(wid)];
        if (last_seen < 0) continue;
        Nanos end = ti.measured_start + ti.measured_dur;
        out_.dag.mutable_task(wid).duration =
            std::clamp<Nanos>(end - std::max(last_seen, ti.measured_start), 0, ti.measured_dur);
      }
    }
    for (std::size_t r = 0; r < run_.ranks.size(); ++r) {
      if (!out_.rank_bounds[r].empty()) out_.rank_bounds[r].push_back(last_end_[r]);
    }
    if (run_.manifest) out_.warmup = run_.manifest->iterations.warmup;
    return model::ok();
  }

 private:
  std::map<std::size_t, Nanos> last_end_;
};

// ---------------------------------------------------------------- Kineto / PMPI traces

Phase phase_of_label(const std::string& n, EventCategory c) {
  if (n == "## forward ##" || starts_with(n, "DistributedDataParallel.forward") || n == "forward") {
    return Phase::kForward;
  }
  if (n == "## backward ##" || starts_with(n, "autograd::engine::evaluate_function") ||
      n == "backward") {
    return Phase::kBackward;
  }
  if (n == "## optimizer ##" || starts_with(n, "Optimizer.step") ||
      starts_with(n, "Optimizer.zero_grad") || n == "optimizer") {
    return Phase::kUpdate;
  }
  if (starts_with(n, "nccl:") || (c == EventCategory::kMpi)) return Phase::kComm;
  if (n == "## data ##" || starts_with(n, "enumerate(DataLoader)")) return Phase::kIo;
  return Phase::kNone;
}

std::string collective_from_kernel(const std::string& name) {
  // ncclKernel_AllReduce_RING_LL_Sum_float / ncclDevKernel_Broadcast_RING_LL(...)
  auto us = name.find('_');
  if (us == std::string::npos) return "";
  auto end = name.find_first_of("_(", us + 1);
  std::string c = name.substr(us + 1, end == std::string::npos ? std::string::npos : end - us - 1);
  std::transform(c.begin(), c.end(), c.begin(), [](unsigned char x) { return std::tolower(x); });
  return c;
}

bool is_nccl(const std::string& name) { return contains(name, "nccl"); }

bool is_collective_name(const std::string& c) {
  return c == "allreduce" || c == "broadcast" || c == "bcast" || c == "allgather" ||
         c == "reduce_scatter" || c == "reducescatter" || c == "barrier" || c == "alltoall" ||
         c == "reduce";
}

class KinetoBuilder : public Builder {
 public:
  using Builder::Builder;

  model::Expected<void> build() {
    out_.mode = "kineto";
    out_.rank_bounds.assign(run_.ranks.size(), {});
    per_rank_comm_.assign(run_.ranks.size(), {});
    for (std::size_t ri = 0; ri < run_.ranks.size(); ++ri) build_rank(ri);
    join_collectives();
    emit_edges();
    return model::ok();
  }

 private:
  struct Labeled {
    Nanos start, end;
    Phase phase;
  };

  // Innermost labeled interval containing t on one thread.
  static Phase phase_at(const std::vector<Labeled>& v, Nanos t) {
    auto it = std::upper_bound(v.begin(), v.end(), t,
                               [](Nanos x, const Labeled& l) { return x < l.start; });
    int steps = 0;
    while (it != v.begin() && steps++ < 256) {
      --it;
      if (it->start <= t && t < it->end) return it->phase;
    }
    return Phase::kNone;
  }

  // Whether t lies inside one of the (start-sorted) intervals; ops nest, so the nearest
  // enclosing one starts at most a few hundred intervals back.
  static bool inside(const std::vector<Labeled>& v, Nanos t) {
    auto it = std::upper_bound(v.begin(), v.end(), t,
                               [](Nanos x, const Labeled& l) { return x < l.start; });
    Nanos reach = INT64_MIN;
    int steps = 0;
    while (it != v.begin() && steps++ < 256) {
      --it;
      reach = std::max(reach, it->end);
      if (reach > t) return true;
    }
    return false;
  }

  void build_rank(std::size_t ri) {
    const auto& rank = run_.ranks[ri];
    const Nanos origin = run_.origin;
    auto w = static_cast<std::int32_t>(ri);
    // Iterations: ProfilerStep annotations; their thread is the main thread.
    std::vector<std::pair<Nanos, Nanos>> steps;
    std::int64_t main_tid = -1;
    std::map<std::int64_t, std::vector<Labeled>> labels;
    std::map<std::int64_t, int> runtime_count;
    std::map<std::int64_t, std::vector<Labeled>> ops;  // every op/annotation but ProfilerStep
    for (const auto& e : rank.events) {
      if (e.gpu) continue;
      const std::string& n = rank.str(e.name);
      if (e.category == EventCategory::kAnnotation && starts_with(n, "ProfilerStep#")) {
        steps.push_back({e.ts, e.ts + e.dur});
        main_tid = e.tid;
        if (ri == 0) {
          out_.measured_iteration.push_back(e.dur);
          out_.iteration_names.push_back(n);
        }
        continue;
      }
      if (e.category == EventCategory::kRuntime ||
          (e.category == EventCategory::kMpi && e.tid < 1000)) {
        runtime_count[e.tid]++;
      }
      if (e.category == EventCategory::kCpuOp || e.category == EventCategory::kAnnotation) {
        ops[e.tid].push_back({e.ts, e.ts + e.dur, Phase::kNone});
      }
      Phase p = e.phase != Phase::kNone ? e.phase : phase_of_label(n, e.category);
      if (p != Phase::kNone &&
          (e.category == EventCategory::kAnnotation || e.category == EventCategory::kCpuOp)) {
        labels[e.tid].push_back({e.ts, e.ts + e.dur, p});
      }
    }
    if (main_tid < 0) {
      int best = -1;
      for (const auto& [tid, n] : runtime_count) {
        if (n > best) {
          best = n;
          main_tid = tid;
        }
      }
    }
    if (steps.empty() && main_tid >= 0) {
      // No ProfilerStep (e.g. a PMPI trace): the whole main-thread timeline is one iteration.
      Nanos lo = INT64_MAX;
      Nanos hi = INT64_MIN;
      for (const auto& e : rank.events) {
        if (e.gpu || e.tid != main_tid) continue;
        lo = std::min(lo, e.ts);
        hi = std::max(hi, e.ts + e.dur);
      }
      if (lo < hi) {
        steps.push_back({lo, hi});
        if (ri == 0) {
          out_.measured_iteration.push_back(hi - lo);
          out_.iteration_names.push_back("whole trace");
        }
      }
    }
    for (const auto& s : steps) out_.rank_bounds[ri].push_back(s.first - origin);
    if (!steps.empty()) out_.rank_bounds[ri].push_back(steps.back().second - origin);
    auto iteration_of = [&](Nanos t) {
      if (steps.empty()) return 0;
      auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(t, INT64_MAX));
      if (it == steps.begin()) return 0;
      return static_cast<int>(std::prev(it) - steps.begin());
    };

    // Host threads: runtime calls and blocking MPI calls, non-nested, in order.
    std::map<std::int64_t, std::vector<std::size_t>> threads;
    for (std::size_t ei = 0; ei < rank.events.size(); ++ei) {
      const auto& e = rank.events[ei];
      bool host_call = e.category == EventCategory::kRuntime ||
                       (e.category == EventCategory::kMpi && e.tid < 1000);
      if (host_call) threads[e.tid].push_back(ei);
    }
    if (main_tid >= 0) threads[main_tid];  // the main thread exists even without calls
    std::unordered_map<std::int64_t, TaskId> launch_of;          // correlation -> runtime task
    std::unordered_map<std::int64_t, std::size_t> record_event;  // correlation -> event
    for (auto& thread : threads) {
      const std::int64_t tid = thread.first;  // a plain variable: lambdas capture it
      const auto& evs = thread.second;
      auto res = resource("rank" + std::to_string(ri) + ".thread" + std::to_string(tid));
      const auto& lab = labels[tid];
      std::vector<TaskId> seq;
      Nanos cursor = origin;
      std::size_t next_step = 0;
      bool is_main = tid == main_tid;
      auto add_gap = [&](Nanos from, Nanos to) {
        if (to <= from) return;
        Task t;
        t.duration = to - from;
        t.resource = res;
        t.worker = w;
        t.iteration = clamp_iter(iteration_of(from));
        t.kind = TaskKind::kOther;
        TraceTask info;
        info.rank = w;
        info.measured_start = from - origin;
        info.measured_dur = t.duration;
        info.main_thread = is_main;
        info.gap = true;
        info.phase = phase_at(lab, from);
        info.in_op = inside(ops[tid], from + (to - from) / 2);
        seq.push_back(add(t, info));
      };
      for (std::size_t k = 0; k < evs.size(); ++k) {
        const auto& e = rank.events[evs[k]];
        if (e.ts < cursor) continue;  // nested or overlapping: covered by the enclosing call
        // Split the gap at every iteration start it crosses.
        while (is_main && next_step < steps.size() && steps[next_step].first <= e.ts) {
          if (steps[next_step].first > cursor) {
            add_gap(cursor, steps[next_step].first);
            cursor = steps[next_step].first;
          }
          mark_boundary(ri, is_main, next_step, steps, cursor, seq, res, w, lab, iteration_of);
        }
        add_gap(cursor, e.ts);
        const std::string& n = rank.str(e.name);
        Task t;
        t.duration = e.dur;
        t.resource = res;
        t.worker = w;
        t.iteration = clamp_iter(iteration_of(e.ts));
        t.kind = TaskKind::kOther;
        TraceTask info;
        info.rank = w;
        info.event = static_cast<std::int32_t>(evs[k]);
        info.measured_start = e.ts - origin;
        info.measured_dur = e.dur;
        info.main_thread = is_main;
        info.phase = e.category == EventCategory::kMpi ? Phase::kComm : phase_at(lab, e.ts);
        TaskId id = add(t, info);
        seq.push_back(id);
        if (e.correlation >= 0) {
          launch_of[e.correlation] = id;
          record_event[e.correlation] = evs[k];
        }
        if (e.category == EventCategory::kMpi && e.collective >= 0 &&
            is_collective_name(rank.str(e.collective))) {
          out_.dag.mutable_task(id).kind = TaskKind::kComm;
          per_rank_comm_[ri].push_back(id);
        }
        if (is_sync_call(n)) sync_calls_.push_back({ri, id, evs[k]});
        cursor = e.ts + e.dur;
      }
      // Cover the rest of the last iteration.
      if (is_main && !steps.empty()) {
        while (next_step < steps.size()) {
          if (steps[next_step].first > cursor) {
            add_gap(cursor, steps[next_step].first);
            cursor = steps[next_step].first;
          }
          mark_boundary(ri, is_main, next_step, steps, cursor, seq, res, w, lab, iteration_of);
        }
        if (steps.back().second > cursor) add_gap(cursor, steps.back().second);
        if (ri == 0 && !seq.empty()) out_.end_task = seq.back();
      }
      chains_.push_back(std::move(seq));
    }
    // GPU streams.
    std::map<std::int64_t, std::vector<std::size_t>> streams;
    for (std::size_t ei = 0; ei < rank.events.size(); ++ei) {
      const auto& e = rank.events[ei];
      if (e.category == EventCategory::kKernel || e.category == EventCategory::kMemcpy ||
          e.category == EventCategory::kMemset) {
        streams[e.tid].push_back(ei);
      }
    }
    auto& stream_ops = stream_ops_[ri];
    for (auto& [sid, evs] : streams) {
      auto res = resource("rank" + std::to_string(ri) + ".stream" + std::to_string(sid));
      std::vector<TaskId> seq;
      for (std::size_t ei : evs) {
        const auto& e = rank.events[ei];
        const std::string& n = rank.str(e.name);
        TaskId launch = model::kNoTask;
        if (auto it = launch_of.find(e.correlation); it != launch_of.end()) launch = it->second;
        Phase p = Phase::kNone;
        if (launch != model::kNoTask) p = out_.tasks[static_cast<std::size_t>(launch)].phase;
        Task t;
        t.duration = e.dur;
        t.resource = res;
        t.worker = w;
        t.iteration = launch != model::kNoTask ? out_.dag.task(launch).iteration
                                               : clamp_iter(iteration_of(e.ts));
        bool nccl = e.category == EventCategory::kKernel && is_nccl(n);
        if (nccl) {
          t.kind = TaskKind::kComm;
          p = Phase::kComm;
        } else if (e.category == EventCategory::kMemcpy) {
          t.kind = contains(n, "HtoD") ? TaskKind::kH2D : TaskKind::kMemcpy;
        } else if (e.category == EventCategory::kMemset) {
          t.kind = TaskKind::kMemcpy;
        } else {
          if (p == Phase::kNone || p == Phase::kComm) {
            p = contains(n, "backward") || contains(n, "Backward") || contains(n, "_bw_") ||
                        contains(n, "wgrad") || contains(n, "dgrad")
                    ? Phase::kBackward
                    : Phase::kForward;
          }
          t.kind = kind_of_phase(p);
          if (t.kind == TaskKind::kOther || t.kind == TaskKind::kIo) t.kind = TaskKind::kForward;
        }
        TraceTask info;
        info.rank = w;
        info.event = static_cast<std::int32_t>(ei);
        info.measured_start = e.ts - origin;
        info.measured_dur = e.dur;
        info.phase = p;
        TaskId id = add(t, info);
        if (launch != model::kNoTask) extra_edges_.push_back({launch, id, EdgeKind::kData});
        seq.push_back(id);
        Nanos launched = launch != model::kNoTask
                             ? out_.tasks[static_cast<std::size_t>(launch)].measured_start
                             : e.ts - origin;
        stream_ops[sid].push_back({launched, id});
        if (nccl) per_rank_comm_[ri].push_back(id);
      }
      chains_.push_back(std::move(seq));
    }
    // cudaStreamWaitEvent: GPU-side, the next op launched on another stream waits for the op
    // the latest cudaEventRecord of this thread captured (the streams are not in the trace, so
    // this is the launch order's best reading; docs/analysis.md).
    {
      std::vector<std::tuple<Nanos, TaskId, std::int64_t>> all;  // launched, task, stream
      for (const auto& [sid, v] : stream_ops) {
        for (const auto& [when, id] : v) all.emplace_back(when, id, sid);
      }
      std::sort(all.begin(), all.end());
      std::map<std::int64_t, Nanos> last_record;  // thread -> ts of its latest cudaEventRecord
      for (const auto& e : rank.events) {
        if (e.category != EventCategory::kRuntime) continue;
        const std::string& n = rank.str(e.name);
        if (n == "cudaEventRecord") {
          last_record[e.tid] = e.ts - run_.origin;
          continue;
        }
        if (n != "cudaStreamWaitEvent") continue;
        auto rec = last_record.find(e.tid);
        if (rec == last_record.end()) continue;
        auto up = std::upper_bound(all.begin(), all.end(),
                                   std::make_tuple(rec->second, INT32_MAX, INT64_MAX));
        if (up == all.begin()) continue;
        const auto& recorded = *std::prev(up);
        Nanos waited_at = e.ts - run_.origin;
        auto after = std::upper_bound(all.begin(), all.end(),
                                      std::make_tuple(waited_at, INT32_MAX, INT64_MAX));
        for (; after != all.end(); ++after) {
          if (std::get<2>(*after) != std::get<2>(recorded)) {
            extra_edges_.push_back({std::get<1>(recorded), std::get<1>(*after), EdgeKind::kData});
            break;
          }
        }
      }
    }
    // Synchronizations: the host call waits for the last op launched before it on the stream
    // (stream sync), on every stream (device/context sync), or before the event's record.
    std::unordered_map<std::int64_t, const ImportedEvent*> sync_records;
    for (const auto& e : rank.events) {
      if (e.category == EventCategory::kSync && e.correlation >= 0) {
        sync_records[e.correlation] = &e;
      }
    }
    for (const auto& sc : sync_calls_) {
      if (sc.rank != ri) continue;
      const auto& call = rank.events[sc.event];
      const auto& info = out_.tasks[static_cast<std::size_t>(sc.task)];
      std::vector<TaskId> awaited;
      auto last_before = [&](std::int64_t sid, Nanos t) {
        auto it = stream_ops.find(sid);
        if (it == stream_ops.end()) return;
        auto& v = it->second;
        auto up = std::upper_bound(v.begin(), v.end(), std::make_pair(t, INT32_MAX));
        if (up != v.begin()) awaited.push_back(std::prev(up)->second);
      };
      const ImportedEvent* rec = nullptr;
      if (auto it = sync_records.find(call.correlation); it != sync_records.end()) rec = it->second;
      const std::string& rn = rec ? rank.str(rec->name) : std::string();
      if (rec && rn == "Stream Sync") {
        last_before(rec->tid, info.measured_start);
      } else if (rec && rn == "Event Sync" && rec->wait_on_corr >= 0 && rec->wait_on_stream >= 0) {
        auto r = record_event.find(rec->wait_on_corr);
        Nanos when =
            r != record_event.end() ? rank.events[r->second].ts - run_.origin : info.measured_start;
        last_before(rec->wait_on_stream, when);
      } else {
        for (const auto& [sid, v] : stream_ops) last_before(sid, info.measured_start);
      }
      Nanos awaited_end = -1;
      for (TaskId a : awaited) {
        const auto& ai = out_.tasks[static_cast<std::size_t>(a)];
        awaited_end = std::max(awaited_end, ai.measured_start + ai.measured_dur);
        extra_edges_.push_back({a, sc.task, EdgeKind::kData});
      }
      if (awaited_end >= 0) {
        // Only the part of the call after the awaited work finished is the call's own time.
        Nanos end = info.measured_start + info.measured_dur;
        out_.dag.mutable_task(sc.task).duration = std::clamp<Nanos>(
            end - std::max(awaited_end, info.measured_start), 0, info.measured_dur);
      }
    }
  }

  template <class F>
  void mark_boundary(std::size_t ri, bool is_main, std::size_t& next_step,
                     const std::vector<std::pair<Nanos, Nanos>>& steps, Nanos at,
                     std::vector<TaskId>& seq, model::ResourceId res, std::int32_t w,
                     const std::vector<Labeled>& lab, F iteration_of) {
    if (!is_main) return;
    // A zero-length marker task starts each iteration, so boundaries are exact.
    Task t;
    t.duration = 0;
    t.resource = res;
    t.worker = w;
    t.iteration = clamp_iter(iteration_of(at));
    t.kind = TaskKind::kOther;
    TraceTask info;
    info.rank = w;
    info.measured_start = at - run_.origin;
    info.main_thread = true;
    info.gap = true;
    info.phase = phase_at(lab, at);
    TaskId id = add(t, info);
    seq.push_back(id);
    if (ri == 0) out_.boundary_task.push_back(id);
    (void)steps;
    ++next_step;
  }

  static bool is_sync_call(const std::string& n) {
    return n == "cudaDeviceSynchronize" || n == "cudaStreamSynchronize" ||
           n == "cudaEventSynchronize" || n == "cudaMemcpy" || n == "cuCtxSynchronize" ||
           n == "cuStreamSynchronize" || n == "cuEventSynchronize";
  }

  void join_collectives() {
    const std::size_t nr = run_.ranks.size();
    bool all_present = nr >= 2;
    for (const auto& r : run_.ranks) {
      if (r.world_size != static_cast<int>(nr)) all_present = false;
    }
    std::size_t count = per_rank_comm_.empty() ? 0 : per_rank_comm_[0].size();
    for (const auto& v : per_rank_comm_) {
      if (v.size() != count) all_present = false;
    }
    auto coll_res = resource("collectives", 1 << 20);
    if (all_present) {
      for (std::size_t k = 0; k < count; ++k) {
        TraceCollective c;
        c.arrive.assign(nr, -1);
        c.span_start.assign(nr, -1);
        c.span_end.assign(nr, -1);
        Nanos last_arrive = INT64_MIN;
        Nanos first_end = INT64_MAX;
        for (std::size_t r = 0; r < nr; ++r) {
          TaskId id = per_rank_comm_[r][k];
          const auto& ti = out_.tasks[static_cast<std::size_t>(id)];
          c.arrive[r] = ti.measured_start;
          c.span_start[r] = ti.measured_start;
          c.span_end[r] = ti.measured_start + ti.measured_dur;
          last_arrive = std::max(last_arrive, ti.measured_start);
          first_end = std::min(first_end, c.span_end[r]);
        }
        describe(c, 0, per_rank_comm_[0][k]);
        c.ranks = static_cast<int>(nr);
        c.joined = true;
        c.measured = std::max<Nanos>(0, first_end - last_arrive);
        Task t;
        t.duration = c.measured;
        t.resource = coll_res;
        t.worker = -1;
        t.iteration = out_.dag.task(per_rank_comm_[0][k]).iteration;
        t.kind = TaskKind::kComm;
        c.iteration = t.iteration;
        c.group = static_cast<int>(k);
        TraceTask info;
        info.rank = -1;
        info.collective = static_cast<std::int32_t>(out_.collectives.size());
        info.measured_start = last_arrive;
        info.measured_dur = c.measured;
        info.phase = Phase::kComm;
        c.task = add(t, info);
        // Each rank's own kernel/call becomes its arrival (zero length) before the join; the
        // rank continues after the join through a zero-length task in the kernel's place.
        for (std::size_t r = 0; r < nr; ++r) {
          TaskId id = per_rank_comm_[r][k];
          out_.dag.mutable_task(id).duration = 0;
          out_.tasks[static_cast<std::size_t>(id)].collective = info.collective;
          joined_.emplace(id, c.task);
        }
        out_.collectives.push_back(std::move(c));
      }
      return;
    }
    // Not every rank is here: each rank's collective keeps its own task.
    for (std::size_t r = 0; r < nr; ++r) {
      for (std::size_t k = 0; k < per_rank_comm_[r].size(); ++k) {
        TaskId id = per_rank_comm_[r][k];
        const auto& ti = out_.tasks[static_cast<std::size_t>(id)];
        TraceCollective c;
        c.arrive.assign(nr, -1);
        c.span_start.assign(nr, -1);
        c.span_end.assign(nr, -1);
        c.arrive[r] = ti.measured_start;
        c.span_start[r] = ti.measured_start;
        c.span_end[r] = ti.measured_start + ti.measured_dur;
        describe(c, r, id);
        c.measured = ti.measured_dur;
        c.iteration = out_.dag.task(id).iteration;
        c.group = static_cast<int>(k);
        c.task = id;
        out_.tasks[static_cast<std::size_t>(id)].collective =
            static_cast<std::int32_t>(out_.collectives.size());
        out_.collectives.push_back(std::move(c));
      }
    }
  }

  void describe(TraceCollective& c, std::size_t r, TaskId id) {
    const auto& rank = run_.ranks[r];
    const auto& ti = out_.tasks[static_cast<std::size_t>(id)];
    const auto& e = rank.events[static_cast<std::size_t>(ti.event)];
    c.name = e.collective >= 0 ? rank.str(e.collective) : collective_from_kernel(rank.str(e.name));
    c.bytes = e.bytes;
    c.ranks = e.group_size > 0 ? e.group_size : rank.world_size;
  }

  void emit_edges() {
    for (const auto& seq : chains_) {
      for (std::size_t i = 1; i < seq.size(); ++i) {
        TaskId a = seq[i - 1];
        TaskId b = seq[i];
        auto j = joined_.find(a);
        if (j != joined_.end()) {
          out_.dag.add_edge(a, j->second, EdgeKind::kCollectiveJoin);
          out_.dag.add_edge(j->second, b, EdgeKind::kData);
        } else {
          out_.dag.add_edge(a, b, EdgeKind::kSequence);
        }
      }
      // A joined collective that is the last of its chain still joins.
      if (!seq.empty()) {
        auto j = joined_.find(seq.back());
        if (j != joined_.end()) out_.dag.add_edge(seq.back(), j->second, EdgeKind::kCollectiveJoin);
      }
    }
    for (const auto& e : extra_edges_) out_.dag.add_edge(e.from, e.to, e.kind);
  }

  struct SyncCall {
    std::size_t rank;
    TaskId task;
    std::size_t event;
  };
  struct Edge {
    TaskId from, to;
    EdgeKind kind;
  };
  std::vector<std::vector<TaskId>> chains_;
  std::vector<std::vector<TaskId>> per_rank_comm_;
  std::map<std::size_t, std::map<std::int64_t, std::vector<std::pair<Nanos, TaskId>>>> stream_ops_;
  std::vector<SyncCall> sync_calls_;
  std::vector<Edge> extra_edges_;
  std::unordered_map<TaskId, TaskId> joined_;
};

}  // namespace

model::Expected<TraceDag> build_trace_dag(const ImportedRun& run) {
  TraceDag out;
  out.ranks = static_cast<int>(run.ranks.size());
  if (run.ranks.empty()) return model::Error{"'" + run.path + "': no ranks to build a DAG from"};
  if (run.source == RunSource::kDagsgdTrain) {
    SsgdBuilder b(run, out);
    DAGSGD_TRY(b.build());
  } else {
    KinetoBuilder b(run, out);
    DAGSGD_TRY(b.build());
  }
  if (out.boundary_task.empty() || out.end_task == model::kNoTask) {
    return model::Error{"'" + run.path +
                        "': no iterations found (no ProfilerStep#N annotations and no calls on "
                        "the main thread)"};
  }
  if (run.manifest && out.warmup >= static_cast<int>(out.measured_iteration.size())) {
    out.warmup = 0;
  }
  out.dag.finalize();
  return out;
}

}  // namespace dagsgd::trace
