// The CUPTI activity collector: records kernels, copies, memsets, API calls and syncs of this
// process, attributes them to the layer/phase that launched them and writes them to a trace.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/cuda/cuda_layer_scope.h"
#include "dagsgd/runtime/cuda/cupti_records.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::runtime {

struct CuptiCollectorOptions {
  std::size_t buffer_bytes = std::size_t{4} << 20;  // one activity buffer
  std::size_t max_pooled_buffers = 16;              // returned buffers kept for reuse
  // The host clock the trace uses and the value of it that ts=0 stands for (the TraceWriter's
  // base_time_ns). Default clock: CLOCK_MONOTONIC, the runtime's trace clock (clock_sync.h).
  std::int64_t (*host_clock_ns)() = nullptr;
  std::int64_t trace_base_ns = 0;
  // Ask CUPTI to stamp records with host_clock_ns itself (cuptiActivityRegisterTimestampCallback);
  // otherwise the offset between the clocks is measured once at start.
  bool stamp_with_host_clock = true;
  std::int64_t host_pid = -1;  // pid of API-call events; -1: the OS pid CUPTI reports
};

struct CuptiCollectorStats {
  CuptiConvertStats events;        // what the conversion saw
  std::int64_t records = 0;        // records walked out of buffers
  std::int64_t other_records = 0;  // kinds we do not convert
  std::int64_t dropped = 0;        // records CUPTI dropped (buffer full / no buffer)
  std::int64_t buffers_allocated = 0;
  std::int64_t buffers_reused = 0;
  std::int64_t buffer_failures = 0;  // allocation failures inside the request callback
  std::int64_t events_written = 0;
  std::int64_t time_offset_ns = 0;  // trace ts = CUPTI ns + this
  bool host_clock_stamps = false;   // CUPTI stamps with the host clock
};

// One collector per process at a time (CUPTI's buffer callbacks are process-global).
// push_layer()/pop_layer() may be called from any thread; flush()/finish() from one thread,
// the one that owns the TraceWriter.
class CuptiCollector final : public LayerScopeSink {
 public:
  // Enables CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME, DRIVER, SYNCHRONIZATION and
  // EXTERNAL_CORRELATION. Fails (no exception) when CUPTI cannot be used, e.g. no driver.
  static model::Expected<std::unique_ptr<CuptiCollector>> start(
      const CuptiCollectorOptions& options = {});
  ~CuptiCollector() override;  // disables collection; records not yet flushed are lost
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  // Later pushes carry this iteration number.
  void set_iteration(std::int64_t iteration);
  // Every API call (and the GPU work it launches) between push and pop gets the layer and phase.
  // The id pushed to CUPTI is new for every push and shows as "External id" in the trace.
  void push_layer(const std::string& layer, trace::Phase phase) override;
  void pop_layer() override;

  // Forces CUPTI to hand over all buffers (cuptiActivityFlushAll) and writes their events.
  model::Expected<void> flush(trace::TraceWriter& out);
  // flush() and stop collecting. The collector can be destroyed afterwards.
  model::Expected<CuptiCollectorStats> finish(trace::TraceWriter& out);
  // flush() and finish() for callers that post-process events before writing them (e.g. the
  // trainer maps them onto rank 0's clock): the same events, returned instead of written.
  model::Expected<std::vector<trace::Event>> drain();
  model::Expected<std::vector<trace::Event>> drain_and_stop();
  CuptiCollectorStats stats() const;

  struct Impl;

 private:
  explicit CuptiCollector(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Walks one completed CUPTI activity buffer into plain records; returns the records walked.
// Exposed so tests can feed it buffers of real CUPTI record structs without a GPU.
std::size_t cupti_walk_buffer(const std::uint8_t* buffer, std::size_t valid_bytes,
                              CuptiRecords& out);

// The CUPTI record structs this build reads, e.g. "kernel=CUpti_ActivityKernel10 ...", and the
// CUPTI_API_VERSION they were chosen by.
const char* cupti_record_versions();
std::uint32_t cupti_compiled_api_version();

}  // namespace dagsgd::runtime
