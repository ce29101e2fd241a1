// Interference and iteration noise measured on a traced run (job_effects.h): kernel durations
// beside and away from the other kind of kernel, and the spread of per-rank compute time.
#include "dagsgd/sim/job_effects.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "dagsgd/sim/trace_replay.h"
#include "dagsgd/trace/collective.h"
#include "intervals.h"

namespace dagsgd::sim {

using model::Nanos;

namespace {

// Which of a rank's interned names are NCCL kernels, worked out once per name (kernel names run
// to hundreds of bytes; a trace holds hundreds of thousands of kernels and few names).
std::vector<char> nccl_names(const trace::ImportedRank& rk) {
  std::vector<char> out(rk.strings.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = trace::is_nccl_kernel(rk.strings[i]);
  return out;
}

bool is_comm_kernel(const std::vector<char>& nccl, const trace::ImportedEvent& e) {
  return e.collective >= 0 || (e.name >= 0 && static_cast<std::size_t>(e.name) < nccl.size() &&
                               nccl[static_cast<std::size_t>(e.name)] != 0);
}

// Length of `iv` covered by `merged` (sorted, disjoint): only the intervals that can touch it
// are visited, so a trace of many kernels stays linear in practice.
Nanos covered(const std::vector<Interval>& merged, const Interval& iv) {
  auto it = std::upper_bound(merged.begin(), merged.end(), iv.first,
                             [](Nanos t, const Interval& m) { return t < m.second; });
  Nanos t = 0;
  for (; it != merged.end() && it->first < iv.second; ++it) {
    t += std::min(it->second, iv.second) - std::max(it->first, iv.first);
  }
  return t;
}

struct KernelSamples {
  Nanos alone_sum = 0;
  int alone = 0;
  Nanos beside_sum = 0;
  int beside = 0;
};

// Subjects are the communication kernels when `comm_subjects`, else the compute kernels; the
// other kind, on the same rank and device, is what they may run beside.
OverlapSlowdown measure_overlap(const trace::ImportedRun& run, bool comm_subjects) {
  OverlapSlowdown out;
  // By kernel: name and launch shape (ordered: the same sums in the same order every time).
  std::map<std::pair<std::string, std::uint32_t>, KernelSamples> by_kernel;
  for (const auto& rk : run.ranks) {
    if (run.source == trace::RunSource::kChakra && !rk.chakra.timed) {
      ++out.untimed_ranks;
      continue;
    }
    const std::vector<char> nccl = nccl_names(rk);
    std::map<std::int64_t, std::vector<Interval>> others;  // by device
    for (const auto& e : rk.events) {
      if (e.category != trace::EventCategory::kKernel || e.dur <= 0) continue;
      if (is_comm_kernel(nccl, e) != comm_subjects)
        others[e.device].push_back({e.ts, e.ts + e.dur});
    }
    for (auto& [device, v] : others) v = merge(std::move(v));
    // This rank's (name id, launch shape) -> its kernel's samples: one string key per kernel,
    // not per event.
    std::unordered_map<std::uint64_t, KernelSamples*> samples_of;
    for (const auto& e : rk.events) {
      if (e.category != trace::EventCategory::kKernel || e.dur <= 0) continue;
      if (is_comm_kernel(nccl, e) != comm_subjects) continue;
      ++out.seen;
      auto o = others.find(e.device);
      const Nanos ov = o == others.end() ? 0 : covered(o->second, {e.ts, e.ts + e.dur});
      KernelSamples*& slot =
          samples_of[(static_cast<std::uint64_t>(static_cast<std::uint32_t>(e.name)) << 32) |
                     e.launch];
      if (slot == nullptr) slot = &by_kernel[{rk.str(e.name), e.launch}];
      auto& s = *slot;
      if (ov == 0) {
        s.alone_sum += e.dur;
        ++s.alone;
      } else if (2 * ov >= e.dur) {  // beside for most of its run: its duration says so
        s.beside_sum += e.dur;
        ++s.beside;
      } else {
        ++out.partial;
      }
    }
  }
  double beside = 0;
  double alone_equivalent = 0;  // what the same kernels take alone, by their kernels' means
  for (const auto& [kernel, s] : by_kernel) {
    if (s.beside == 0) continue;
    if (s.alone == 0) {
      out.unmatched += s.beside;
      continue;
    }
    beside += static_cast<double>(s.beside_sum);
    alone_equivalent += static_cast<double>(s.beside) * static_cast<double>(s.alone_sum) / s.alone;
    out.samples += s.beside;
    out.alone += s.alone;
    out.beside += s.beside_sum;
    ++out.kernels;
  }
  if (alone_equivalent > 0) out.slowdown = beside / alone_equivalent;
  return out;
}

}  // namespace

OverlapSlowdown measure_interference(const trace::ImportedRun& run) {
  return measure_overlap(run, false);
}

OverlapSlowdown measure_comm_slowdown(const trace::ImportedRun& run) {
  return measure_overlap(run, true);
}

IterationNoise measure_noise(const trace::TraceDag& dag) {
  IterationNoise out;
  std::vector<std::vector<double>> by_iteration;  // [iteration after the warm-up][rank sample]
  double sum = 0;
  for (const auto& its : measured_iteration_times(dag)) {
    int n = 0;
    for (std::size_t k = static_cast<std::size_t>(std::max(0, dag.warmup)); k < its.size(); ++k) {
      if (its[k].compute <= 0) continue;  // nothing of the rank's computation in the window
      const std::size_t i = k - static_cast<std::size_t>(dag.warmup);
      if (by_iteration.size() <= i) by_iteration.resize(i + 1);
      by_iteration[i].push_back(static_cast<double>(its[k].compute));
      sum += static_cast<double>(its[k].compute);
      ++n;
    }
    out.iterations = std::max(out.iterations, n);
    out.ranks += n > 0 ? 1 : 0;
    out.samples += n;
  }
  if (out.samples == 0) return out;
  const double mean = sum / out.samples;
  out.mean = static_cast<Nanos>(std::llround(mean));
  double all = 0;     // squared deviations from the overall mean
  double within = 0;  // from each iteration's own mean
  int within_dof = 0;
  for (const auto& xs : by_iteration) {
    double m = 0;
    for (double x : xs) m += x / static_cast<double>(xs.size());
    for (double x : xs) {
      all += (x - mean) * (x - mean);
      within += (x - m) * (x - m);
    }
    if (!xs.empty()) within_dof += static_cast<int>(xs.size()) - 1;
  }
  if (out.measured() && mean > 0) out.iteration_cv = std::sqrt(all / (out.samples - 1)) / mean;
  if (within_dof > 0 && mean > 0) out.rank_cv = std::sqrt(within / within_dof) / mean;
  return out;
}

JobEffects measure_job_effects(const trace::ImportedRun& run, const trace::TraceDag& dag) {
  return {measure_interference(run), measure_comm_slowdown(run), measure_noise(dag)};
}

}  // namespace dagsgd::sim
