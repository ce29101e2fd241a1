// Host CPUs: ranks placed on one host share its cores, so when ranks outnumber cores their
// computation runs slower than alone.
#pragma once

#include <cstdint>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/sim/engine.h"

namespace dagsgd::sim {

struct HostPlacement {
  std::vector<int> worker_host;  // host index of each worker (Task::worker)
  std::vector<int> host_cores;   // cores of each host
};

// How many times slower a rank's computation runs on `host` than alone on a core under fair
// time slicing: ranks on the host / cores, at least 1.
double oversubscription(const HostPlacement& placement, int host);

// Host CPUs shared by time slicing (processor sharing): every computation task of a host runs
// at once, each at min(1, cores / running tasks) of a core, the rates recomputed whenever a
// task starts or ends. This is how the kernel's scheduler shares a machine among more runnable
// ranks than cores over any span longer than its slices (4 ms on this project's machines):
// every rank advances, none waits for another rank's long task to end (a queue for free cores,
// the model before 2026-12-03, made a rank wait out two other ranks' long layers). Only
// computation counts: a rank waiting for a collective takes no share.
// A task timer (engine.h) for the tasks given to `assign`; one object per simulation.
class SharedCpus final : public TaskTimer {
 public:
  // Cores of each host; the tasks are assigned afterwards.
  explicit SharedCpus(std::vector<int> host_cores);
  // Task `t` runs on `host` and needs `work` ns of one core. Tasks of no work are not taken.
  void assign(model::TaskId t, int host, model::Nanos work);

  bool handles(model::TaskId t) const override;
  void start(model::TaskId t, model::Nanos now) override;
  model::Nanos next_event() const override;
  void advance(model::Nanos now, std::vector<model::TaskId>& finished) override;

 private:
  struct Running {
    model::TaskId task;
    double remaining;  // ns of one core
    std::uint64_t order;
  };
  double rate(std::size_t host) const;
  double next_exact() const;
  void progress_to(double t);

  std::vector<int> cores_;
  std::vector<std::int32_t> host_of_;  // by task, -1: not handled
  std::vector<model::Nanos> work_;
  std::vector<std::vector<Running>> running_;  // by host
  double clock_ = 0;
  std::uint64_t started_ = 0;
};

// The DAG and timer for shared host CPUs: the DAG (a finalized copy of `dag`) keeps every
// task's resource (a rank's tasks still run one at a time); `cpu_scale[t]` > 0 puts task t (of a
// placed worker) on its host's cores with its duration multiplied by that factor, e.g. durations
// measured under contention (4 ranks on 2 cores) divided by the measured oversubscription; 0
// leaves it as it is (GPU kernels, communication). One entry per task; the timer decides when
// the tasks on cores end.
struct SharedCpuDag {
  model::Dag dag;
  SharedCpus cpus;
};
// Errors: a worker without a host, a host index out of range, a host without cores.
model::Expected<SharedCpuDag> share_host_cpus(const model::Dag& dag, const HostPlacement& placement,
                                              const std::vector<double>& cpu_scale);

}  // namespace dagsgd::sim
