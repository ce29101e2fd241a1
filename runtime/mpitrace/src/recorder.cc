// The recording path: one reused Event, a spinlock a signal handler can try, no allocation.
#include "dagsgd/mpitrace/recorder.h"

#include <sched.h>

#include <utility>

namespace dagsgd::mpitrace {

namespace {

void add_call_fields(trace::Event& e, const CallInfo& call) {
  e.add(trace::arg::kCollective, std::string(call.collective));
  e.add(trace::arg::kBytes, call.bytes);
  if (call.comm_size > 0) e.add("comm_size", std::int64_t{call.comm_size});
  if (call.peer != kUnset) e.add("peer", std::int64_t{call.peer});
  if (call.root != kUnset) e.add("root", std::int64_t{call.root});
  if (call.tag != kUnset) e.add("tag", std::int64_t{call.tag});
  if (call.source != kUnset) e.add("source", std::int64_t{call.source});
  if (call.recv_bytes >= 0) e.add("recv_bytes", call.recv_bytes);
}

}  // namespace

model::Expected<std::unique_ptr<Recorder>> Recorder::open(const RecorderConfig& config) {
  auto writer =
      trace::TraceWriter::open(config.path, trace::DistributedInfo{config.rank, config.world_size},
                               config.base_ns, config.buffer_bytes);
  if (!writer.ok()) return writer.error();
  std::unique_ptr<Recorder> r(new Recorder(config));
  r->writer_ = std::move(*writer);
  r->scratch_.args.reserve(12);
  trace::Event name{"process_name", "", 'M', 0, 0, config.rank, 0};
  name.add("name", "rank " + std::to_string(config.rank));
  r->writer_.write(name);
  trace::Event sort{"process_sort_index", "", 'M', 0, 0, config.rank, 0};
  sort.add("sort_index", std::int64_t{config.rank});
  r->writer_.write(sort);
  trace::Event info{"dagsgd_rank_info", "", 'M', 0, 0, config.rank, 0};
  info.add("host", config.host)
      .add("os_pid", config.os_pid)
      .add("world_size", std::int64_t{config.world_size})
      .add("base_ns", config.base_ns)
      .add("time_axis", std::string("rank0_clock_at_start_sample"))
      .add("clock_start_local_ns", config.start.local_ns)
      .add("clock_start_offset_ns", config.start.offset_ns)
      .add("clock_start_uncertainty_ns", config.start.uncertainty_ns);
  r->writer_.write(info);
  // The header and metadata reach the disk now, so even a rank killed at once leaves a trace.
  r->writer_.flush();
  return r;
}

bool Recorder::lock(long max_spins) noexcept {
  for (long i = 0; max_spins < 0 || i < max_spins; ++i) {
    if (!locked_.exchange(true, std::memory_order_acquire)) return true;
    if (i > 64) sched_yield();
  }
  return false;
}

void Recorder::name_track_locked(int tid, const char* label, int index) {
  trace::Event e{"thread_name", "", 'M', 0, 0, config_.rank, tid};
  e.add("name", std::string(label) + " " + std::to_string(index));
  writer_.write(e);
  trace::Event sort{"thread_sort_index", "", 'M', 0, 0, config_.rank, tid};
  sort.add("sort_index", std::int64_t{tid});
  writer_.write(sort);
}

void Recorder::write_locked(const trace::Event& e) noexcept {
  try {
    writer_.write(e);
    ++spans_;
  } catch (...) {
    // Out of memory inside a PMPI wrapper: lose the event, never the program.
    ++dropped_;
  }
}

void Recorder::record_call(const CallInfo& call, std::int64_t start_local, std::int64_t end_local,
                           int tid, std::int64_t requests) noexcept {
  if (!lock(-1)) return;
  if (!closed_) {
    try {
      if (tid >= 0 && tid < 64 && ((named_calls_ >> tid) & 1U) == 0) {
        named_calls_ |= std::uint64_t{1} << tid;
        name_track_locked(tid, "MPI calls, thread", tid);
      }
      trace::Event& e = scratch_;
      e.name = call.name;
      e.cat = trace::cat::kCpuOp;
      e.ph = 'X';
      e.ts = to_trace_ns(start_local);
      e.dur = end_local - start_local;
      e.pid = config_.rank;
      e.tid = tid;
      e.id = -1;
      e.args.clear();
      add_call_fields(e, call);
      if (requests >= 0) e.add("requests", requests);
      e.add(trace::arg::kPhase, std::string("comm"));
      write_locked(e);
    } catch (...) {
      ++dropped_;
    }
  }
  unlock();
}

void Recorder::record_async(const CallInfo& call, std::int64_t issue_local, std::int64_t end_local,
                            int lane, std::int64_t request_id, const char* completed_by) noexcept {
  if (!lock(-1)) return;
  if (!closed_) {
    try {
      int tid = kAsyncTidBase + lane;
      if (lane >= 0 && lane < 64 && ((named_lanes_ >> lane) & 1U) == 0) {
        named_lanes_ |= std::uint64_t{1} << lane;
        name_track_locked(tid, "MPI non-blocking, lane", lane);
      }
      trace::Event& e = scratch_;
      e.name = call.name;
      e.cat = trace::cat::kCpuOp;
      e.ph = 'X';
      e.ts = to_trace_ns(issue_local);
      e.dur = end_local - issue_local;
      e.pid = config_.rank;
      e.tid = tid;
      e.id = -1;
      e.args.clear();
      add_call_fields(e, call);
      e.add("request", request_id);
      e.add("completed_by", std::string(completed_by));
      e.add(trace::arg::kPhase, std::string("comm"));
      write_locked(e);
    } catch (...) {
      ++dropped_;
    }
  }
  unlock();
}

void Recorder::flush() noexcept {
  if (!lock(-1)) return;
  writer_.flush();
  unlock();
}

void Recorder::flush_from_signal(bool close) noexcept {
  // Another thread finishes an event within microseconds; the interrupted thread itself never
  // will, hence the bound.
  if (!lock(200'000)) return;
  writer_.flush();
  if (close && !closed_) {
    closed_ = true;
    (void)writer_.close();
  }
  unlock();
}

model::Expected<void> Recorder::finish(const runtime::ClockSample* end, const char* how) {
  lock(-1);
  if (closed_) {
    unlock();
    return model::ok();
  }
  const runtime::ClockSample& s = config_.start;
  trace::Event e{"dagsgd_clock_sync", "", 'M', 0, 0, config_.rank, 0};
  e.add("ended_by", std::string(how))
      .add("start_local_ns", s.local_ns)
      .add("start_offset_ns", s.offset_ns)
      .add("start_uncertainty_ns", s.uncertainty_ns);
  runtime::ClockAlignment align(s);
  if (end != nullptr) {
    align.set_end(*end);
    // On the trace's axis, the start sample sits at t0 and the end sample at t1; a reader adds
    // correction * (ts - t0) / (t1 - t0) to every time (docs/tracing.md, "Clock alignment").
    e.add("end_local_ns", end->local_ns)
        .add("end_offset_ns", end->offset_ns)
        .add("end_uncertainty_ns", end->uncertainty_ns)
        .add("drift_t0_ns", to_trace_ns(s.local_ns))
        .add("drift_t1_ns", to_trace_ns(end->local_ns))
        .add("drift_correction_ns", s.offset_ns - end->offset_ns);
  }
  e.add("drift_ppm", align.drift_ppm())
      .add("residual_ns", align.residual_ns())
      .add("spans", spans_)
      .add("dropped", dropped_);
  try {
    writer_.write(e);
  } catch (...) {
    ++dropped_;
  }
  closed_ = true;
  auto rc = writer_.close();
  unlock();
  return rc;
}

}  // namespace dagsgd::mpitrace
