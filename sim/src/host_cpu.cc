// Host CPUs shared by time slicing (host_cpu.h).
#include "dagsgd/sim/host_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

SharedCpus::SharedCpus(std::vector<int> host_cores)
    : cores_(std::move(host_cores)), running_(cores_.size()) {
  for (int c : cores_) DAGSGD_CHECK(c > 0);
}

void SharedCpus::assign(model::TaskId t, int host, model::Nanos work) {
  DAGSGD_CHECK(t >= 0 && host >= 0 && static_cast<std::size_t>(host) < cores_.size());
  if (work <= 0) return;
  const auto i = static_cast<std::size_t>(t);
  if (i >= host_of_.size()) {
    host_of_.resize(i + 1, -1);
    work_.resize(i + 1, 0);
  }
  host_of_[i] = host;
  work_[i] = work;
}

bool SharedCpus::handles(model::TaskId t) const {
  const auto i = static_cast<std::size_t>(t);
  return t >= 0 && i < host_of_.size() && host_of_[i] >= 0;
}

double SharedCpus::rate(std::size_t host) const {
  const auto n = static_cast<double>(running_[host].size());
  return n <= cores_[host] ? 1.0 : cores_[host] / n;
}

void SharedCpus::progress_to(double t) {
  const double dt = t - clock_;
  if (dt > 0) {
    for (std::size_t h = 0; h < running_.size(); ++h) {
      const double done = rate(h) * dt;
      for (auto& r : running_[h]) r.remaining = std::max(0.0, r.remaining - done);
    }
  }
  clock_ = std::max(clock_, t);
}

void SharedCpus::start(model::TaskId t, model::Nanos now) {
  DAGSGD_CHECK(handles(t));
  progress_to(static_cast<double>(now));
  const auto i = static_cast<std::size_t>(t);
  running_[static_cast<std::size_t>(host_of_[i])].push_back(
      {t, static_cast<double>(work_[i]), started_++});
}

double SharedCpus::next_exact() const {
  double t = std::numeric_limits<double>::infinity();
  for (std::size_t h = 0; h < running_.size(); ++h) {
    if (running_[h].empty()) continue;
    double least = running_[h].front().remaining;
    for (const auto& r : running_[h]) least = std::min(least, r.remaining);
    t = std::min(t, clock_ + least / rate(h));
  }
  return t;
}

model::Nanos SharedCpus::next_event() const {
  const double t = next_exact();
  return std::isfinite(t) ? std::llround(t) : kNever;
}

void SharedCpus::advance(model::Nanos now, std::vector<model::TaskId>& finished) {
  // Every end that rounds to `now`, in time order, then in the order the tasks started.
  for (;;) {
    const double t = next_exact();
    if (!(t <= static_cast<double>(now) + 0.5)) break;
    progress_to(t);
    std::vector<Running> done;
    for (auto& host : running_) {
      // Within half a nanosecond of work: the end rounds to this time.
      auto split = std::stable_partition(host.begin(), host.end(),
                                         [](const Running& r) { return r.remaining > 0.5; });
      done.insert(done.end(), split, host.end());
      host.erase(split, host.end());
    }
    std::sort(done.begin(), done.end(),
              [](const Running& a, const Running& b) { return a.order < b.order; });
    for (const auto& r : done) finished.push_back(r.task);
  }
  progress_to(static_cast<double>(now));
}

model::Expected<SharedCpuDag> share_host_cpus(const model::Dag& dag, const HostPlacement& placement,
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
  SharedCpuDag out{dag, SharedCpus(placement.host_cores)};
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
    const auto work =
        static_cast<model::Nanos>(std::llround(static_cast<double>(t.duration) * scale));
    out.dag.mutable_task(id).duration = work;
    out.cpus.assign(id, placement.worker_host[w], work);
  }
  return out;
}

}  // namespace dagsgd::sim
