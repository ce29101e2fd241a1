// The recording path: one reused Event, a spinlock a signal handler can try, no allocation.
#include "dagsgd/mpitrace/recorder.h"

#include <sched.h>

#include <utility>

namespace dagsgd::mpitrace {

namespace {

void add_call_fields(trace::Event& e, const CallInfo& call) {
  e.add(trace::arg::kCollective, std::string(call.collective));
  e.add(trace::arg::kBytes, call.bytes);
  if (call.comm_size > 0) {
    e.add("comm_size", std::int64_t{call.comm_size});
    trace::add_comm_args(e, call.collective, call.comm_size);
  }
  if (call.peer != kUnset) e.add("peer", std::int64_t{call.peer});
  if (call.root != kUnset) e.add("root", std::int64_t{call.root});
  if (call.tag != kUnset) e.add("tag", std::int64_t{call.tag});
  if (call.source != kUnset) e.add("source", std::int64_t{call.source});
  if (call.recv_bytes >= 0) e.add("recv_bytes", call.recv_bytes);
}

}  // namespace

model::Expected<std::unique_ptr<Recorder>> Recorder::open(const RecorderConfig& config) {
  // The header and metadata reach the disk now, so even a rank killed at once leaves a trace.
  auto writer = runtime::open_rank_trace(config);
  if (!writer.ok()) return writer.error();
  std::unique_ptr<Recorder> r(new Recorder(config));
  r->writer_ = std::move(*writer);
  r->scratch_.args.reserve(12);
  return r;
}

bool Recorder::lock(long max_spins) noexcept {
  for (long i = 0; max_spins < 0 || i < max_spins; ++i) {
    if (!locked_.exchange(true, std::memory_order_acquire)) return true;
    if (i > 64) sched_yield();
  }
  return false;
}

template <class ExtraArgs>
void Recorder::record_locked(const CallInfo& call, std::int64_t start_local, std::int64_t end_local,
                             int tid, int index, std::uint64_t& named, const char* label,
                             ExtraArgs extra) noexcept {
  if (closed_) return;
  try {
    if (index >= 0 && index < 64 && ((named >> index) & 1U) == 0) {
      named |= std::uint64_t{1} << index;
      runtime::name_track(writer_, config_.rank, tid, label + std::to_string(index));
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
    extra(e);
    e.add(trace::arg::kPhase, std::string("comm"));
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
  record_locked(call, start_local, end_local, tid, tid, named_calls_, "MPI calls, thread ",
                [requests](trace::Event& e) {
                  if (requests >= 0) e.add("requests", requests);
                });
  unlock();
}

void Recorder::record_async(const CallInfo& call, std::int64_t issue_local, std::int64_t end_local,
                            int lane, std::int64_t request_id, const char* completed_by) noexcept {
  if (!lock(-1)) return;
  record_locked(call, issue_local, end_local, kAsyncTidBase + lane, lane, named_lanes_,
                "MPI non-blocking, lane ", [request_id, completed_by](trace::Event& e) {
                  e.add("request", request_id);
                  e.add("completed_by", std::string(completed_by));
                });
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
  try {
    writer_.write(runtime::clock_sync_event(config_, end, how, spans_, dropped_));
  } catch (...) {
    ++dropped_;
  }
  closed_ = true;
  auto rc = writer_.close();
  unlock();
  return rc;
}

}  // namespace dagsgd::mpitrace
