// The CUPTI activity collector: pooled activity buffers, the buffer callbacks (which never throw
// into CUPTI), layer attribution through external correlation ids, and flushing into a trace.
#include "dagsgd/runtime/cuda/cupti_collector.h"

#include <time.h>

#include <atomic>
#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

#include "cupti_versions.h"

namespace dagsgd::runtime {

namespace {

constexpr std::align_val_t kBufferAlign{ACTIVITY_RECORD_ALIGNMENT};
constexpr CUpti_ExternalCorrelationKind kLayerKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// The kinds the collector enables, in the order it enables them.
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
};

std::int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string cupti_error(const char* what, CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown error";
  return std::string("CUPTI: ") + what + " failed: " + text;
}

// CUPTI's callbacks are plain functions without user data, so the active collector is global.
// g_mu guards g_active and everything the callbacks touch in it; it is never held while calling
// into CUPTI (cuptiActivityFlushAll runs the completion callback on the calling thread).
std::mutex g_mu;
CuptiCollector::Impl* g_active = nullptr;
// Read by the timestamp callback, which CUPTI may call after the collector is gone.
std::atomic<std::int64_t (*)()> g_host_clock{&monotonic_ns};

std::uint8_t* allocate_buffer(std::size_t bytes) noexcept {
  return static_cast<std::uint8_t*>(::operator new(bytes, kBufferAlign, std::nothrow));
}
void free_buffer(std::uint8_t* buffer) noexcept { ::operator delete(buffer, kBufferAlign); }

}  // namespace

struct CuptiCollector::Impl {
  explicit Impl(const CuptiCollectorOptions& o) : options(o) {}
  ~Impl() {
    for (auto* b : pool) free_buffer(b);
  }

  CuptiCollectorOptions options;

  // Guarded by g_mu (touched by the CUPTI callbacks).
  std::vector<std::uint8_t*> pool;
  CuptiRecords pending;

  // Guarded by conv_mu: layer tags are registered by push_layer() on any thread.
  mutable std::mutex conv_mu;
  CuptiEventConverter converter;

  // What stats() reports: the buffer counts (records .. buffer_failures) guarded by g_mu, the
  // rest by conv_mu (set before the collector is shared); `events` is the converter's.
  CuptiCollectorStats counts;

  std::atomic<std::uint64_t> next_external_id{1};
  std::atomic<std::int64_t> iteration{-1};
  bool enabled = false;
};

namespace {

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size,
                               std::size_t* max_num_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_num_records = 0;  // fill the buffer
  std::lock_guard<std::mutex> lock(g_mu);
  CuptiCollector::Impl* impl = g_active;
  if (impl == nullptr) return;  // CUPTI drops the records and counts them
  std::size_t bytes = impl->options.buffer_bytes;
  if (!impl->pool.empty()) {
    *buffer = impl->pool.back();
    impl->pool.pop_back();
    ++impl->counts.buffers_reused;
  } else {
    *buffer = allocate_buffer(bytes);
    if (*buffer == nullptr) {
      ++impl->counts.buffer_failures;
      return;
    }
    ++impl->counts.buffers_allocated;
  }
  *size = bytes;
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                               std::size_t size, std::size_t valid_size) noexcept {
  (void)size;
  CuptiRecords walked;
  std::size_t n = 0;
  bool failed = false;
  try {
    n = cupti_walk_buffer(buffer, valid_size, walked);
  } catch (...) {  // no exception may cross into CUPTI (bad_alloc while copying names)
    failed = true;
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;

  std::lock_guard<std::mutex> lock(g_mu);
  CuptiCollector::Impl* impl = g_active;
  if (impl == nullptr) {
    free_buffer(buffer);
    return;
  }
  impl->counts.records += static_cast<std::int64_t>(n);
  impl->counts.other_records += walked.other_records;
  impl->counts.dropped += static_cast<std::int64_t>(dropped);
  if (failed) ++impl->counts.buffer_failures;
  try {
    impl->pending.append(std::move(walked));
  } catch (...) {
    ++impl->counts.buffer_failures;
  }
  if (buffer == nullptr) return;
  if (impl->pool.size() < impl->options.max_pooled_buffers) {
    try {
      impl->pool.push_back(buffer);
      return;
    } catch (...) {
    }
  }
  free_buffer(buffer);
}

std::uint64_t CUPTIAPI host_timestamp() noexcept {
  return static_cast<std::uint64_t>(g_host_clock.load()());
}

void disable_kinds() {
  for (auto kind : kKinds) (void)cuptiActivityDisable(kind);
}

}  // namespace

CuptiCollector::CuptiCollector(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

model::Expected<std::unique_ptr<CuptiCollector>> CuptiCollector::start(
    const CuptiCollectorOptions& options) {
  if (options.buffer_bytes < 4096) {
    throw std::invalid_argument("CuptiCollector: buffer_bytes must be at least 4096");
  }
  std::uint32_t version = 0;
  if (CUptiResult r = cuptiGetVersion(&version); r != CUPTI_SUCCESS) {
    return model::Error{cupti_error("cuptiGetVersion", r)};
  }
  // Record layouts follow the library; only the one we were compiled against is safe to read.
  // 19..28 are CUDA 12.x; from 13.0 the version is xxyyzz.
  auto major = [](std::uint32_t v) { return v >= 130000 ? v / 10000 : (v >= 19 ? 12u : 11u); };
  if (major(version) != major(CUPTI_API_VERSION)) {
    return model::Error{"CUPTI: the library's API version " + std::to_string(version) +
                        " is not the one dagsgd was built with (" +
                        std::to_string(CUPTI_API_VERSION) + "); record layouts differ"};
  }

  auto impl = std::make_unique<Impl>(options);
  impl->converter = CuptiEventConverter(CuptiConvertOptions{0, options.host_pid});
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_active != nullptr) {
      return model::Error{"CUPTI: another collector is already active in this process"};
    }
    g_active = impl.get();
  }
  auto fail = [&](const char* what, CUptiResult r) -> model::Error {
    disable_kinds();
    std::lock_guard<std::mutex> lock(g_mu);
    g_active = nullptr;
    return model::Error{cupti_error(what, r)};
  };

  std::int64_t (*clock)() =
      options.host_clock_ns != nullptr ? options.host_clock_ns : &monotonic_ns;
  g_host_clock.store(clock);
  if (options.stamp_with_host_clock) {
    // Must precede enabling any kind, so that every record uses the host clock.
    impl->counts.host_clock_stamps =
        cuptiActivityRegisterTimestampCallback(&host_timestamp) == CUPTI_SUCCESS;
  }
  if (CUptiResult r = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
      r != CUPTI_SUCCESS) {
    return fail("cuptiActivityRegisterCallbacks", r);
  }
  for (auto kind : kKinds) {
    if (CUptiResult r = cuptiActivityEnable(kind); r != CUPTI_SUCCESS) {
      return fail("cuptiActivityEnable", r);
    }
  }
  impl->enabled = true;

  if (impl->counts.host_clock_stamps) {
    impl->counts.time_offset_ns = -options.trace_base_ns;
  } else {
    // Bracket one host reading with two CUPTI readings; the midpoint is the host reading's twin.
    std::uint64_t before = 0;
    std::uint64_t after = 0;
    if (CUptiResult r = cuptiGetTimestamp(&before); r != CUPTI_SUCCESS) {
      return fail("cuptiGetTimestamp", r);
    }
    std::int64_t host = clock();
    (void)cuptiGetTimestamp(&after);
    auto mid = static_cast<std::int64_t>(before + (after - before) / 2);
    impl->counts.time_offset_ns = host - mid - options.trace_base_ns;
  }
  impl->converter.set_time_offset(impl->counts.time_offset_ns);
  return std::unique_ptr<CuptiCollector>(new CuptiCollector(std::move(impl)));
}

CuptiCollector::~CuptiCollector() {
  if (!impl_) return;
  if (impl_->enabled) {
    disable_kinds();
    // Hands back every buffer CUPTI holds, so none is completed after impl_ is gone.
    (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_active == impl_.get()) g_active = nullptr;
}

void CuptiCollector::set_iteration(std::int64_t iteration) { impl_->iteration.store(iteration); }

void CuptiCollector::push_layer(const std::string& layer, trace::Phase phase) {
  std::uint64_t id = impl_->next_external_id.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(impl_->conv_mu);
    impl_->converter.add_layer_tag(id, LayerTag{layer, phase, impl_->iteration.load()});
  }
  (void)cuptiActivityPushExternalCorrelationId(kLayerKind, id);
}

void CuptiCollector::pop_layer() {
  std::uint64_t last = 0;
  (void)cuptiActivityPopExternalCorrelationId(kLayerKind, &last);
}

model::Expected<std::vector<trace::Event>> CuptiCollector::drain() {
  if (impl_->enabled) {
    if (CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        r != CUPTI_SUCCESS) {
      return model::Error{cupti_error("cuptiActivityFlushAll", r)};
    }
  }
  CuptiRecords batch;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    std::swap(batch, impl_->pending);
  }
  std::lock_guard<std::mutex> lock(impl_->conv_mu);
  auto events = impl_->converter.convert(batch);
  impl_->counts.events_written += static_cast<std::int64_t>(events.size());
  return events;
}

model::Expected<std::vector<trace::Event>> CuptiCollector::drain_and_stop() {
  if (impl_->enabled) {
    disable_kinds();
    impl_->enabled = false;
    // With every kind disabled this is the last flush; it returns all buffers.
    if (CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        r != CUPTI_SUCCESS) {
      return model::Error{cupti_error("cuptiActivityFlushAll", r)};
    }
  }
  return drain();
}

model::Expected<void> CuptiCollector::flush(trace::TraceWriter& out) {
  auto events = drain();
  if (!events) return events.error();
  for (const auto& e : *events) out.write(e);
  out.flush();
  return model::ok();
}

model::Expected<CuptiCollectorStats> CuptiCollector::finish(trace::TraceWriter& out) {
  auto events = drain_and_stop();
  if (!events) return events.error();
  for (const auto& e : *events) out.write(e);
  out.flush();
  return stats();
}

CuptiCollectorStats CuptiCollector::stats() const {
  std::scoped_lock lock(g_mu, impl_->conv_mu);
  CuptiCollectorStats s = impl_->counts;
  s.events = impl_->converter.stats();
  return s;
}

}  // namespace dagsgd::runtime
