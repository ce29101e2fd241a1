// Iteration windows, interval unions for exposed communication, and the critical-path walk.
#include "dagsgd/sim/analysis.h"

#include <algorithm>
#include <utility>

#include "dagsgd/model/check.h"
#include "intervals.h"

namespace dagsgd::sim {

using model::Nanos;
using model::TaskId;
using model::TaskKind;

namespace {

Interval clip(Nanos s, Nanos e, Nanos lo, Nanos hi) { return {std::max(s, lo), std::min(e, hi)}; }

// The worker's activity in the window, gathered task by task.
struct Activity {
  std::vector<Interval> busy;  // the worker's own tasks
  std::vector<Interval> compute;
  std::vector<Interval> comm;

  // One of the worker's tasks: its duration into the breakdown when it belongs to the analysed
  // iteration, and its clipped interval.
  void add(const model::Task& task, bool in_iteration, Interval iv, Breakdown& b) {
    if (in_iteration) {
      // Where each kind of task goes in the breakdown (collectives are counted apart).
      static constexpr model::Nanos Breakdown::*kField[model::kTaskKindCount] = {
          &Breakdown::io, &Breakdown::h2d,    &Breakdown::forward, &Breakdown::backward,
          nullptr,        &Breakdown::update, &Breakdown::memcpy,  &Breakdown::other};
      if (auto field = kField[static_cast<std::size_t>(task.kind)]; field != nullptr) {
        b.*field += task.duration;
      }
    }
    busy.push_back(iv);
    if (task.kind == TaskKind::kForward || task.kind == TaskKind::kBackward ||
        task.kind == TaskKind::kUpdate) {
      compute.push_back(iv);
    }
  }

  // Exposed communication and idle time of the window.
  void finish(IterationAnalysis& a) const {
    a.breakdown.comm_exposed = length_minus(merge(comm), merge(compute));
    std::vector<Interval> all = busy;
    all.insert(all.end(), comm.begin(), comm.end());
    a.breakdown.idle = (a.end - a.start) - length(merge(all));
  }
};

// Critical path: from the last task of the iteration back through what gated each start, until
// the window's start. `known(t)` says whether t's times are there (a task whose times are not
// ends by the window's start); `start`, `finish`, `gate` and `kind` read a task.
template <class Known, class Start, class Finish, class Gate, class Kind>
void walk_critical_path(IterationAnalysis& a, TaskId last, Known known, Start start, Finish finish,
                        Gate gate, Kind kind) {
  CriticalPath& cp = a.critical_path;
  Nanos cursor = a.end;
  for (TaskId t = last; t != model::kNoTask;) {
    if (!known(t) || finish(t) <= a.start) break;
    Nanos s = std::max(start(t), a.start);
    Nanos e = std::min(finish(t), cursor);
    if (e > s) cp.by_kind[static_cast<std::size_t>(kind(t))] += e - s;
    cp.tasks.push_back(t);
    TaskId g = gate(t);
    Nanos gate_end = g == model::kNoTask || !known(g) ? a.start : std::max(finish(g), a.start);
    if (s > gate_end) cp.wait += s - gate_end;
    cursor = s;
    t = g;
  }
  std::reverse(cp.tasks.begin(), cp.tasks.end());
}

}  // namespace

IterationAnalysis analyze_iteration(const model::Dag& dag, const SimResult& r, int iteration,
                                    int worker) {
  IterationAnalysis a;
  a.iteration = iteration;
  a.worker = worker;
  const auto n = static_cast<TaskId>(dag.task_count());
  TaskId last = model::kNoTask;
  for (TaskId t = 0; t < n; ++t) {
    const auto& task = dag.task(t);
    if (task.kind != TaskKind::kUpdate) continue;
    auto ti = static_cast<std::size_t>(t);
    if (task.iteration == iteration - 1) a.start = std::max(a.start, r.finish[ti]);
    if (task.iteration == iteration && (last == model::kNoTask || r.finish[ti] > a.end)) {
      a.end = r.finish[ti];
      last = t;
    }
  }
  if (last == model::kNoTask) {
    // A DAG without update tasks (e.g. a partial trace): the iteration ends with its last task.
    for (TaskId t = 0; t < n; ++t) {
      auto ti = static_cast<std::size_t>(t);
      if (dag.task(t).iteration == iteration && r.finish[ti] >= a.end) {
        a.end = r.finish[ti];
        last = t;
      }
    }
  }

  Activity act;
  for (TaskId t = 0; t < n; ++t) {
    const auto& task = dag.task(t);
    auto ti = static_cast<std::size_t>(t);
    if (task.kind == TaskKind::kComm) {
      // As simulated: under the flow-level tier a collective's time is not its DAG duration.
      if (task.iteration == iteration) a.breakdown.comm_total += r.finish[ti] - r.start[ti];
      act.comm.push_back(clip(r.start[ti], r.finish[ti], a.start, a.end));
      continue;
    }
    if (task.worker != worker) continue;
    act.add(task, task.iteration == iteration, clip(r.start[ti], r.finish[ti], a.start, a.end),
            a.breakdown);
  }
  act.finish(a);
  walk_critical_path(
      a, last, [](TaskId) { return true; },
      [&](TaskId t) { return r.start[static_cast<std::size_t>(t)]; },
      [&](TaskId t) { return r.finish[static_cast<std::size_t>(t)]; },
      [&](TaskId t) { return r.gate[static_cast<std::size_t>(t)]; },
      [&](TaskId t) { return dag.task(t).kind; });
  return a;
}

IterationAnalysis analyze_iteration(const model::SsgdDag& dag, const SsgdSimResult& r,
                                    int iteration, int worker) {
  DAGSGD_CHECK(iteration >= r.first_recorded() && iteration < dag.iterations());
  DAGSGD_CHECK(worker >= 0 && worker < dag.workers());
  IterationAnalysis a;
  a.iteration = iteration;
  a.worker = worker;
  // Every DAG of this kind has updates: the window runs from the previous iteration's last
  // update to this one's.
  if (iteration > 0) a.start = r.iteration_end(iteration - 1);
  a.end = r.iteration_end(iteration);
  const TaskId last = r.iteration_last(iteration);

  // Tasks of unrecorded (earlier) iterations all end by a.start (every task of an iteration
  // precedes its worker's update), so their clipped intervals would be empty; so does a gate
  // in an unrecorded iteration.
  Activity act;
  const int P = dag.worker_tasks();
  for (int it = r.first_recorded(); it < dag.iterations(); ++it) {
    for (int g = 0; g < dag.group_count(); ++g) {
      const TaskId t = dag.comm_id(it, g);
      if (it == iteration) a.breakdown.comm_total += r.finish(t) - r.start(t);
      act.comm.push_back(clip(r.start(t), r.finish(t), a.start, a.end));
    }
    for (int p = 0; p < P; ++p) {
      const TaskId t = dag.task_id(it, worker, p);
      act.add(dag.task(t), it == iteration, clip(r.start(t), r.finish(t), a.start, a.end),
              a.breakdown);
    }
  }
  act.finish(a);
  walk_critical_path(
      a, last, [&](TaskId t) { return r.recorded(t); }, [&](TaskId t) { return r.start(t); },
      [&](TaskId t) { return r.finish(t); }, [&](TaskId t) { return r.gate(t); },
      [&](TaskId t) { return dag.task(t).kind; });
  return a;
}

std::string bound_kind(const CriticalPath& path, Nanos iteration_time) {
  auto at = [&](TaskKind k) { return path.by_kind[static_cast<std::size_t>(k)]; };
  Nanos compute = at(TaskKind::kForward) + at(TaskKind::kBackward);
  Nanos comm = at(TaskKind::kComm);
  Nanos input = at(TaskKind::kIo) + at(TaskKind::kH2D);
  Nanos update = at(TaskKind::kUpdate);
  (void)iteration_time;
  Nanos top = std::max({compute, comm, input, update});
  if (top == comm && comm > 0) return "communication-bound";
  if (top == input && input > 0) return "input-bound";
  if (top == update && update > 0 && update > compute) return "update-bound";
  return "compute-bound";
}

}  // namespace dagsgd::sim
