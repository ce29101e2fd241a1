// Host CPUs as a resource (host_cpu.h): rebuilds the DAG with per-host core pools.
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

model::Expected<model::Dag> with_host_cpus(const model::Dag& dag, const HostPlacement& placement,
                                           double duration_scale) {
  if (!(duration_scale > 0)) {
    return model::Error{"host CPUs: duration scale must be positive (got " +
                        std::to_string(duration_scale) + ")"};
  }
  std::vector<double> scale(dag.task_count(), 0.0);
  for (model::TaskId id = 0; static_cast<std::size_t>(id) < dag.task_count(); ++id) {
    const model::Task& t = dag.task(id);
    if (t.kind != model::TaskKind::kComm && t.worker >= 0) {
      scale[static_cast<std::size_t>(id)] = duration_scale;
    }
  }
  return with_host_cpus(dag, placement, scale);
}

model::Expected<model::Dag> with_host_cpus(const model::Dag& dag, const HostPlacement& placement,
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
  model::Dag out;
  for (const auto& r : dag.resources()) out.add_resource(r.name, r.capacity);
  std::vector<model::ResourceId> host_cpu;
  for (std::size_t h = 0; h < placement.host_cores.size(); ++h) {
    host_cpu.push_back(
        out.add_resource("host" + std::to_string(h) + ".cpu", placement.host_cores[h]));
  }
  for (model::TaskId id = 0; static_cast<std::size_t>(id) < dag.task_count(); ++id) {
    const model::Task& t = dag.task(id);
    model::Task copy = t;
    const double scale = cpu_scale[static_cast<std::size_t>(id)];
    if (scale > 0 && t.worker >= 0) {
      auto w = static_cast<std::size_t>(t.worker);
      if (w >= placement.worker_host.size()) {
        return model::Error{"host CPUs: task '" + dag.describe(id) + "' belongs to worker " +
                            std::to_string(t.worker) + ", but only " +
                            std::to_string(placement.worker_host.size()) + " are placed"};
      }
      copy.resource = host_cpu[static_cast<std::size_t>(placement.worker_host[w])];
      copy.duration =
          static_cast<model::Nanos>(std::llround(static_cast<double>(t.duration) * scale));
    }
    out.add_task(copy);
  }
  for (model::TaskId id = 0; static_cast<std::size_t>(id) < dag.task_count(); ++id) {
    for (const model::TaskId* it = dag.succ_begin(id); it != dag.succ_end(id); ++it) {
      out.add_edge(id, *it, dag.succ_kind(it));
    }
  }
  out.finalize();
  return out;
}

}  // namespace dagsgd::sim
