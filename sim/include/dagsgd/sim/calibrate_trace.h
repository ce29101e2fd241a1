// Transfer calibration from a traced run's own collectives (`dagsgd calibrate --trace RUN`): its
// allreduces become micro-benchmark series that calibrate_stack_logs fits like a log's.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/sim/calibrate.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::sim {

struct TraceSeries {
  // One "log" per group size: the median service time (last rank's arrival to the first rank
  // that observed the completion) of each message size, in microseconds, avg column only.
  std::vector<BenchmarkLog> logs;
  int used = 0;        // collectives in the series
  int overlapped = 0;  // left out: another collective was in flight meanwhile
  int warmup = 0;      // left out: a warm-up iteration
  int other = 0;       // left out: not an allreduce with a size joined on every rank
};

// The collectives of `td` that can stand for a micro-benchmark: allreduces (blocking or not)
// with a size, joined on at least 2 ranks, after the warm-up, and alone in flight (a collective
// that shared the links, or waited behind another, measured the sharing, not the library).
// `where` names the run in the logs' paths and in errors. Fewer than 3 distinct sizes of one
// group size is an error (what the fit needs), saying what was left out and why.
model::Expected<TraceSeries> trace_collective_series(const trace::TraceDag& td,
                                                     const std::string& where);

// The same from a run directory (or traces) as replay reads it.
model::Expected<TraceSeries> read_trace_collectives(const std::string& run);

}  // namespace dagsgd::sim
