// One rank's trace file as both of our writers (the trainer's --trace and the PMPI tracer) stream
// it: the same header and metadata, the same time axis, the same closing clock record
// (docs/tracing.md, "Clock alignment"), and the run id that ties the files of one run together.
#pragma once

#include <cstdint>
#include <string>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/clock_sync.h"
#include "dagsgd/trace/event.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::runtime {

struct RankTraceConfig {
  std::string path;
  int rank = 0;
  int world_size = 1;
  // Rank 0's clock at the start sample: ts = 0 in every rank's trace.
  std::int64_t base_ns = 0;
  ClockSample start;
  std::string host;
  std::int64_t os_pid = 0;
  std::string run_id;  // "" writes none
  std::size_t buffer_bytes = 1 << 16;
};

// Creates the trace and writes, flushed at once so even a rank killed right away leaves a
// parseable file: the header (distributedInfo with rank, world_size and run_id), the process
// name and sort index, and `dagsgd_rank_info` (host, pid, base and start clock sample).
model::Expected<trace::TraceWriter> open_rank_trace(const RankTraceConfig& config);

// A local time (this process's now_ns()) on the trace's axis: rank 0's clock at the start sample.
inline std::int64_t to_trace_ns(const RankTraceConfig& config, std::int64_t local) {
  return local - config.start.offset_ns - config.base_ns;
}

// The closing `dagsgd_clock_sync` record: how the trace ended (`how`), both clock samples when
// `end` is given (the reader then corrects the drift between them), and the event counts.
trace::Event clock_sync_event(const RankTraceConfig& config, const ClockSample* end,
                              const char* how, std::int64_t spans, std::int64_t dropped);

// A "thread_name" and a "thread_sort_index" record for track `tid`.
void name_track(trace::TraceWriter& writer, int rank, std::int64_t tid, const std::string& name);

// A fresh run id: UTC time, host and pid, and random bits, e.g.
// "20250314T101502Z-node7-4242-9f3a1c".
std::string make_run_id();

// This machine's host name ("" if it has none).
std::string host_name();

}  // namespace dagsgd::runtime
