// Reading collective micro-benchmark logs (OSU micro-benchmarks, nccl-tests) into
// (message size, latency) points: the input of `dagsgd calibrate`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/units.h"

namespace dagsgd::trace {

struct LatencyPoint {
  model::Bytes bytes = 0;
  double latency_us = 0;  // average over the benchmark's iterations
  // The "Max Latency(us)" column of a full OSU table (-1: none): the slowest rank's time
  // (osu_allreduce -f: the largest per-rank mean; dagsgd-allreduce-bench: the mean over
  // iterations of each iteration's slowest rank).
  double max_latency_us = -1;
  // Its "Min Latency(us)" column (-1: none): the fastest rank's time. Under a rooted algorithm
  // (reduce + broadcast) that is the root, done once its broadcast is handed to the transport.
  double min_latency_us = -1;
  int line = 0;  // 1-based line in the log, for messages about this point
};

struct LatencyLog {
  std::string format;     // "osu" or "nccl-tests"
  std::string benchmark;  // e.g. "OSU MPI Allreduce Latency Test v5.4.0" ("" if not stated)
  // The rank count the log itself states: nccl-tests' per-rank device lines, or a "<ranks>,"
  // column some scripts (B-Caffe's) prefix to OSU rows. Empty if the log does not say.
  std::optional<int> ranks;
  std::vector<LatencyPoint> points;  // in file order
  // A stream of calls, each rank starting the next as soon as its previous one ended
  // (dagsgd-allreduce-bench --back-to-back; its header says "back to back"): every rank's mean
  // is the stream's time per call, and Min and Max are the fastest and slowest rank's means,
  // not one call's extremes, so they say nothing of which rank has its result first.
  bool back_to_back = false;
};

// Parses log text; `where` names it in errors ("log 'x.log': line 7: ..."). OSU: a
// "# Size  Avg Latency(us)" header, then "<size> <latency> [more columns]" rows (a full table's
// "Min" and "Max Latency(us)" columns are read too). nccl-tests:
// the "size count type ... time algbw busbw" header; the out-of-place time is used.
model::Expected<LatencyLog> parse_latency_log(const std::string& text, const std::string& where);

// Reads and parses a log file (.gz allowed).
model::Expected<LatencyLog> read_latency_log(const std::string& path);

// Repeats of one benchmark as one log: per size, the median over `logs` of each column (average,
// fastest and slowest rank; a column some point of some log lacks is left out everywhere). The
// logs must list the same sizes in the same order and all be timed the same way (back to back
// or not); the error names `names[i]` of the one that does not.
model::Expected<LatencyLog> median_latency_log(const std::vector<LatencyLog>& logs,
                                               const std::vector<std::string>& names);

// `log` as an OSU table that parse_latency_log reads back: `comment` (one line, after "# ", with
// ", back to back" added for such a log unless it says so), the header and one row per point
// (the full table when every point has Min and Max, with `iterations` in its Iterations column).
std::string osu_table(const LatencyLog& log, const std::string& comment, int iterations);

}  // namespace dagsgd::trace
