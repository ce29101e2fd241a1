// Event loop over completion events ordered by (time, sequence); resources keep FIFO ready queues.
// Laid out for the hot loop: one 32-byte record per task, a radix heap, no allocation per event.
#include "dagsgd/sim/engine.h"

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <memory>

#include "dagsgd/model/check.h"

namespace dagsgd::sim {

using model::Dag;
using model::Nanos;
using model::TaskId;

namespace {

// Everything the loop reads or writes about one task, two tasks per cache line: a finishing task
// and its successors (usually its neighbours in the DAG's numbering) share lines, and start and
// gate are copied out to the result in one sequential pass at the end.
struct TaskState {
  Nanos duration;
  // -1 until the task is ready; its ready time while it waits for its resource; then its start.
  Nanos start;
  model::ResourceId resource;
  // Unfinished predecessors; once the task waits on its resource, the next waiting task
  // (the ready queues are intrusive FIFO lists, so queueing allocates nothing).
  std::int32_t pending;
  // Successors: succ[succ_begin, next task's succ_begin); a sentinel follows the last task.
  std::uint32_t succ_begin;
  TaskId gate;
};
static_assert(sizeof(TaskState) == 32);

// How far ahead the loop prefetches: the state of the event that many pops ahead, and the
// successors of a task with many (a collective's, one per worker, far apart in memory).
constexpr std::size_t kPrefetchEvents = 8;
constexpr std::uint32_t kPrefetchSuccessors = 8;

struct ResourceState {
  std::int32_t free_slots;
  TaskId head;  // longest-waiting ready task, or kNoTask
  TaskId tail;
};

// A monotone priority queue of completion events (a radix heap). Every pushed time is at least
// the last popped one, since durations are non-negative. An event lives in the bucket named by
// the highest bit in which its time differs from the last popped time; buckets are filled only
// by appends, and a bucket is split only into empty lower buckets, so every bucket stays in push
// order, and push order is sequence order. Equal times therefore pop in sequence order: the
// engine's (time, sequence) order exactly, without storing a sequence number. `Payload` names
// the task (a TaskId, or a worker and position in the compact S-SGD DAG).
template <class Payload>
class EventQueue {
 public:
  struct Event {
    std::uint64_t time;
    Payload task;
  };

  void reset() {
    for (auto& b : buckets_) b.clear();
    head_ = 0;
    last_ = 0;
    mask_ = 0;
  }
  bool empty() const { return head_ == buckets_[0].size() && mask_ == 0; }
  // The last event pushed at `time`, while it is still queued, so that the caller may make it
  // stand for one more event pushed right after it (nullptr when there is none). Events of one
  // time are all in one bucket in push order, so its last event at that time is the last pushed.
  Payload* last_at(std::uint64_t time) {
    auto& b = buckets_[static_cast<std::size_t>(bucket(time))];
    if (b.empty() || b.back().time != time || (&b == &buckets_[0] && b.size() == head_)) {
      return nullptr;
    }
    return &b.back().task;
  }
  // The event `k` pops ahead when it is already known (same time as the last), or nullptr.
  const Payload* ahead(std::size_t k) const {
    return head_ + k < buckets_[0].size() ? &buckets_[0][head_ + k].task : nullptr;
  }

  void push(std::uint64_t time, Payload task) {
    const int b = bucket(time);
    buckets_[static_cast<std::size_t>(b)].push_back(Event{time, task});
    if (b > 0) mask_ |= std::uint64_t{1} << (b - 1);
  }

  // The time of the next pop; max() when empty.
  std::uint64_t next_time() {
    if (empty()) return std::numeric_limits<std::uint64_t>::max();
    if (head_ == buckets_[0].size()) {
      buckets_[0].clear();
      head_ = 0;
      refill();
    }
    return buckets_[0][head_].time;
  }

  // Precondition: !empty().
  Event pop() {
    auto& now = buckets_[0];
    if (head_ == now.size()) {
      now.clear();
      head_ = 0;
      refill();
    }
    return now[head_++];
  }

 private:
  int bucket(std::uint64_t time) const { return static_cast<int>(std::bit_width(time ^ last_)); }

  // Moves the events of the earliest non-empty bucket down, the earliest ones into bucket 0.
  void refill() {
    const int b = std::countr_zero(mask_) + 1;
    auto& from = buckets_[static_cast<std::size_t>(b)];
    std::uint64_t least = std::numeric_limits<std::uint64_t>::max();
    for (const Event& e : from) least = std::min(least, e.time);
    last_ = least;
    mask_ &= ~(std::uint64_t{1} << (b - 1));
    for (const Event& e : from) {
      const int to = bucket(e.time);
      buckets_[static_cast<std::size_t>(to)].push_back(e);
      if (to > 0) mask_ |= std::uint64_t{1} << (to - 1);
    }
    from.clear();
  }

  std::array<std::vector<Event>, 65> buckets_;
  std::size_t head_ = 0;  // next event of bucket 0 (the events at time last_)
  std::uint64_t last_ = 0;
  std::uint64_t mask_ = 0;  // bit b-1 set: bucket b (1..64) is not empty
};

// The event loop with a task timer: the timer's tasks finish when it says; at equal times the
// queue's events go first. `on_event(payload, time)` completes a queued event, `on_timed(task,
// time)` a task the timer finished.
template <class Queue, class OnEvent, class OnTimed>
void run_with_timer(Queue& queue, TaskTimer& timer, OnEvent&& on_event, OnTimed&& on_timed) {
  std::vector<TaskId> timed;
  for (;;) {
    const Nanos timer_next = timer.next_event();
    const std::uint64_t queue_next = queue.next_time();
    if (!queue.empty() &&
        (timer_next == TaskTimer::kNever || queue_next <= static_cast<std::uint64_t>(timer_next))) {
      const auto ev = queue.pop();
      on_event(ev.task, static_cast<Nanos>(ev.time));
    } else if (timer_next != TaskTimer::kNever) {
      timed.clear();
      timer.advance(timer_next, timed);
      for (TaskId t : timed) on_timed(t, timer_next);
    } else {
      break;
    }
  }
}

// An event of the compact S-SGD DAG: the tasks at `position` of workers [first, end), finishing
// at one time and pushed one right after another, so that it stands for that many events in
// worker order (alike workers move in step: a run of them is one event). Positions from
// worker_tasks() on are collectives (group = position - worker_tasks()).
struct SsgdEvent {
  std::int32_t position;
  std::int32_t first;
  std::int32_t end;
};

// One worker of the compact S-SGD DAG: where its two chains are. The input chain (io, h2d) of
// iteration h2d_done may run ahead of the compute chain (f, b, update) of iteration update_done;
// f[0] of an iteration waits for both. Its resources never have a waiting task (each serves
// one chain), so they need no state.
struct WorkerState {
  std::int32_t h2d_done;
  std::int32_t update_done;
  std::int32_t update_pending;  // unfinished dependencies of update(update_done)
};

}  // namespace

struct Engine::Scratch {
  // Not a vector: every element is written before it is read, so growing skips zero-filling.
  std::unique_ptr<TaskState[]> tasks;
  std::size_t capacity = 0;
  std::vector<ResourceState> resources;
  EventQueue<TaskId> events;
  // The compact S-SGD DAG's.
  EventQueue<SsgdEvent> ssgd_events;
  std::vector<WorkerState> workers;
  std::vector<std::int32_t> comm_pending;
  struct WaitingComm {
    std::int32_t group;
    TaskId gate;
    Nanos ready;
  };
  std::vector<WaitingComm> comm_waiting;
};

Engine::Engine() : scratch_(std::make_unique<Scratch>()) {}
Engine::~Engine() = default;
Engine::Engine(Engine&&) noexcept = default;
Engine& Engine::operator=(Engine&&) noexcept = default;

model::Expected<void> Engine::run(const Dag& dag, SimResult& r, TaskTimer* timer) {
  DAGSGD_CHECK(dag.finalized());
  DAGSGD_CHECK(dag.edge_count() < std::numeric_limits<std::uint32_t>::max());
  // Durations may have changed since the DAG was built (replay prices collectives on a target
  // fabric): times outside int64 are bad input, not an overflow.
  DAGSGD_TRY(dag.check_bounds());
  const std::size_t n = dag.task_count();
  auto& resources = scratch_->resources;
  auto& queue = scratch_->events;

  if (scratch_->capacity < n + 1) {
    scratch_->tasks = std::make_unique_for_overwrite<TaskState[]>(n + 1);
    scratch_->capacity = n + 1;
  }
  TaskState* const state = scratch_->tasks.get();
  resources.resize(dag.resources().size());
  for (std::size_t i = 0; i < resources.size(); ++i) {
    resources[i] = ResourceState{dag.resources()[i].capacity, model::kNoTask, model::kNoTask};
  }
  queue.reset();

  auto start_task = [&](TaskState& ts, TaskId t, Nanos now) {
    ts.start = now;
    if (timer != nullptr && timer->handles(t)) {
      timer->start(t, now);
    } else {
      queue.push(static_cast<std::uint64_t>(now + ts.duration), t);
    }
  };
  auto make_ready = [&](TaskId t, Nanos now) {
    TaskState& ts = state[t];
    ResourceState& rs = resources[static_cast<std::size_t>(ts.resource)];
    if (rs.free_slots > 0) {
      --rs.free_slots;
      start_task(ts, t, now);
      return;
    }
    ts.start = now;
    ts.pending = model::kNoTask;
    if (rs.tail == model::kNoTask) {
      rs.head = t;
    } else {
      state[rs.tail].pending = t;
    }
    rs.tail = t;
  };

  // Tasks without dependencies are ready at time 0, in task order; make_ready touches only
  // states already built (its own and earlier waiting ones), so this happens in the same pass.
  const TaskId* const succ = n > 0 ? dag.succ_begin(0) : nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<TaskId>(i);
    const model::Task& t = dag.task(id);
    // add_task checks this, but mutable_task does not; the event queue relies on it.
    DAGSGD_CHECK(t.duration >= 0);
    state[i] = TaskState{t.duration,
                         -1,
                         t.resource,
                         dag.in_degree(id),
                         static_cast<std::uint32_t>(dag.succ_begin(id) - succ),
                         model::kNoTask};
    if (state[i].pending == 0) make_ready(id, 0);
  }
  state[n] = TaskState{0, -1, 0, 0, static_cast<std::uint32_t>(dag.edge_count()), model::kNoTask};

  std::uint64_t events = 0;
  auto complete = [&](TaskId task, Nanos now) {
    ++events;
    const TaskState& done = state[task];
    // Release the resource to the longest-waiting ready task.
    ResourceState& rs = resources[static_cast<std::size_t>(done.resource)];
    if (rs.head != model::kNoTask) {
      const TaskId next = rs.head;
      TaskState& ns = state[next];
      rs.head = ns.pending;
      if (rs.head == model::kNoTask) rs.tail = model::kNoTask;
      // It waited for the resource if it was ready before now.
      if (ns.start < now) ns.gate = task;
      start_task(ns, next, now);
    } else {
      ++rs.free_slots;
    }
    const std::uint32_t end = state[task + 1].succ_begin;
    for (std::uint32_t e = done.succ_begin; e != end; ++e) {
      if (e + kPrefetchSuccessors < end) __builtin_prefetch(&state[succ[e + kPrefetchSuccessors]]);
      const TaskId s = succ[e];
      // Dependencies finish in event order, so the last one to finish is the gate.
      if (--state[s].pending == 0) {
        state[s].gate = task;
        make_ready(s, now);
      }
    }
  };
  if (timer == nullptr) {
    while (!queue.empty()) {
      const auto ev = queue.pop();
      if (const TaskId* a = queue.ahead(kPrefetchEvents); a != nullptr) {
        __builtin_prefetch(&state[*a]);
        __builtin_prefetch(&state[*a + 1]);  // its successor, most often
      }
      if (const TaskId* a = queue.ahead(kPrefetchEvents / 2); a != nullptr) {
        __builtin_prefetch(&succ[state[*a].succ_begin]);
      }
      complete(ev.task, static_cast<Nanos>(ev.time));
    }
  } else {
    run_with_timer(queue, *timer, complete, [&](TaskId t, Nanos now) {
      TaskState& ts = state[t];
      ts.duration = now - ts.start;  // what the result reports as its finish
      complete(t, now);
    });
  }

  // Every started task finished (the queue ran dry), at its start plus its duration.
  r.start.resize(n);
  r.finish.resize(n);
  r.gate.resize(n);
  r.events = events;
  r.makespan = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const TaskState& ts = state[i];
    const Nanos f = ts.start < 0 ? -1 : ts.start + ts.duration;
    r.start[i] = ts.start;
    r.finish[i] = f;
    r.gate[i] = ts.gate;
    r.makespan = std::max(r.makespan, f);
  }
  if (events != n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (r.finish[i] < 0) {
        return model::Error{
            "the task graph cannot finish: " + dag.describe(static_cast<TaskId>(i)) +
            " never ran (a dependency cycle)"};
      }
    }
  }
  return model::ok();
}

// The general loop's rules on the compact S-SGD DAG, with the successors of each task written
// out in the order build_ssgd_dag adds its edges, so that events are pushed, and therefore
// popped, in the same order: h2d(k) -> f[0](k), io(k+1) (prefetch); f and b -> the next task
// of the chain, then a trigger's collective; update(k) -> io(k+1) (no prefetch), f[0](k+1); a
// collective -> every worker's update in worker order. Only the comm channel is ever contended.
model::Expected<void> Engine::run(const model::SsgdDag& dag, SsgdSimResult& r, TaskTimer* timer,
                                  int first_recorded) {
  const int W = dag.workers();
  const int K = dag.iterations();
  const int G = dag.group_count();
  const int P = dag.worker_tasks();
  const int update_pos = dag.update_position();
  const int first_backward = dag.first_backward();
  const bool prefetch = dag.config().prefetch;
  const auto& groups = dag.config().groups;
  if (first_recorded < 0) first_recorded = K - 1;
  DAGSGD_CHECK(first_recorded < K);

  // The result's geometry and templates.
  r.workers_ = static_cast<std::size_t>(W);
  r.worker_tasks_ = static_cast<std::size_t>(P);
  r.iteration_tasks_ = dag.iteration_tasks();
  r.first_recorded_ = first_recorded;
  r.first_recorded_id_ = dag.task_id(first_recorded, 0, 0);
  const auto recorded_iterations = static_cast<std::size_t>(K - first_recorded);
  r.start_.resize(recorded_iterations * r.iteration_tasks_);
  r.gate_.resize(r.start_.size());
  r.comm_finish_.resize(recorded_iterations * static_cast<std::size_t>(G));
  r.durations_.assign(dag.durations_of(0), dag.durations_of(0) + P);
  r.worker_template_.clear();
  if (!dag.uniform()) {
    // Rebuilt from the DAG's accessors: the templates of the distinct durations.
    r.durations_.clear();
    std::vector<const Nanos*> seen;
    r.worker_template_.reserve(static_cast<std::size_t>(W));
    for (int w = 0; w < W; ++w) {
      const Nanos* d = dag.durations_of(w);
      auto it = std::find(seen.begin(), seen.end(), d);
      if (it == seen.end()) {
        seen.push_back(d);
        r.durations_.insert(r.durations_.end(), d, d + P);
        it = seen.end() - 1;
      }
      r.worker_template_.push_back(static_cast<std::int32_t>(it - seen.begin()));
    }
  }
  r.iteration_end_.assign(static_cast<std::size_t>(K), 0);
  r.iteration_last_.assign(static_cast<std::size_t>(K), model::kNoTask);

  auto& queue = scratch_->ssgd_events;
  auto& workers = scratch_->workers;
  auto& comm_pending = scratch_->comm_pending;
  auto& waiting = scratch_->comm_waiting;
  queue.reset();
  workers.assign(static_cast<std::size_t>(W), WorkerState{0, 0, 0});
  comm_pending.assign(static_cast<std::size_t>(G), W);
  waiting.clear();
  waiting.reserve(static_cast<std::size_t>(G));
  std::size_t waiting_head = 0;
  bool comm_busy = false;
  int comm_iteration = 0;  // of the collectives now ready or running (never two at once)

  const std::size_t iteration_tasks = r.iteration_tasks_;
  const auto workers_n = static_cast<std::size_t>(W);
  Nanos* const rec_start = r.start_.data();
  TaskId* const rec_gate = r.gate_.data();
  const bool uniform = dag.uniform();
  const Nanos* const durations = dag.durations_of(0);
  auto id_of = [&](int it, int w, int p) { return dag.task_id(it, w, p); };
  // Starts worker w's task at `p` of iteration `it`, gated by `gate`: records it, and pushes its
  // completion, as one more event of the last one pushed when that is its neighbour's.
  auto start = [&](int it, int w, int p, Nanos now, TaskId gate) {
    if (it >= first_recorded) {
      const std::size_t i = static_cast<std::size_t>(it - first_recorded) * iteration_tasks +
                            static_cast<std::size_t>(p) * workers_n + static_cast<std::size_t>(w);
      rec_start[i] = now;
      rec_gate[i] = gate;
    }
    const auto time =
        static_cast<std::uint64_t>(now + (uniform ? durations : dag.durations_of(w))[p]);
    SsgdEvent* last = queue.last_at(time);
    if (last != nullptr && last->position == p && last->end == w) {
      ++last->end;
    } else {
      queue.push(time, SsgdEvent{p, w, w + 1});
    }
  };
  auto start_comm = [&](int g, Nanos now, TaskId gate) {
    const int it = comm_iteration;
    if (it >= first_recorded) {
      const std::size_t i = static_cast<std::size_t>(it - first_recorded) * iteration_tasks +
                            workers_n * static_cast<std::size_t>(P) + static_cast<std::size_t>(g);
      rec_start[i] = now;
      rec_gate[i] = gate;
    }
    const TaskId id = dag.comm_id(it, g);
    if (timer != nullptr && timer->handles(id)) {
      timer->start(id, now);
    } else {
      queue.push(static_cast<std::uint64_t>(now + groups[static_cast<std::size_t>(g)].comm),
                 SsgdEvent{P + g, 0, 1});
    }
  };
  // A backward task at `p` finished: its collective's join.
  auto trigger = [&](int it, int w, int p, int g, Nanos now) {
    if (--comm_pending[static_cast<std::size_t>(g)] != 0) return;
    comm_pending[static_cast<std::size_t>(g)] = W;
    comm_iteration = it;
    if (comm_busy) {
      waiting.push_back({g, id_of(it, w, p), now});
    } else {
      comm_busy = true;
      start_comm(g, now, id_of(it, w, p));
    }
  };
  const int update_dependencies = 1 + G;

  auto complete_comm = [&](int g, Nanos now) {
    const int it = comm_iteration;
    const TaskId self = dag.comm_id(it, g);
    if (it >= first_recorded) {
      r.comm_finish_[static_cast<std::size_t>(it - first_recorded) * static_cast<std::size_t>(G) +
                     static_cast<std::size_t>(g)] = now;
    }
    // The channel goes to the longest-waiting collective; it waited if it was ready before now.
    if (waiting_head < waiting.size()) {
      const auto next = waiting[waiting_head++];
      if (waiting_head == waiting.size()) {
        waiting.clear();
        waiting_head = 0;
      }
      start_comm(next.group, now, next.ready < now ? self : next.gate);
    } else {
      comm_busy = false;
    }
    for (int w = 0; w < W; ++w) {
      WorkerState& ws = workers[static_cast<std::size_t>(w)];
      if (--ws.update_pending == 0) start(it, w, update_pos, now, self);
    }
  };
  // The event's workers one by one, each as the general loop would complete it; the branch on
  // the position is taken once per event.
  std::uint64_t events = 0;
  auto complete = [&](const SsgdEvent& e, Nanos now) {
    const int p = e.position;
    if (p >= P) {
      ++events;
      complete_comm(p - P, now);
      return;
    }
    events += static_cast<std::uint64_t>(e.end - e.first);
    if (p == model::SsgdDag::kIo) {
      for (int w = e.first; w < e.end; ++w) {
        const int it = workers[static_cast<std::size_t>(w)].h2d_done;
        start(it, w, model::SsgdDag::kH2D, now, id_of(it, w, p));
      }
    } else if (p == model::SsgdDag::kH2D) {
      // h2d(it): f[0](it) once update(it - 1) is done, then the next iteration's input.
      for (int w = e.first; w < e.end; ++w) {
        WorkerState& ws = workers[static_cast<std::size_t>(w)];
        const int it = ws.h2d_done;
        ws.h2d_done = it + 1;
        const TaskId self = id_of(it, w, p);
        if (ws.update_done == it) {
          ws.update_pending = update_dependencies;
          start(it, w, model::SsgdDag::kFirstForward, now, self);
        }
        if (prefetch && it + 1 < K) start(it + 1, w, model::SsgdDag::kIo, now, self);
      }
    } else if (p < update_pos - 1) {
      // Forward and backward: the next task of the chain, then a trigger's join.
      const int g = p >= first_backward ? dag.triggered_group(p) : -1;
      for (int w = e.first; w < e.end; ++w) {
        const int it = workers[static_cast<std::size_t>(w)].update_done;
        start(it, w, p + 1, now, id_of(it, w, p));
        if (g >= 0) trigger(it, w, p, g, now);
      }
    } else if (p == update_pos - 1) {
      // b[0]: the update once every collective is done, then a trigger's join.
      const int g = dag.triggered_group(p);
      for (int w = e.first; w < e.end; ++w) {
        WorkerState& ws = workers[static_cast<std::size_t>(w)];
        const int it = ws.update_done;
        if (--ws.update_pending == 0) start(it, w, update_pos, now, id_of(it, w, p));
        if (g >= 0) trigger(it, w, p, g, now);
      }
    } else {
      // update(it): the iteration's end, then the next iteration's input (no prefetch) and f[0].
      for (int w = e.first; w < e.end; ++w) {
        WorkerState& ws = workers[static_cast<std::size_t>(w)];
        const int it = ws.update_done;
        ws.update_done = it + 1;
        Nanos& end = r.iteration_end_[static_cast<std::size_t>(it)];
        TaskId& last = r.iteration_last_[static_cast<std::size_t>(it)];
        const TaskId self = id_of(it, w, p);
        if (last == model::kNoTask || now > end || (now == end && self < last)) {
          end = now;
          last = self;
        }
        if (it + 1 < K) {
          if (!prefetch) start(it + 1, w, model::SsgdDag::kIo, now, self);
          if (ws.h2d_done > it + 1) {
            ws.update_pending = update_dependencies;
            start(it + 1, w, model::SsgdDag::kFirstForward, now, self);
          }
        }
      }
    }
  };

  // Only io(0) of every worker has no dependency.
  for (int w = 0; w < W; ++w) start(0, w, model::SsgdDag::kIo, 0, model::kNoTask);
  Nanos now = 0;
  if (timer == nullptr) {
    while (!queue.empty()) {
      const auto ev = queue.pop();
      now = static_cast<Nanos>(ev.time);
      complete(ev.task, now);
    }
  } else {
    // An event's workers all finish at its time, before the timer's.
    run_with_timer(
        queue, *timer,
        [&](const SsgdEvent& e, Nanos t) {
          now = t;
          complete(e, t);
        },
        [&](TaskId id, Nanos t) {
          now = t;
          const model::SsgdDag::Place place = dag.place(id);
          DAGSGD_CHECK(place.worker < 0 && place.iteration == comm_iteration);
          complete(SsgdEvent{P + place.position, 0, 1}, t);
        });
  }
  r.events_ = events;
  r.makespan_ = now;
  if (events != dag.task_count()) {
    return model::Error{"the task graph cannot finish: " + std::to_string(events) + " of " +
                        std::to_string(dag.task_count()) +
                        " tasks ran (a task timer never finished a collective)"};
  }
  return model::ok();
}

std::size_t SsgdSimResult::index(TaskId id) const {
  DAGSGD_CHECK(recorded(id));
  const auto i = static_cast<std::size_t>(id - first_recorded_id_);
  const std::size_t it = i / iteration_tasks_;
  const std::size_t rest = i % iteration_tasks_;
  const std::size_t worker_part = workers_ * worker_tasks_;
  if (rest >= worker_part) return i;
  return it * iteration_tasks_ + (rest % worker_tasks_) * workers_ + rest / worker_tasks_;
}

Nanos SsgdSimResult::finish(TaskId id) const {
  const std::size_t i = index(id);
  const std::size_t it = i / iteration_tasks_;
  const std::size_t rest = i % iteration_tasks_;
  const std::size_t worker_part = workers_ * worker_tasks_;
  if (rest >= worker_part) {
    const std::size_t groups = iteration_tasks_ - worker_part;
    return comm_finish_[it * groups + (rest - worker_part)];
  }
  const std::size_t position = rest / workers_;
  const std::size_t worker = rest % workers_;
  const std::size_t t =
      worker_template_.empty() ? 0 : static_cast<std::size_t>(worker_template_[worker]);
  return start_[i] + durations_[t * worker_tasks_ + position];
}

model::Expected<SimResult> simulate(const Dag& dag, TaskTimer* timer) {
  Engine engine;
  SimResult r;
  auto status = engine.run(dag, r, timer);
  if (!status.ok()) return status.error();
  return r;
}

}  // namespace dagsgd::sim
