// The DAG of Kineto/PyTorch-profiler and PMPI traces: host threads' calls in program order with
// the host time between them, GPU streams' kernels and copies, launch -> kernel, stream waits,
// synchronizations, and the cross-rank join of every collective.
#include <algorithm>
#include <iterator>
#include <map>
#include <tuple>
#include <unordered_map>

#include "dagsgd/model/ssgd.h"
#include "kineto_lookup.h"
#include "trace_dag_builder.h"

namespace dagsgd::trace::detail {

namespace {

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

// Host calls that block until GPU work is done.
bool is_sync_call(const std::string& n) {
  return n == "cudaDeviceSynchronize" || n == "cudaStreamSynchronize" ||
         n == "cudaEventSynchronize" || n == "cudaMemcpy" || n == "cuCtxSynchronize" ||
         n == "cuStreamSynchronize" || n == "cuEventSynchronize";
}

// A host call that is a task of its thread: runtime calls and blocking MPI calls (the tracer's
// request completions run on pseudo-threads from 1000 on).
bool is_host_call(const ImportedEvent& e) {
  return e.category == EventCategory::kRuntime ||
         (e.category == EventCategory::kMpi && e.tid < 1000);
}

// What one rank's trace says before any task is made: its iterations, its main thread, and
// per thread the phase labels and the ops that enclose host time.
struct RankScan {
  std::vector<std::pair<Nanos, Nanos>> steps;  // ProfilerStep (or the whole main thread)
  std::int64_t main_tid = -1;
  std::map<std::int64_t, Spans> labels;
  std::map<std::int64_t, Spans> ops;  // every op/annotation but ProfilerStep

  int iteration_of(Nanos t) const {
    if (steps.empty()) return 0;
    auto it = std::upper_bound(steps.begin(), steps.end(), std::make_pair(t, INT64_MAX));
    if (it == steps.begin()) return 0;
    return static_cast<int>(std::prev(it) - steps.begin());
  }
};

class KinetoBuilder : public Builder {
 public:
  using Builder::Builder;

  model::Expected<void> build() {
    out_.mode = TraceMode::kKineto;
    out_.rank_bounds.assign(run_.ranks.size(), {});
    per_rank_comm_.assign(run_.ranks.size(), {});
    // Room for a task per event up front (Kineto's traces make fewer): grown by doubling, the
    // tables were copied into new memory, faulted in 4 KiB at a time, at every step. What is never
    // written is never touched.
    std::size_t events = 0;
    for (const auto& r : run_.ranks) events += r.events.size();
    out_.dag.reserve(events, events);
    out_.tasks.reserve(events);
    for (std::size_t ri = 0; ri < run_.ranks.size(); ++ri) {
      const RankScan scan = scan_rank(ri);
      for (const auto& s : scan.steps) out_.rank_bounds[ri].push_back(s.first - run_.origin);
      if (!scan.steps.empty())
        out_.rank_bounds[ri].push_back(scan.steps.back().second - run_.origin);
      build_host_threads(ri, scan);
      build_streams(ri, scan);
      link_stream_waits(ri);
      DAGSGD_TRY(link_syncs(ri));
    }
    join_collectives();
    emit_edges();
    return model::ok();
  }

 private:
  RankScan scan_rank(std::size_t ri) {
    const auto& rank = run_.ranks[ri];
    RankScan s;
    std::map<std::int64_t, int> runtime_count;
    // Each thread's op and label lists at their final size, counted first, for the same reason.
    std::map<std::int64_t, std::pair<std::size_t, std::size_t>> per_thread;
    LastEntry thread_counts(per_thread);
    for (const auto& e : rank.events) {
      if (e.gpu) continue;
      if (e.category == EventCategory::kCpuOp || e.category == EventCategory::kAnnotation) {
        auto& [ops, labels] = thread_counts[e.tid];
        ++ops;
        ++labels;  // at most one label per op or annotation
      }
    }
    for (const auto& [tid, n] : per_thread) {
      s.ops[tid].list.reserve(n.first);
      s.labels[tid].list.reserve(n.second);
    }
    label_phase_.assign(rank.strings.size(), kUnknownPhase);
    name_facts_.assign(rank.strings.size(), 0);
    scanned_ = &rank;
    LastEntry calls(runtime_count);
    LastEntry ops_at(s.ops);
    LastEntry labels_at(s.labels);
    for (const auto& e : rank.events) {
      if (e.gpu) continue;
      const std::string& n = rank.str(e.name);
      if (e.category == EventCategory::kAnnotation && starts_with(n, "ProfilerStep#")) {
        s.steps.push_back({e.ts, e.ts + e.dur});
        s.main_tid = e.tid;
        if (ri == 0) {
          out_.measured_iteration.push_back(e.dur);
          out_.iteration_names.push_back(n);
        }
        continue;
      }
      if (is_host_call(e)) calls[e.tid]++;
      if (e.category == EventCategory::kCpuOp || e.category == EventCategory::kAnnotation) {
        ops_at[e.tid].list.push_back({e.ts, e.ts + e.dur, Phase::kNone});
      }
      if (e.category == EventCategory::kAnnotation || e.category == EventCategory::kCpuOp) {
        const Phase p = e.phase != Phase::kNone ? e.phase : label_phase(e.name, n);
        if (p != Phase::kNone) labels_at[e.tid].list.push_back({e.ts, e.ts + e.dur, p});
      }
    }
    for (auto& [tid, spans] : s.ops) spans.seal();
    for (auto& [tid, spans] : s.labels) spans.seal();
    if (s.main_tid < 0) {
      int best = -1;
      for (const auto& [tid, n] : runtime_count) {
        if (n > best) {
          best = n;
          s.main_tid = tid;
        }
      }
    }
    if (s.steps.empty() && s.main_tid >= 0) {
      // No ProfilerStep (e.g. a PMPI trace): the whole main-thread timeline is one iteration.
      Nanos lo = INT64_MAX;
      Nanos hi = INT64_MIN;
      for (const auto& e : rank.events) {
        if (e.gpu || e.tid != s.main_tid) continue;
        lo = std::min(lo, e.ts);
        hi = std::max(hi, e.ts + e.dur);
      }
      if (lo < hi) {
        s.steps.push_back({lo, hi});
        if (ri == 0) {
          out_.measured_iteration.push_back(hi - lo);
          out_.iteration_names.push_back("whole trace");
        }
      }
    }
    return s;
  }

  // What a cpu_op's or annotation's name says of its phase, once per name of the rank.
  Phase label_phase(std::int32_t name, const std::string& n) {
    auto& slot = label_phase_[static_cast<std::size_t>(name)];
    if (slot == kUnknownPhase) {
      slot = static_cast<std::uint8_t>(phase_of_label(n, EventCategory::kCpuOp));
    }
    return static_cast<Phase>(slot);
  }

  // What the rank's name `name` says (the bits below), worked out once per name: kernel names
  // run to hundreds of bytes and were searched for five words at every launch.
  static constexpr std::uint8_t kFactsKnown = 1, kSyncCall = 2, kNcclKernel = 4, kBackwardName = 8,
                                kHtoD = 16, kEventRecord = 32, kStreamWaitEvent = 64;
  std::uint8_t name_facts(std::int32_t name) {
    auto& slot = name_facts_[static_cast<std::size_t>(name)];
    if (slot != 0) return slot;
    const std::string& n = scanned_->str(name);
    slot = kFactsKnown;
    if (is_sync_call(n)) slot |= kSyncCall;
    if (is_nccl_kernel(n)) slot |= kNcclKernel;
    if (contains(n, "backward") || contains(n, "Backward") || contains(n, "_bw_") ||
        contains(n, "wgrad") || contains(n, "dgrad")) {
      slot |= kBackwardName;
    }
    if (contains(n, "HtoD")) slot |= kHtoD;
    if (n == "cudaEventRecord") slot |= kEventRecord;
    if (n == "cudaStreamWaitEvent") slot |= kStreamWaitEvent;
    return slot;
  }

  // One thread's calls in program order with the host time between them as gap tasks; on the
  // main thread, a zero-length marker task starts each iteration.
  class ThreadChain {
   public:
    ThreadChain(KinetoBuilder& b, std::size_t ri, std::int64_t tid, const RankScan& scan)
        : b_(b),
          ri_(ri),
          w_(static_cast<std::int32_t>(ri)),
          scan_(scan),
          is_main_(tid == scan.main_tid),
          res_(b.resource("rank" + std::to_string(ri) + ".thread" + std::to_string(tid))),
          labels_(label_list(scan.labels, tid)),
          ops_(label_list(scan.ops, tid)),
          cursor_(b.run_.origin) {}

    // Host time up to `t`, split at every iteration start it crosses.
    void advance_to(Nanos t) {
      while (is_main_ && next_step_ < scan_.steps.size() && scan_.steps[next_step_].first <= t) {
        cross_next_step();
      }
      add_gap(cursor_, t);
    }
    // The rest of the last iteration.
    void finish() {
      if (!is_main_ || scan_.steps.empty()) return;
      while (next_step_ < scan_.steps.size()) cross_next_step();
      if (scan_.steps.back().second > cursor_) add_gap(cursor_, scan_.steps.back().second);
      if (ri_ == 0 && !seq_.empty()) b_.out_.end_task = seq_.back();
    }
    Nanos cursor() const { return cursor_; }
    void push(TaskId id, Nanos end) {
      seq_.push_back(id);
      cursor_ = end;
    }
    model::ResourceId resource() const { return res_; }
    bool is_main() const { return is_main_; }
    Phase phase_at_time(Nanos t) const { return phase_at(labels_, t); }
    std::vector<TaskId> take() { return std::move(seq_); }

   private:
    static const Spans& label_list(const std::map<std::int64_t, Spans>& m, std::int64_t tid) {
      static const Spans kEmpty{{}, {INT64_MIN}};
      auto it = m.find(tid);
      return it == m.end() ? kEmpty : it->second;
    }
    Task base_task(Nanos at, Nanos duration) const {
      Task t;
      t.duration = duration;
      t.resource = res_;
      t.worker = w_;
      t.iteration = clamp_iter(scan_.iteration_of(at));
      t.kind = TaskKind::kOther;
      return t;
    }
    void add_gap(Nanos from, Nanos to) {
      if (to <= from) return;
      TraceTask info;
      info.rank = w_;
      info.measured_start = from - b_.run_.origin;
      info.measured_dur = to - from;
      info.main_thread = is_main_;
      info.gap = true;
      info.phase = phase_at(labels_, from);
      info.in_op = inside(ops_, from + (to - from) / 2);
      seq_.push_back(b_.add(base_task(from, to - from), info));
    }
    // Host time up to the next iteration's start, then the marker that starts it.
    void cross_next_step() {
      const Nanos start = scan_.steps[next_step_].first;
      if (start > cursor_) {
        add_gap(cursor_, start);
        cursor_ = start;
      }
      mark_boundary();
    }
    void mark_boundary() {
      const Nanos at = cursor_;
      TraceTask info;
      info.rank = w_;
      info.measured_start = at - b_.run_.origin;
      info.main_thread = true;
      info.gap = true;
      info.phase = phase_at(labels_, at);
      TaskId id = b_.add(base_task(at, 0), info);
      seq_.push_back(id);
      if (ri_ == 0) b_.out_.boundary_task.push_back(id);
      ++next_step_;
    }

    KinetoBuilder& b_;
    std::size_t ri_;
    std::int32_t w_;
    const RankScan& scan_;
    bool is_main_;
    model::ResourceId res_;
    // Asked in time order; phase_at_time() is a question, the cursor only remembers.
    mutable SpanCursor labels_;
    SpanCursor ops_;
    std::vector<TaskId> seq_;
    Nanos cursor_;
    std::size_t next_step_ = 0;
  };

  // Host threads: runtime calls and blocking MPI calls, non-nested, in order.
  void build_host_threads(std::size_t ri, const RankScan& scan) {
    const auto& rank = run_.ranks[ri];
    std::map<std::int64_t, std::vector<std::size_t>> threads;
    LastEntry calls_of(threads);
    for (std::size_t ei = 0; ei < rank.events.size(); ++ei) {
      if (is_host_call(rank.events[ei])) calls_of[rank.events[ei].tid].push_back(ei);
    }
    if (scan.main_tid >= 0) threads[scan.main_tid];  // the main thread exists even without calls
    launches_.clear(/*keep_room=*/true);
    for (const auto& [tid, evs] : threads) {
      ThreadChain chain(*this, ri, tid, scan);
      for (std::size_t ei : evs) {
        const auto& e = rank.events[ei];
        if (e.ts < chain.cursor()) continue;  // nested or overlapping: inside the enclosing call
        chain.advance_to(e.ts);
        TaskId id = add_host_call(ri, ei, chain, scan);
        chain.push(id, e.ts + e.dur);
      }
      chain.finish();
      chains_.push_back(chain.take());
    }
  }

  TaskId add_host_call(std::size_t ri, std::size_t ei, const ThreadChain& chain,
                       const RankScan& scan) {
    const auto& rank = run_.ranks[ri];
    const auto& e = rank.events[ei];
    auto [t, info] = of_event(ri, ei, chain.resource());
    t.iteration = clamp_iter(scan.iteration_of(e.ts));
    t.kind = TaskKind::kOther;
    info.main_thread = chain.is_main();
    info.phase = e.category == EventCategory::kMpi ? Phase::kComm : chain.phase_at_time(e.ts);
    TaskId id = add(t, info);
    if (e.correlation >= 0) {
      launches_[e.correlation] = {id, ei};
    }
    if (e.category == EventCategory::kMpi && e.collective >= 0 &&
        classify_collective(rank.str(e.collective)) != CollectiveKind::kNone) {
      out_.dag.mutable_task(id).kind = TaskKind::kComm;
      per_rank_comm_[ri].push_back(id);
    }
    if (name_facts(e.name) & kSyncCall) sync_calls_.push_back({ri, id, ei});
    return id;
  }

  // GPU streams: kernels, copies and memsets in stream order, each after its launch.
  void build_streams(std::size_t ri, const RankScan& scan) {
    const auto& rank = run_.ranks[ri];
    std::map<std::int64_t, std::vector<std::size_t>> streams;
    LastEntry ops_of(streams);
    for (std::size_t ei = 0; ei < rank.events.size(); ++ei) {
      const auto& e = rank.events[ei];
      if (e.category == EventCategory::kKernel || e.category == EventCategory::kMemcpy ||
          e.category == EventCategory::kMemset) {
        ops_of[e.tid].push_back(ei);
      }
    }
    auto& stream_ops = stream_ops_[ri];
    for (auto& [sid, evs] : streams) {
      auto res = resource("rank" + std::to_string(ri) + ".stream" + std::to_string(sid));
      auto& launched_ops = stream_ops[sid];
      std::vector<TaskId> seq;
      for (std::size_t ei : evs) {
        const auto& e = rank.events[ei];
        TaskId launch = model::kNoTask;
        if (const auto* call = launches_.find(e.correlation)) launch = call->task;
        Phase p = launch != model::kNoTask ? out_.tasks[static_cast<std::size_t>(launch)].phase
                                           : Phase::kNone;
        auto [t, info] = of_event(ri, ei, res);
        t.iteration = launch != model::kNoTask ? out_.dag.task(launch).iteration
                                               : clamp_iter(scan.iteration_of(e.ts));
        const std::uint8_t facts = name_facts(e.name);
        const bool nccl = e.category == EventCategory::kKernel && (facts & kNcclKernel) != 0;
        classify_gpu_op(e, facts, nccl, t, p);
        info.phase = p;
        TaskId id = add(t, info);
        if (launch != model::kNoTask) extra_edges_.push_back({launch, id, EdgeKind::kData});
        seq.push_back(id);
        Nanos launched = launch != model::kNoTask
                             ? out_.tasks[static_cast<std::size_t>(launch)].measured_start
                             : e.ts - run_.origin;
        launched_ops.push_back({launched, id});
        if (nccl) per_rank_comm_[ri].push_back(id);
      }
      chains_.push_back(std::move(seq));
    }
  }

  // A GPU op's task kind and phase: NCCL kernels communicate, copies copy, other kernels
  // compute in their launch's phase (or, without one, what their name says).
  static void classify_gpu_op(const ImportedEvent& e, std::uint8_t facts, bool nccl, Task& t,
                              Phase& p) {
    if (nccl) {
      t.kind = TaskKind::kComm;
      p = Phase::kComm;
    } else if (e.category == EventCategory::kMemcpy) {
      t.kind = (facts & kHtoD) != 0 ? TaskKind::kH2D : TaskKind::kMemcpy;
    } else if (e.category == EventCategory::kMemset) {
      t.kind = TaskKind::kMemcpy;
    } else {
      if (p == Phase::kNone || p == Phase::kComm) {
        p = (facts & kBackwardName) != 0 ? Phase::kBackward : Phase::kForward;
      }
      t.kind = kind_of_phase(p);
      if (t.kind == TaskKind::kOther || t.kind == TaskKind::kIo) t.kind = TaskKind::kForward;
    }
  }

  // cudaStreamWaitEvent: GPU-side, the next op launched on another stream waits for the op the
  // latest cudaEventRecord of this thread captured (the streams are not in the trace, so this is
  // the launch order's best reading; docs/analysis.md).
  void link_stream_waits(std::size_t ri) {
    const auto& rank = run_.ranks[ri];
    std::vector<std::tuple<Nanos, TaskId, std::int64_t>> all;  // launched, task, stream
    for (const auto& [sid, v] : stream_ops_[ri]) {
      for (const auto& [when, id] : v) all.emplace_back(when, id, sid);
    }
    std::sort(all.begin(), all.end());
    std::map<std::int64_t, Nanos> last_record;  // thread -> ts of its latest cudaEventRecord
    for (const auto& e : rank.events) {
      if (e.category != EventCategory::kRuntime) continue;
      const std::uint8_t facts = name_facts(e.name);
      if ((facts & kEventRecord) != 0) {
        last_record[e.tid] = e.ts - run_.origin;
        continue;
      }
      if ((facts & kStreamWaitEvent) == 0) continue;
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
  model::Expected<void> link_syncs(std::size_t ri) {
    const auto& rank = run_.ranks[ri];
    const auto& stream_ops = stream_ops_[ri];
    std::unordered_map<std::int64_t, const ImportedEvent*> sync_records;
    for (const auto& e : rank.events) {
      if (e.category == EventCategory::kSync && e.correlation >= 0) {
        sync_records[e.correlation] = &e;
      }
    }
    // Device syncs wait for every stream; a thread's device syncs follow each other in program
    // order, so each needs edges only from the streams that launched since the thread's
    // previous one (the rest it already waits for through that one). Edges stay linear in the
    // ops, not syncs x streams. `launches`: every op's (launch time, stream), in time order.
    std::vector<std::pair<Nanos, std::int64_t>> launches;
    for (const auto& [sid, v] : stream_ops) {
      for (const auto& op : v) launches.emplace_back(op.first, sid);
    }
    std::sort(launches.begin(), launches.end());
    struct DeviceSync {
      Nanos at = 0;
      Nanos awaited_end = -1;  // what it and the ones before it waited for, at the latest
    };
    std::unordered_map<std::int64_t, DeviceSync> last_device_sync;  // by thread
    std::vector<std::int64_t> new_streams;
    for (const auto& sc : sync_calls_) {
      if (sc.rank != ri) continue;
      const auto& call = rank.events[sc.event];
      const auto& info = out_.tasks[static_cast<std::size_t>(sc.task)];
      std::vector<TaskId> awaited;
      Nanos carried_end = -1;
      bool device = false;
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
      } else if (rec && rn == "Event Sync" && rank.detail(*rec).wait_on_corr >= 0 &&
                 rank.detail(*rec).wait_on_stream >= 0) {
        const EventDetail& wait = rank.detail(*rec);
        const auto* r = launches_.find(wait.wait_on_corr);
        Nanos when = r != nullptr ? rank.events[r->event].ts - run_.origin : info.measured_start;
        last_before(wait.wait_on_stream, when);
      } else {
        device = true;
        const Nanos at = info.measured_start;
        auto prev = last_device_sync.find(call.tid);
        if (prev == last_device_sync.end() || prev->second.at > at) {
          for (const auto& [sid, v] : stream_ops) last_before(sid, at);
        } else {
          auto lo = std::upper_bound(launches.begin(), launches.end(),
                                     std::make_pair(prev->second.at, INT64_MAX));
          auto hi = std::upper_bound(lo, launches.end(), std::make_pair(at, INT64_MAX));
          new_streams.clear();
          for (; lo != hi; ++lo) new_streams.push_back(lo->second);
          std::sort(new_streams.begin(), new_streams.end());
          new_streams.erase(std::unique(new_streams.begin(), new_streams.end()), new_streams.end());
          for (std::int64_t sid : new_streams) last_before(sid, at);
          carried_end = prev->second.awaited_end;
        }
      }
      Nanos awaited_end = carried_end;
      for (TaskId a : awaited) {
        const auto& ai = out_.tasks[static_cast<std::size_t>(a)];
        awaited_end = std::max(awaited_end, ai.measured_start + ai.measured_dur);
        extra_edges_.push_back({a, sc.task, EdgeKind::kData});
      }
      if (device) last_device_sync[call.tid] = {info.measured_start, awaited_end};
      // The work budget: device syncs on many threads each wait for every stream.
      if (extra_edges_.size() > static_cast<std::size_t>(model::kMaxDagEdges)) {
        return model::Error{"'" + rank.file + "': its synchronizations wait for more than " +
                            std::to_string(model::kMaxDagEdges) +
                            " GPU operations in all, more than a task graph dagsgd builds "
                            "may hold (docs/limits.md)"};
      }
      if (awaited_end >= 0) {
        // Only the part of the call after the awaited work finished is the call's own time.
        Nanos end = info.measured_start + info.measured_dur;
        out_.dag.mutable_task(sc.task).duration = std::clamp<Nanos>(
            end - std::max(awaited_end, info.measured_start), 0, info.measured_dur);
      }
    }
    return model::ok();
  }

  // The k-th collective of every rank is one collective: a join task ends when the last rank
  // arrived plus the measured service time. Without every rank in the trace each rank's
  // collective keeps its own task.
  //
  // A collective whose trace names its process group's ranks ("Process Group Ranks") belongs to
  // that group: the k-th collective of a group joins the k-th of that group on each of its
  // ranks. Collectives of the whole run come first in their order; those of smaller groups
  // follow in the order their last rank arrived.
  void join_collectives() {
    const std::size_t nr = run_.ranks.size();
    bool all_present = nr >= 2;
    for (const auto& r : run_.ranks) {
      if (r.world_size != static_cast<int>(nr)) all_present = false;
    }
    std::vector<int> world(nr);
    for (std::size_t r = 0; r < nr; ++r) world[r] = static_cast<int>(r);
    // Per group: per member rank (in the group's order), its collectives (positions in
    // per_rank_comm_) in issue order.
    std::map<std::vector<int>, std::map<int, std::vector<std::size_t>>> groups;
    for (std::size_t r = 0; r < nr && all_present; ++r) {
      for (std::size_t k = 0; k < per_rank_comm_[r].size(); ++k) {
        std::vector<int> members = group_of(r, per_rank_comm_[r][k]);
        if (members.empty()) members = world;
        const bool member = std::find(members.begin(), members.end(), r) != members.end();
        const bool in_run = std::all_of(members.begin(), members.end(),
                                        [&](int m) { return m < static_cast<int>(nr); });
        if (!member || !in_run) all_present = false;
        groups[members][static_cast<int>(r)].push_back(k);
      }
    }
    for (const auto& [members, by_rank] : groups) {
      for (int m : members) {
        auto it = by_rank.find(m);
        if (it == by_rank.end() || it->second.size() != by_rank.begin()->second.size()) {
          all_present = false;
        }
      }
    }
    auto coll_res = resource("collectives", 1 << 20);
    out_.concurrent_resource = coll_res;
    if (!all_present) {
      for (std::size_t r = 0; r < nr; ++r) {
        for (std::size_t k = 0; k < per_rank_comm_[r].size(); ++k) keep_own(r, k);
      }
      return;
    }
    struct Pending {
      Nanos last_arrive = 0;
      const std::vector<int>* members = nullptr;
      std::vector<TaskId> ids;
      std::size_t first_k = 0;
    };
    std::vector<Pending> world_joins;
    std::vector<Pending> group_joins;
    for (const auto& [members, by_rank] : groups) {
      const std::size_t count = by_rank.begin()->second.size();
      for (std::size_t j = 0; j < count; ++j) {
        Pending p{INT64_MIN, &members, {}, by_rank.at(members.front())[j]};
        for (int m : members) {
          const TaskId id = per_rank_comm_[static_cast<std::size_t>(m)][by_rank.at(m)[j]];
          p.ids.push_back(id);
          p.last_arrive =
              std::max(p.last_arrive, out_.tasks[static_cast<std::size_t>(id)].measured_start);
        }
        (members == world ? world_joins : group_joins).push_back(std::move(p));
      }
    }
    std::stable_sort(
        group_joins.begin(), group_joins.end(),
        [](const Pending& a, const Pending& b) { return a.last_arrive < b.last_arrive; });
    for (auto* list : {&world_joins, &group_joins}) {
      for (const auto& p : *list) join(*p.members, p.ids, p.first_k, coll_res);
    }
  }

  // The ranks of the process group a comm task's event names (empty: the trace does not say).
  std::vector<int> group_of(std::size_t r, TaskId id) const {
    const auto& rank = run_.ranks[r];
    const auto& e =
        rank.events[static_cast<std::size_t>(out_.tasks[static_cast<std::size_t>(id)].event)];
    const std::int32_t group = rank.detail(e).group_ranks;
    if (group < 0) return {};
    std::vector<int> ranks = parse_group_ranks(rank.str(group));
    return ranks.size() < 2 ? std::vector<int>{} : ranks;
  }

  TraceCollective new_collective(std::size_t r, TaskId id) const {
    const std::size_t nr = run_.ranks.size();
    TraceCollective c;
    c.arrive.assign(nr, -1);
    c.span_start.assign(nr, -1);
    c.span_end.assign(nr, -1);
    const auto& rank = run_.ranks[r];
    const auto& ti = out_.tasks[static_cast<std::size_t>(id)];
    const auto& e = rank.events[static_cast<std::size_t>(ti.event)];
    if (e.collective >= 0) {
      c.name = rank.str(e.collective);
      c.kind = classify_collective(c.name);
    } else {
      c.kind = nccl_kernel_collective(rank.str(e.name));
      c.name = collective_name(c.kind);
    }
    c.bytes = e.bytes;
    c.out_bytes = rank.detail(e).out_bytes;
    c.ranks = e.group_size > 0 ? e.group_size : rank.world_size;
    c.group_ranks = group_of(r, id);
    return c;
  }

  // Joins the collective whose part on member members[i] is task ids[i]; `k`: its position on
  // the first member.
  void join(const std::vector<int>& members, const std::vector<TaskId>& ids, std::size_t k,
            model::ResourceId coll_res) {
    TraceCollective c = new_collective(static_cast<std::size_t>(members.front()), ids.front());
    Nanos last_arrive = INT64_MIN;
    Nanos first_end = INT64_MAX;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const auto r = static_cast<std::size_t>(members[i]);
      const auto& ti = out_.tasks[static_cast<std::size_t>(ids[i])];
      c.arrive[r] = ti.measured_start;
      c.span_start[r] = ti.measured_start;
      c.span_end[r] = ti.measured_start + ti.measured_dur;
      last_arrive = std::max(last_arrive, ti.measured_start);
      first_end = std::min(first_end, c.span_end[r]);
    }
    c.ranks = static_cast<int>(members.size());
    c.joined = true;
    c.measured = std::max<Nanos>(0, first_end - last_arrive);
    Task t;
    t.duration = c.measured;
    t.resource = coll_res;
    t.worker = -1;
    t.iteration = out_.dag.task(ids.front()).iteration;
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
    // Each rank's own kernel/call becomes its arrival (zero length) before the join; the rank
    // continues after the join through a zero-length task in the kernel's place.
    for (TaskId id : ids) {
      out_.dag.mutable_task(id).duration = 0;
      out_.tasks[static_cast<std::size_t>(id)].collective = info.collective;
      joined_.emplace(id, c.task);
    }
    out_.collectives.push_back(std::move(c));
  }

  void keep_own(std::size_t r, std::size_t k) {
    TaskId id = per_rank_comm_[r][k];
    const auto& ti = out_.tasks[static_cast<std::size_t>(id)];
    TraceCollective c = new_collective(r, id);
    c.arrive[r] = ti.measured_start;
    c.span_start[r] = ti.measured_start;
    c.span_end[r] = ti.measured_start + ti.measured_dur;
    c.measured = ti.measured_dur;
    c.iteration = out_.dag.task(id).iteration;
    c.group = static_cast<int>(k);
    c.task = id;
    out_.tasks[static_cast<std::size_t>(id)].collective =
        static_cast<std::int32_t>(out_.collectives.size());
    out_.collectives.push_back(std::move(c));
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
  // The rank being scanned: label_phase() per string index (kUnknownPhase: not yet asked).
  static constexpr std::uint8_t kUnknownPhase = 0xff;
  std::vector<std::uint8_t> label_phase_;
  std::vector<std::uint8_t> name_facts_;  // name_facts() per string index (0: not yet asked)
  const ImportedRank* scanned_ = nullptr;
  std::vector<std::vector<TaskId>> chains_;
  std::vector<std::vector<TaskId>> per_rank_comm_;
  std::map<std::size_t, std::map<std::int64_t, std::vector<std::pair<Nanos, TaskId>>>> stream_ops_;
  std::vector<SyncCall> sync_calls_;
  std::vector<Edge> extra_edges_;
  std::unordered_map<TaskId, TaskId> joined_;
  // The rank being built: correlation id -> its runtime call's task and event.
  CorrelationTable launches_;
};

}  // namespace

model::Expected<void> build_kineto_dag(const ImportedRun& run, TraceDag& out) {
  return KinetoBuilder(run, out).build();
}

}  // namespace dagsgd::trace::detail
