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
// engine's (time, sequence) order exactly, without storing a sequence number.
class EventQueue {
 public:
  struct Event {
    std::uint64_t time;
    TaskId task;
  };

  void reset() {
    for (auto& b : buckets_) b.clear();
    head_ = 0;
    last_ = 0;
    mask_ = 0;
  }
  bool empty() const { return head_ == buckets_[0].size() && mask_ == 0; }
  // The task of the event `k` pops ahead when it is already known (same time as the last), or
  // kNoTask.
  TaskId ahead(std::size_t k) const {
    return head_ + k < buckets_[0].size() ? buckets_[0][head_ + k].task : model::kNoTask;
  }

  void push(std::uint64_t time, TaskId task) {
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

}  // namespace

struct Engine::Scratch {
  // Not a vector: every element is written before it is read, so growing skips zero-filling.
  std::unique_ptr<TaskState[]> tasks;
  std::size_t capacity = 0;
  std::vector<ResourceState> resources;
  EventQueue events;
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
      const EventQueue::Event ev = queue.pop();
      if (const TaskId a = queue.ahead(kPrefetchEvents); a != model::kNoTask) {
        __builtin_prefetch(&state[a]);
        __builtin_prefetch(&state[a + 1]);  // its successor, most often
      }
      if (const TaskId a = queue.ahead(kPrefetchEvents / 2); a != model::kNoTask) {
        __builtin_prefetch(&succ[state[a].succ_begin]);
      }
      complete(ev.task, static_cast<Nanos>(ev.time));
    }
  } else {
    // The timer's tasks finish when it says; at equal times the queue's events go first.
    std::vector<TaskId> timed;
    for (;;) {
      const Nanos timer_next = timer->next_event();
      const std::uint64_t queue_next = queue.next_time();
      if (!queue.empty() && (timer_next == TaskTimer::kNever ||
                             queue_next <= static_cast<std::uint64_t>(timer_next))) {
        const EventQueue::Event ev = queue.pop();
        complete(ev.task, static_cast<Nanos>(ev.time));
      } else if (timer_next != TaskTimer::kNever) {
        timed.clear();
        timer->advance(timer_next, timed);
        for (TaskId t : timed) {
          TaskState& ts = state[t];
          ts.duration = timer_next - ts.start;  // what the result reports as its finish
          complete(t, timer_next);
        }
      } else {
        break;
      }
    }
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

model::Expected<SimResult> simulate(const Dag& dag, TaskTimer* timer) {
  Engine engine;
  SimResult r;
  auto status = engine.run(dag, r, timer);
  if (!status.ok()) return status.error();
  return r;
}

}  // namespace dagsgd::sim
