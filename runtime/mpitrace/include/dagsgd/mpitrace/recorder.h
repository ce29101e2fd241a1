// Turns intercepted MPI calls into Kineto-layout trace events (docs/tracing.md). MPI-free, so the
// recording path can be benchmarked and tested without mpirun.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/clock_sync.h"
#include "dagsgd/runtime/rank_trace.h"
#include "dagsgd/trace/event.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::mpitrace {

// A field of CallInfo that does not apply (MPI_ANY_TAG and MPI_PROC_NULL are real values).
inline constexpr int kUnset = std::numeric_limits<int>::min();
// Non-blocking operations are drawn on tids kAsyncTidBase + lane (docs/tracing.md).
inline constexpr int kAsyncTidBase = 1000;

// One intercepted MPI call as the PMPI wrappers describe it.
struct CallInfo {
  const char* name = "";        // the MPI function, e.g. "MPI_Allreduce"
  const char* collective = "";  // the operation, e.g. "allreduce"
  std::int64_t bytes = 0;
  int comm_size = 0;  // 0: not applicable (Wait/Test)
  int peer = kUnset;  // point-to-point partner, rank in the call's communicator
  int root = kUnset;  // root of a rooted collective, rank in the call's communicator
  int tag = kUnset;
  int source = kUnset;           // MPI_Sendrecv: where the received part came from
  std::int64_t recv_bytes = -1;  // MPI_Sendrecv: bytes received (-1: not applicable)
};

// The trace file, its rank, time axis (base_ns: rank 0's clock at MPI_Init) and run id.
using RecorderConfig = runtime::RankTraceConfig;

class Recorder {
 public:
  static model::Expected<std::unique_ptr<Recorder>> open(const RecorderConfig& config);

  // A call that ran from `start_local` to `end_local` (this process's clock) on thread `tid`.
  // `requests`: how many requests a Wait/Test completed (-1: not a completion call).
  void record_call(const CallInfo& call, std::int64_t start_local, std::int64_t end_local, int tid,
                   std::int64_t requests = -1) noexcept;
  // A non-blocking operation, from its issue to the completion a Wait/Test observed.
  // `completed_by` is the MPI function that observed it ("" while still pending at the end).
  void record_async(const CallInfo& call, std::int64_t issue_local, std::int64_t end_local,
                    int lane, std::int64_t request_id, const char* completed_by) noexcept;

  // Writes the buffered events; called periodically so a SIGKILLed rank loses little.
  void flush() noexcept;
  // From a fatal-signal handler: writes what is buffered and, if `close`, ends the JSON array.
  // Gives up (and loses the buffer) if a recording in progress does not finish quickly.
  void flush_from_signal(bool close) noexcept;
  // Writes the clock metadata (both samples when `end` is given) and closes the trace.
  model::Expected<void> finish(const runtime::ClockSample* end, const char* how);

  // Spans recorded so far (metadata not counted).
  std::int64_t spans() const noexcept { return spans_; }
  std::int64_t events_dropped() const noexcept { return dropped_; }
  // Maps a local time onto the trace's time axis (rank 0's clock at the start sample).
  std::int64_t to_trace_ns(std::int64_t local) const noexcept {
    return runtime::to_trace_ns(config_, local);
  }

 private:
  explicit Recorder(RecorderConfig config) : config_(std::move(config)) {}
  bool lock(long max_spins) noexcept;
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  // Fills scratch_ with a call's span on `tid` and writes it; `named` tracks which of the first
  // 64 tracks of its kind got their thread_name record.
  template <class ExtraArgs>
  void record_locked(const CallInfo& call, std::int64_t start_local, std::int64_t end_local,
                     int tid, int index, std::uint64_t& named, const char* label,
                     ExtraArgs extra) noexcept;

  RecorderConfig config_;
  trace::TraceWriter writer_;
  std::atomic<bool> locked_{false};
  bool closed_ = false;
  std::int64_t dropped_ = 0;
  std::int64_t spans_ = 0;
  std::uint64_t named_calls_ = 0;  // bit i: thread i got its thread_name event
  std::uint64_t named_lanes_ = 0;  // bit i: async lane i got its thread_name event
  trace::Event scratch_;           // reused so recording does not allocate
};

}  // namespace dagsgd::mpitrace
