// Host CPUs as a resource: ranks placed on one host share its cores, so when ranks outnumber
// cores their computation waits for a free core instead of running at full speed.
#pragma once

#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/expected.h"

namespace dagsgd::sim {

struct HostPlacement {
  std::vector<int> worker_host;  // host index of each worker (Task::worker)
  std::vector<int> host_cores;   // cores of each host
};

// How many times slower a rank's computation runs on `host` than alone on a core under fair
// time slicing: ranks on the host / cores, at least 1.
double oversubscription(const HostPlacement& placement, int host);

// A copy of `dag` (finalized) in which every per-worker task except communication (io, h2d,
// forward, backward, update, host work) runs on one resource per host with one slot per core, so
// at most `cores` of them run at once. Each such task's duration is multiplied by
// `duration_scale`: durations measured under contention (e.g. 4 ranks on 2 cores) are divided by
// the measured placement's oversubscription before they are replayed on another placement; with
// the same placement on both sides the measured durations already hold the slowdown and this
// transform is not needed. Communication tasks and tasks of no worker keep their resources.
// Errors: a worker without a host, a host index out of range, a host without cores.
model::Expected<model::Dag> with_host_cpus(const model::Dag& dag, const HostPlacement& placement,
                                           double duration_scale = 1.0);
// The same with a choice per task: `cpu_scale[t]` > 0 moves task t (of a placed worker) onto its
// host's cores with its duration multiplied by that factor; 0 leaves it where it is (e.g. GPU
// kernels, or communication). One entry per task.
model::Expected<model::Dag> with_host_cpus(const model::Dag& dag, const HostPlacement& placement,
                                           const std::vector<double>& cpu_scale);

}  // namespace dagsgd::sim
