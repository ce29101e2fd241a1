// Event loop over completion events ordered by (time, sequence); resources keep FIFO ready queues.
#include "dagsgd/sim/engine.h"

#include <algorithm>
#include <queue>

#include "dagsgd/model/check.h"

namespace dagsgd::sim {

using model::Dag;
using model::Nanos;
using model::TaskId;

namespace {

struct Event {
  Nanos time;
  std::uint64_t seq;
  TaskId task;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

// A FIFO of ready tasks per resource in one flat ring-free layout: a vector plus a head index.
struct ReadyQueue {
  std::vector<TaskId> items;
  std::size_t head = 0;
  bool empty() const { return head == items.size(); }
  void push(TaskId t) { items.push_back(t); }
  TaskId pop() {
    TaskId t = items[head++];
    if (head == items.size()) {
      items.clear();
      head = 0;
    }
    return t;
  }
};

}  // namespace

model::Expected<SimResult> simulate(const Dag& dag) {
  DAGSGD_CHECK(dag.finalized());
  const std::size_t n = dag.task_count();
  SimResult r;
  r.start.assign(n, -1);
  r.finish.assign(n, -1);
  r.gate.assign(n, model::kNoTask);
  std::vector<std::int32_t> pending(n);
  std::vector<Nanos> ready_at(n, 0);
  for (std::size_t i = 0; i < n; ++i) pending[i] = dag.in_degree(static_cast<TaskId>(i));

  const auto& resources = dag.resources();
  std::vector<int> free_slots(resources.size());
  for (std::size_t i = 0; i < resources.size(); ++i) free_slots[i] = resources[i].capacity;
  std::vector<ReadyQueue> queues(resources.size());

  std::vector<Event> heap_storage;
  heap_storage.reserve(std::min<std::size_t>(n, 1 << 20));
  std::priority_queue<Event, std::vector<Event>, Later> heap(Later{}, std::move(heap_storage));
  std::uint64_t seq = 0;

  auto start_task = [&](TaskId t, Nanos now) {
    auto ti = static_cast<std::size_t>(t);
    r.start[ti] = now;
    heap.push(Event{now + dag.task(t).duration, seq++, t});
  };
  auto make_ready = [&](TaskId t, Nanos now) {
    auto res = static_cast<std::size_t>(dag.task(t).resource);
    if (free_slots[res] > 0) {
      --free_slots[res];
      start_task(t, now);
    } else {
      queues[res].push(t);
    }
  };

  for (std::size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) make_ready(static_cast<TaskId>(i), 0);
  }

  std::size_t done = 0;
  while (!heap.empty()) {
    Event ev = heap.top();
    heap.pop();
    ++r.events;
    const Nanos now = ev.time;
    const auto ti = static_cast<std::size_t>(ev.task);
    r.finish[ti] = now;
    ++done;
    // Release the resource to the longest-waiting ready task.
    auto res = static_cast<std::size_t>(dag.task(ev.task).resource);
    if (!queues[res].empty()) {
      TaskId next = queues[res].pop();
      // It waited for the resource if it was ready before now.
      if (ready_at[static_cast<std::size_t>(next)] < now)
        r.gate[static_cast<std::size_t>(next)] = ev.task;
      start_task(next, now);
    } else {
      ++free_slots[res];
    }
    for (const TaskId* s = dag.succ_begin(ev.task); s != dag.succ_end(ev.task); ++s) {
      auto si = static_cast<std::size_t>(*s);
      // Dependencies finish in time order, so the last one to finish is the gate.
      ready_at[si] = now;
      r.gate[si] = ev.task;
      if (--pending[si] == 0) make_ready(*s, now);
    }
  }

  if (done != n) {
    for (std::size_t i = 0; i < n; ++i) {
      if (r.finish[i] < 0) {
        return model::Error{
            "the task graph cannot finish: " + dag.describe(static_cast<TaskId>(i)) +
            " never ran (a dependency cycle)"};
      }
    }
  }
  for (Nanos f : r.finish) r.makespan = std::max(r.makespan, f);
  return r;
}

}  // namespace dagsgd::sim
