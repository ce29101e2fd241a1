// Walks CUPTI activity buffers into the plain records of cupti_records.h. Runs inside CUPTI's
// buffer-completed callback: nothing here may throw past the caller (it catches).
#include <cstring>

#include "cupti_versions.h"
#include "dagsgd/runtime/cuda/cupti_collector.h"

namespace dagsgd::runtime {

namespace v = cupti_version;

static_assert(static_cast<int>(CuptiMemcpyKind::kPtoP) == CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
static_assert(static_cast<int>(CuptiMemcpyKind::kHtoD) == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
static_assert(static_cast<int>(CuptiMemoryKind::kManagedStatic) ==
              CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC);
static_assert(static_cast<int>(CuptiMemoryKind::kDevice) == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
static_assert(static_cast<int>(CuptiSyncKind::kContextSynchronize) ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE);
static_assert(static_cast<int>(CuptiSyncKind::kStreamWaitEvent) ==
              CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);

namespace {

// CUPTI names API functions with their version suffix ("cudaLaunchKernel_v7000"); Kineto and
// people use the plain name.
std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) {
    return std::string(domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda_runtime_" : "cuda_driver_") +
           std::to_string(cbid);
  }
  std::string s(name);
  auto pos = s.rfind("_v");
  if (pos != std::string::npos && pos + 2 < s.size() &&
      s.find_first_not_of("0123456789", pos + 2) == std::string::npos) {
    s.resize(pos);
  }
  return s;
}

template <class T>
const T& as(const CUpti_Activity* r) {
  return *reinterpret_cast<const T*>(r);  // NOLINT: CUPTI's records are typed by `kind`
}

CuptiMemoryKind memory_kind(unsigned v) {
  return v <= static_cast<unsigned>(CuptiMemoryKind::kManagedStatic)
             ? static_cast<CuptiMemoryKind>(v)
             : CuptiMemoryKind::kUnknown;
}

// When a record ran and the call it belongs to: CUPTI names these alike in every timed record.
template <class Record, class Copy>
void copy_times(const Record& r, Copy& c) {
  c.start = r.start;
  c.end = r.end;
  c.correlation = r.correlationId;
}

// The fields every GPU activity record of CUPTI has under the same names.
template <class Record>
void copy_activity(const Record& r, CuptiGpuActivity& c) {
  copy_times(r, c);
  c.device = r.deviceId;
  c.context = r.contextId;
  c.stream = r.streamId;
}

void walk_one(const CUpti_Activity* r, CuptiRecords& out) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = as<v::Kernel>(r);
      CuptiKernel c;
      c.name = k.name != nullptr ? k.name : "";
      copy_activity(k, c);
      c.grid[0] = k.gridX;
      c.grid[1] = k.gridY;
      c.grid[2] = k.gridZ;
      c.block[0] = k.blockX;
      c.block[1] = k.blockY;
      c.block[2] = k.blockZ;
      c.registers_per_thread = k.registersPerThread;
      c.shared_memory = std::int64_t{k.staticSharedMemory} + k.dynamicSharedMemory;
      out.kernels.push_back(std::move(c));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = as<v::Memcpy>(r);
      CuptiMemcpy c;
      c.kind = m.copyKind <= static_cast<unsigned>(CuptiMemcpyKind::kPtoP)
                   ? static_cast<CuptiMemcpyKind>(m.copyKind)
                   : CuptiMemcpyKind::kUnknown;
      c.src_kind = memory_kind(m.srcKind);
      c.dst_kind = memory_kind(m.dstKind);
      c.bytes = m.bytes;
      copy_activity(m, c);
      c.runtime_correlation = m.runtimeCorrelationId;
      out.memcpys.push_back(c);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = as<v::Memset>(r);
      CuptiMemset c;
      c.memory_kind = memory_kind(m.memoryKind);
      c.value = m.value;
      c.bytes = m.bytes;
      copy_activity(m, c);
      out.memsets.push_back(c);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = as<v::Api>(r);
      bool runtime = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      CuptiApiCall c;
      c.domain = runtime ? CuptiApiDomain::kRuntime : CuptiApiDomain::kDriver;
      c.name = api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a.cbid);
      c.cbid = a.cbid;
      copy_times(a, c);
      c.process = a.processId;
      c.thread = a.threadId;
      c.return_value = a.returnValue;
      out.api_calls.push_back(std::move(c));
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = as<v::Sync>(r);
      CuptiSync c;
      c.kind = s.type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE
                   ? static_cast<CuptiSyncKind>(s.type)
                   : CuptiSyncKind::kUnknown;
      copy_times(s, c);
      c.context = s.contextId;
      c.stream = s.streamId;
      c.cuda_event = s.cudaEventId;
      out.syncs.push_back(c);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& x = as<v::External>(r);
      out.external.push_back(CuptiExternalCorrelation{static_cast<std::uint32_t>(x.externalKind),
                                                      x.externalId, x.correlationId});
      break;
    }
    default:
      ++out.other_records;
      break;
  }
}

}  // namespace

std::size_t cupti_walk_buffer(const std::uint8_t* buffer, std::size_t valid_bytes,
                              CuptiRecords& out) {
  if (buffer == nullptr || valid_bytes == 0) return 0;
  // cuptiActivityGetNextRecord takes a non-const buffer but only reads it.
  auto* buf = const_cast<std::uint8_t*>(buffer);  // NOLINT
  CUpti_Activity* record = nullptr;
  std::size_t n = 0;
  while (cuptiActivityGetNextRecord(buf, valid_bytes, &record) == CUPTI_SUCCESS) {
    walk_one(record, out);
    ++n;
  }
  return n;
}

const char* cupti_record_versions() {
  static const std::string text =
      std::string("kernel=") + v::kKernelName + " memcpy=" + v::kMemcpyName +
      " memset=CUpti_ActivityMemset4 api=CUpti_ActivityAPI sync=" + v::kSyncName +
      " external=CUpti_ActivityExternalCorrelation";
  return text.c_str();
}

std::uint32_t cupti_compiled_api_version() { return CUPTI_API_VERSION; }

}  // namespace dagsgd::runtime
