// Host CPUs: ranks placed on one host share its cores, so when ranks outnumber cores their
// computation runs slower than alone.
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

// The DAG (a finalized copy of `dag`) with its computation on the hosts' shared cores. An MPI
// rank is runnable all the time: it computes, or it waits in an MPI call, and Open MPI waits by
// polling its progress loop. So the kernel's fair time slicing gives every rank of a host
// min(1, cores / ranks) of a core throughout, whether the host's other ranks compute or wait
// (measured: dagsgd-cpu-share-bench, docs/validation.md "Waiting ranks keep their share"), and
// a task's time is its work times the host's oversubscription. (A library that gives the core
// away while it waits, e.g. Open MPI with mpi_yield_when_idle 1, is not modeled.)
// `cpu_scale[t]` > 0 puts task t (of a placed worker) on its host's cores with its duration
// multiplied by that factor and by the oversubscription, e.g. durations measured under
// contention (4 ranks on 2 cores) divided by the measured oversubscription; 0 leaves it as it
// is (GPU kernels, communication). One entry per task. Errors: a worker without a host, a host
// index out of range, a host without cores.
model::Expected<model::Dag> share_host_cpus(const model::Dag& dag, const HostPlacement& placement,
                                            const std::vector<double>& cpu_scale);

}  // namespace dagsgd::sim
