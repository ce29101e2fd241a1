// Plain copies of the CUPTI activity records the collector keeps, and their conversion into
// Kineto-layout trace events. No CUPTI include: the conversion builds and is tested without a GPU.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "dagsgd/trace/event.h"

namespace dagsgd::runtime {

// Values mirror CUpti_ActivityMemcpyKind / CUpti_ActivityMemoryKind /
// CUpti_ActivitySynchronizationType; the walker static_asserts that they still do.
enum class CuptiMemcpyKind : std::uint8_t {
  kUnknown = 0,
  kHtoD = 1,
  kDtoH = 2,
  kHtoA = 3,
  kAtoH = 4,
  kAtoA = 5,
  kAtoD = 6,
  kDtoA = 7,
  kDtoD = 8,
  kHtoH = 9,
  kPtoP = 10,
};
enum class CuptiMemoryKind : std::uint8_t {
  kUnknown = 0,
  kPageable = 1,
  kPinned = 2,
  kDevice = 3,
  kArray = 4,
  kManaged = 5,
  kDeviceStatic = 6,
  kManagedStatic = 7,
};
enum class CuptiSyncKind : std::uint8_t {
  kUnknown = 0,
  kEventSynchronize = 1,
  kStreamWaitEvent = 2,
  kStreamSynchronize = 3,
  kContextSynchronize = 4,
};
enum class CuptiApiDomain : std::uint8_t { kRuntime, kDriver };

// CUPTI's "not applicable" stream/event id (CUPTI_SYNCHRONIZATION_INVALID_VALUE).
inline constexpr std::uint32_t kCuptiInvalidId = 0xffffffffu;

// Where and when GPU work ran (kernels, copies, memsets). Timestamps are CUPTI nanoseconds;
// start == end == 0 means CUPTI could not time the activity.
struct CuptiGpuActivity {
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint32_t device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation = 0;  // the launching API call's id (a copy's: the driver call's)
};

struct CuptiKernel : CuptiGpuActivity {
  std::string name;  // mangled, as CUPTI reports it
  std::int32_t grid[3] = {0, 0, 0};
  std::int32_t block[3] = {0, 0, 0};
  std::int32_t registers_per_thread = 0;
  std::int64_t shared_memory = 0;  // static + dynamic, bytes
};

struct CuptiMemcpy : CuptiGpuActivity {
  CuptiMemcpyKind kind = CuptiMemcpyKind::kUnknown;
  CuptiMemoryKind src_kind = CuptiMemoryKind::kUnknown;
  CuptiMemoryKind dst_kind = CuptiMemoryKind::kUnknown;
  std::uint64_t bytes = 0;
  std::uint32_t runtime_correlation = 0;  // the runtime API call's id (0 if none)
};

struct CuptiMemset : CuptiGpuActivity {
  CuptiMemoryKind memory_kind = CuptiMemoryKind::kUnknown;
  std::uint32_t value = 0;
  std::uint64_t bytes = 0;
};

// A CUDA runtime or driver API call (cat cuda_runtime / cuda_driver).
struct CuptiApiCall {
  CuptiApiDomain domain = CuptiApiDomain::kRuntime;
  std::string name;  // "cudaLaunchKernel" (CUPTI's version suffix "_v7000" removed)
  std::uint32_t cbid = 0;
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint32_t process = 0;
  std::uint32_t thread = 0;
  std::uint32_t correlation = 0;
  std::uint32_t return_value = 0;
};
// The brief's name for the runtime flavour; driver calls use the same record.
using CuptiRuntimeCall = CuptiApiCall;

struct CuptiSync {
  CuptiSyncKind kind = CuptiSyncKind::kUnknown;
  std::uint64_t start = 0;
  std::uint64_t end = 0;
  std::uint32_t correlation = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = kCuptiInvalidId;
  std::uint32_t cuda_event = kCuptiInvalidId;
};

// Ties an API call (and so the GPU work it launched) to an id we pushed (push_layer).
struct CuptiExternalCorrelation {
  std::uint32_t external_kind = 0;  // CUpti_ExternalCorrelationKind
  std::uint64_t external_id = 0;
  std::uint32_t correlation = 0;
};

// What one or more activity buffers held, in buffer order.
struct CuptiRecords {
  std::vector<CuptiKernel> kernels;
  std::vector<CuptiMemcpy> memcpys;
  std::vector<CuptiMemset> memsets;
  std::vector<CuptiApiCall> api_calls;
  std::vector<CuptiSync> syncs;
  std::vector<CuptiExternalCorrelation> external;
  std::int64_t other_records = 0;  // kinds we did not enable (counted, not kept)

  std::size_t size() const {
    return kernels.size() + memcpys.size() + memsets.size() + api_calls.size() + syncs.size() +
           external.size();
  }
  bool empty() const { return size() == 0; }
  void append(CuptiRecords&& other);
};

// The layer scope that was active when GPU work was launched (see push_layer()).
struct LayerTag {
  std::string layer;
  trace::Phase phase = trace::Phase::kNone;
  std::int64_t iteration = -1;  // -1: not inside an iteration
};

struct CuptiConvertOptions {
  // Trace time = CUPTI ns + time_offset_ns (the caller knows both clocks and the trace base).
  std::int64_t time_offset_ns = 0;
  // pid of the host-side events (API calls); -1 uses the process id CUPTI recorded.
  std::int64_t host_pid = -1;
  // An API call or GPU activity waits this many convert() calls for its partner (flow events,
  // external ids) before it is forgotten; activities complete a few flushes after their launch.
  int keep_batches = 4;
};

struct CuptiConvertStats {
  std::int64_t kernels = 0;
  std::int64_t memcpys = 0;
  std::int64_t memsets = 0;
  std::int64_t runtime_calls = 0;
  std::int64_t driver_calls = 0;
  std::int64_t syncs = 0;
  std::int64_t flows = 0;             // launch -> GPU activity pairs
  std::int64_t attributed = 0;        // GPU activities that got a layer
  std::int64_t untimed = 0;           // records without timestamps (skipped)
  std::int64_t bad_time = 0;          // end before start (skipped)
  std::int64_t unknown_external = 0;  // external ids with no registered tag
};

// Kineto's names ("HtoD", "Pageable", "Stream Sync").
const char* memcpy_kind_name(CuptiMemcpyKind kind);
const char* memory_kind_name(CuptiMemoryKind kind);
const char* sync_kind_name(CuptiSyncKind kind);

// Turns batches of records into events, Kineto layout:
//   kernel / gpu_memcpy / gpu_memset: pid = device, tid = stream, args device, stream,
//     correlation, (grid, block, registers per thread, shared memory | bytes,
//     memory bandwidth (GB/s)), plus External id, layer, phase, iteration when attributed;
//   cuda_runtime / cuda_driver: pid = host pid, tid = thread, args cbid, correlation;
//   cuda_sync: pid = device (learnt from the context), tid = stream;
//   ac2g flows: 's' at the launching call, 'f' at the GPU activity, id = correlation id.
// Deterministic: the same batches give the same events in the same order (sorted by ts).
// Keeps the state that spans batches (calls waiting for their kernel and vice versa).
class CuptiEventConverter {
 public:
  explicit CuptiEventConverter(CuptiConvertOptions options = {});

  const CuptiConvertOptions& options() const { return options_; }
  void set_time_offset(std::int64_t offset_ns) { options_.time_offset_ns = offset_ns; }

  // Registers what an external correlation id stands for (one id per push_layer()).
  void add_layer_tag(std::uint64_t external_id, LayerTag tag);
  const LayerTag* find_layer_tag(std::uint64_t external_id) const;

  std::vector<trace::Event> convert(const CuptiRecords& batch);
  const CuptiConvertStats& stats() const { return stats_; }

 private:
  struct HostEnd {  // where an 's' flow event goes
    std::int64_t ts = 0;
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    bool flow_started = false;
    std::int64_t batch = 0;
  };
  struct GpuEnd {  // where an 'f' flow event goes
    std::int64_t ts = 0;
    std::int64_t pid = 0;
    std::int64_t tid = 0;
    std::int64_t batch = 0;
  };

  void attribute(std::uint32_t correlation, trace::Event& e, bool gpu);
  void link(std::uint32_t correlation, std::uint32_t fallback, const trace::Event& gpu_event,
            std::vector<trace::Event>& out);
  void emit_flow(std::uint32_t correlation, HostEnd& host, const GpuEnd& gpu,
                 std::vector<trace::Event>& out);
  std::int64_t to_trace(std::uint64_t cupti_ns) const;
  void forget_old();

  CuptiConvertOptions options_;
  CuptiConvertStats stats_;
  std::int64_t batch_ = 0;
  std::map<std::uint64_t, LayerTag> tags_;
  std::map<std::uint32_t, std::pair<std::uint64_t, std::int64_t>> external_;  // -> id, batch
  std::map<std::uint32_t, HostEnd> runtime_calls_;
  std::map<std::uint32_t, HostEnd> driver_calls_;
  std::multimap<std::uint32_t, GpuEnd> waiting_gpu_;  // GPU activities whose call is not seen yet
  std::map<std::uint32_t, std::uint32_t> context_device_;
};

}  // namespace dagsgd::runtime
