// Host CPUs shared by time slicing among ranks that are always runnable (host_cpu.h).
#include "dagsgd/sim/host_cpu.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "dagsgd/model/check.h"

namespace dagsgd::sim {

double oversubscription(const HostPlacement& placement, int host) {
  DAGSGD_CHECK(host >= 0 && static_cast<std::size_t>(host) < placement.host_cores.size());
  auto ranks = std::count(placement.worker_host.begin(), placement.worker_host.end(), host);
  int cores = placement.host_cores[static_cast<std::size_t>(host)];
  DAGSGD_CHECK(cores > 0);
  return std::max(1.0, static_cast<double>(ranks) / cores);
}

model::Expected<model::Dag> share_host_cpus(const model::Dag& dag, const HostPlacement& placement,
                                            const std::vector<double>& cpu_scale) {
  DAGSGD_CHECK(dag.finalized());
  DAGSGD_CHECK(cpu_scale.size() == dag.task_count());
  for (std::size_t h = 0; h < placement.host_cores.size(); ++h) {
    if (placement.host_cores[h] < 1) {
      return model::Error{"host CPUs: host " + std::to_string(h) + " has " +
                          std::to_string(placement.host_cores[h]) + " cores"};
    }
  }
  for (std::size_t w = 0; w < placement.worker_host.size(); ++w) {
    int h = placement.worker_host[w];
    if (h < 0 || static_cast<std::size_t>(h) >= placement.host_cores.size()) {
      return model::Error{"host CPUs: worker " + std::to_string(w) + " is placed on host " +
                          std::to_string(h) + ", but there are " +
                          std::to_string(placement.host_cores.size()) + " hosts"};
    }
  }
  std::vector<double> slowdown(placement.host_cores.size());
  for (std::size_t h = 0; h < slowdown.size(); ++h) {
    slowdown[h] = oversubscription(placement, static_cast<int>(h));
  }
  model::Dag out = dag;
  for (model::TaskId id = 0; static_cast<std::size_t>(id) < dag.task_count(); ++id) {
    const double scale = cpu_scale[static_cast<std::size_t>(id)];
    const model::Task& t = dag.task(id);
    if (!(scale > 0) || t.worker < 0) continue;
    const auto w = static_cast<std::size_t>(t.worker);
    if (w >= placement.worker_host.size()) {
      return model::Error{"host CPUs: task '" + dag.describe(id) + "' belongs to worker " +
                          std::to_string(t.worker) + ", but only " +
                          std::to_string(placement.worker_host.size()) + " are placed"};
    }
    const double work = static_cast<double>(t.duration) * scale;
    out.mutable_task(id).duration = static_cast<model::Nanos>(
        std::llround(work * slowdown[static_cast<std::size_t>(placement.worker_host[w])]));
  }
  return out;
}

}  // namespace dagsgd::sim
