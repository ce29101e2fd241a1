// The metadata records every rank trace starts and ends with, and run ids.
#include "dagsgd/runtime/rank_trace.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <random>

namespace dagsgd::runtime {

model::Expected<trace::TraceWriter> open_rank_trace(const RankTraceConfig& c) {
  trace::DistributedInfo info{c.rank, c.world_size, "mpi", c.run_id};
  auto writer = trace::TraceWriter::open(c.path, info, c.base_ns, c.buffer_bytes);
  if (!writer.ok()) return writer.error();
  trace::Event name{"process_name", "", 'M', 0, 0, c.rank, 0};
  name.add("name", "rank " + std::to_string(c.rank));
  writer->write(name);
  trace::Event sort{"process_sort_index", "", 'M', 0, 0, c.rank, 0};
  sort.add("sort_index", std::int64_t{c.rank});
  writer->write(sort);
  trace::Event rank_info{"dagsgd_rank_info", "", 'M', 0, 0, c.rank, 0};
  rank_info.add("host", c.host)
      .add("os_pid", c.os_pid)
      .add("world_size", std::int64_t{c.world_size})
      .add("base_ns", c.base_ns)
      .add("time_axis", std::string("rank0_clock_at_start_sample"))
      .add("clock_start_local_ns", c.start.local_ns)
      .add("clock_start_offset_ns", c.start.offset_ns)
      .add("clock_start_uncertainty_ns", c.start.uncertainty_ns);
  writer->write(rank_info);
  writer->flush();
  return writer;
}

trace::Event clock_sync_event(const RankTraceConfig& c, const ClockSample* end, const char* how,
                              std::int64_t spans, std::int64_t dropped) {
  const ClockSample& s = c.start;
  trace::Event e{"dagsgd_clock_sync", "", 'M', 0, 0, c.rank, 0};
  e.add("ended_by", std::string(how))
      .add("start_local_ns", s.local_ns)
      .add("start_offset_ns", s.offset_ns)
      .add("start_uncertainty_ns", s.uncertainty_ns);
  ClockAlignment align(s);
  if (end != nullptr) {
    align.set_end(*end);
    // On the trace's axis, the start sample sits at t0 and the end sample at t1; a reader adds
    // correction * (ts - t0) / (t1 - t0) to every time (docs/tracing.md, "Clock alignment").
    e.add("end_local_ns", end->local_ns)
        .add("end_offset_ns", end->offset_ns)
        .add("end_uncertainty_ns", end->uncertainty_ns)
        .add("drift_t0_ns", to_trace_ns(c, s.local_ns))
        .add("drift_t1_ns", to_trace_ns(c, end->local_ns))
        .add("drift_correction_ns", s.offset_ns - end->offset_ns);
  }
  e.add("drift_ppm", align.drift_ppm())
      .add("residual_ns", align.residual_ns())
      .add("spans", spans)
      .add("dropped", dropped);
  return e;
}

void name_track(trace::TraceWriter& writer, int rank, std::int64_t tid, const std::string& name) {
  trace::Event e{"thread_name", "", 'M', 0, 0, rank, tid};
  e.add("name", name);
  writer.write(e);
  trace::Event sort{"thread_sort_index", "", 'M', 0, 0, rank, tid};
  sort.add("sort_index", tid);
  writer.write(sort);
}

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  return host;
}

std::string make_run_id() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  tm utc{};
  gmtime_r(&now.tv_sec, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%dT%H%M%SZ", &utc);
  // Random bits tell apart two runs started in the same second by processes that reuse a pid
  // (containers); without a random device, the clock's nanoseconds do.
  unsigned bits = static_cast<unsigned>(now.tv_nsec);
  try {
    bits = std::random_device()();
  } catch (...) {
  }
  char tail[16];
  std::snprintf(tail, sizeof tail, "%06x", bits & 0xffffffU);
  return std::string(when) + "-" + host_name() + "-" + std::to_string(getpid()) + "-" + tail;
}

}  // namespace dagsgd::runtime
