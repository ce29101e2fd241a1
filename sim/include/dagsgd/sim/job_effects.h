// What a job pays around the wire, measured on a traced run (issue 37): compute kernels slowed by
// communication kernels on the same GPU, and per-rank, per-iteration compute noise.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/units.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::sim {

// Kernels of one kind (the subjects) while kernels of the other kind run on the same device of
// the same rank, against the same kernels when nothing of the other kind runs. The same kernel:
// one name and launch shape (args.grid and args.block where the trace has them), since kernels
// of one name run with several shapes and durations.
struct OverlapSlowdown {
  // Time-weighted over the subjects beside the other kind whose kernel was also seen alone: sum
  // of their durations / sum over them of their kernel's mean duration alone. 0: not measured.
  double slowdown = 0;
  int seen = 0;       // subjects in the trace (0: a trace without such kernels, e.g. a CPU run)
  int samples = 0;    // subjects beside the other kind (at least half their duration overlapped)
  int alone = 0;      // subjects of those kernels with no overlap at all
  int kernels = 0;    // kernels (name and shape) with both kinds of samples
  int partial = 0;    // subjects overlapped for less than half their duration: left out
  int unmatched = 0;  // subjects beside the other kind whose kernel never ran alone: left out
  model::Nanos beside = 0;  // total duration of the samples
  // Ranks left out because their trace records no start times (a Chakra trace without them:
  // its starts follow from its dependencies, so which kernels ran together is not known).
  int untimed_ranks = 0;
  bool measured() const { return samples > 0; }
};

// Compute time per rank per iteration (busy time of compute kernels, or of our runtime's compute
// phases) after the warm-up.
struct IterationNoise {
  // Sample standard deviation / mean over all (rank, iteration) pairs; 0 when not measured.
  double iteration_cv = 0;
  // Across ranks within an iteration: the pooled within-iteration standard deviation (each
  // iteration's deviations from its own mean, over the sum of (ranks - 1)) / the overall mean.
  double rank_cv = 0;
  int iterations = 0;  // iterations measured (after the warm-up), the most any rank has
  int ranks = 0;       // ranks with at least one measured iteration
  int samples = 0;     // (rank, iteration) pairs
  model::Nanos mean = 0;
  bool measured() const { return samples >= 2; }
  bool rank_measured() const { return ranks >= 2; }
};

struct JobEffects {
  OverlapSlowdown interference;   // compute kernels beside communication kernels
  OverlapSlowdown comm_slowdown;  // communication kernels beside compute kernels
  IterationNoise noise;
};

// Communication kernels are NCCL's (trace::is_nccl_kernel) and kernels that carry a collective
// name; every other kernel computes. Devices are told apart by rank and args.device.
OverlapSlowdown measure_interference(const trace::ImportedRun& run);
// The communication kernels' own slowdown while compute kernels run beside them.
OverlapSlowdown measure_comm_slowdown(const trace::ImportedRun& run);
// From the traced run's measured compute per rank and iteration (iterations after dag.warmup).
IterationNoise measure_noise(const trace::TraceDag& dag);
JobEffects measure_job_effects(const trace::ImportedRun& run, const trace::TraceDag& dag);

}  // namespace dagsgd::sim
