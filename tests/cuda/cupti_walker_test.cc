// The buffer walker on buffers of real CUPTI record structs (the versions this build selected),
// read through libcupti's own cuptiActivityGetNextRecord. Needs libcupti, not a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cupti_versions.h"
#include "dagsgd/runtime/cuda/cupti_collector.h"

namespace dagsgd::runtime {
namespace {

namespace v = cupti_version;

// A CUPTI-style activity buffer: records back to back, each 8-byte aligned.
class Buffer {
 public:
  Buffer() : bytes_(1 << 16, 0) {}
  template <class T>
  T& add() {
    static_assert(sizeof(T) % ACTIVITY_RECORD_ALIGNMENT == 0);
    if (used_ + sizeof(T) > bytes_.size()) throw std::runtime_error("test buffer full");
    T* r = reinterpret_cast<T*>(data() + used_);  // NOLINT
    used_ += sizeof(T);
    return *r;
  }
  // A timed record: the fields every timed kind (API calls included) shares.
  template <class T>
  T& add_at(CUpti_ActivityKind kind, std::uint64_t start, std::uint64_t end,
            std::uint32_t correlation) {
    T& r = add<T>();
    r.kind = kind;
    r.start = start;
    r.end = end;
    r.correlationId = correlation;
    return r;
  }
  // A timed record on a stream: kernels, copies, memsets and syncs.
  template <class T>
  T& add_timed(CUpti_ActivityKind kind, std::uint64_t start, std::uint64_t end,
               std::uint32_t stream, std::uint32_t correlation) {
    T& r = add_at<T>(kind, start, end, correlation);
    r.streamId = stream;
    return r;
  }
  std::uint8_t* data() { return reinterpret_cast<std::uint8_t*>(bytes_.data()); }  // NOLINT
  std::size_t used() const { return used_; }

 private:
  std::vector<std::uint64_t> bytes_;  // uint64 storage keeps the 8-byte alignment
  std::size_t used_ = 0;
};

TEST(CuptiWalker, ReadsEveryEnabledKindIntoPlainRecords) {
  Buffer buf;
  auto& ext = buf.add<v::External>();
  ext.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  ext.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  ext.externalId = 17;
  ext.correlationId = 100;

  auto& rt = buf.add_at<v::Api>(CUPTI_ACTIVITY_KIND_RUNTIME, 1000, 1200, 100);
  rt.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  rt.processId = 11;
  rt.threadId = 12;

  buf.add_at<v::Api>(CUPTI_ACTIVITY_KIND_DRIVER, 1300, 1350, 101).cbid =
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;

  static const char kName[] = "_Z4gemmPKfPf";
  auto& k = buf.add_timed<v::Kernel>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 5000, 7000, 13, 100);
  k.name = kName;
  k.contextId = 1;
  k.gridX = 64;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 128;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 512;
  k.dynamicSharedMemory = 256;

  auto& mc = buf.add_timed<v::Memcpy>(CUPTI_ACTIVITY_KIND_MEMCPY, 8000, 9000, 13, 102);
  mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  mc.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  mc.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  mc.bytes = 4096;
  mc.runtimeCorrelationId = 103;

  auto& ms = buf.add_timed<v::Memset>(CUPTI_ACTIVITY_KIND_MEMSET, 9500, 9600, 0, 104);
  ms.bytes = 64;
  ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;

  auto& sy = buf.add_timed<v::Sync>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 9000, 9900, 13, 105);
  sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sy.contextId = 1;
  sy.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;

  // A kind we never enable: counted, not kept.
  auto& other = buf.add<CUpti_ActivityOverhead3>();
  other.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;

  CuptiRecords r;
  EXPECT_EQ(cupti_walk_buffer(buf.data(), buf.used(), r), 8u);
  EXPECT_EQ(r.other_records, 1);

  ASSERT_EQ(r.external.size(), 1u);
  EXPECT_EQ(r.external[0].external_id, 17u);
  EXPECT_EQ(r.external[0].correlation, 100u);

  ASSERT_EQ(r.api_calls.size(), 2u);
  EXPECT_EQ(r.api_calls[0].domain, CuptiApiDomain::kRuntime);
  EXPECT_EQ(r.api_calls[0].name, "cudaLaunchKernel");  // "_v7000" stripped
  EXPECT_EQ(r.api_calls[0].process, 11u);
  EXPECT_EQ(r.api_calls[0].thread, 12u);
  EXPECT_EQ(r.api_calls[1].domain, CuptiApiDomain::kDriver);
  EXPECT_EQ(r.api_calls[1].name, "cuLaunchKernel");

  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].name, kName);
  EXPECT_EQ(r.kernels[0].stream, 13u);
  EXPECT_EQ(r.kernels[0].grid[1], 2);
  EXPECT_EQ(r.kernels[0].block[0], 128);
  EXPECT_EQ(r.kernels[0].registers_per_thread, 40);
  EXPECT_EQ(r.kernels[0].shared_memory, 768);

  ASSERT_EQ(r.memcpys.size(), 1u);
  EXPECT_EQ(r.memcpys[0].kind, CuptiMemcpyKind::kDtoH);
  EXPECT_EQ(r.memcpys[0].src_kind, CuptiMemoryKind::kDevice);
  EXPECT_EQ(r.memcpys[0].dst_kind, CuptiMemoryKind::kPinned);
  EXPECT_EQ(r.memcpys[0].bytes, 4096u);
  EXPECT_EQ(r.memcpys[0].runtime_correlation, 103u);

  ASSERT_EQ(r.memsets.size(), 1u);
  EXPECT_EQ(r.memsets[0].bytes, 64u);
  EXPECT_EQ(r.memsets[0].memory_kind, CuptiMemoryKind::kDevice);

  ASSERT_EQ(r.syncs.size(), 1u);
  EXPECT_EQ(r.syncs[0].kind, CuptiSyncKind::kStreamSynchronize);
  EXPECT_EQ(r.syncs[0].cuda_event, kCuptiInvalidId);

  // Walked records convert end to end: the kernel is attributed and linked to its launch.
  CuptiEventConverter conv;
  conv.add_layer_tag(17, LayerTag{"fc2", trace::Phase::kBackward, 4});
  auto events = conv.convert(r);
  bool found = false;
  for (const auto& e : events) {
    if (e.cat != trace::cat::kKernel) continue;
    found = true;
    EXPECT_EQ(e.name, "gemm(float const*, float*)");
    EXPECT_EQ(std::get<std::string>(*e.find("layer")), "fc2");
    EXPECT_EQ(std::get<std::string>(*e.find("phase")), "backward");
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(conv.stats().flows, 1);
}

TEST(CuptiWalker, EmptyOrNullBuffersYieldNothing) {
  CuptiRecords r;
  EXPECT_EQ(cupti_walk_buffer(nullptr, 0, r), 0u);
  Buffer buf;
  EXPECT_EQ(cupti_walk_buffer(buf.data(), 0, r), 0u);
  EXPECT_TRUE(r.empty());
}

TEST(CuptiWalker, RecordVersionsFollowTheCuptiApiVersion) {
  std::string versions = cupti_record_versions();
  EXPECT_EQ(cupti_compiled_api_version(), std::uint32_t{CUPTI_API_VERSION});
  if (CUPTI_API_VERSION >= 130000) {
    EXPECT_NE(versions.find("kernel=CUpti_ActivityKernel10"), std::string::npos) << versions;
  } else {
    EXPECT_NE(versions.find("kernel=CUpti_ActivityKernel9"), std::string::npos) << versions;
  }
  if (CUPTI_API_VERSION >= 26) {
    EXPECT_NE(versions.find("memcpy=CUpti_ActivityMemcpy6"), std::string::npos) << versions;
    EXPECT_NE(versions.find("sync=CUpti_ActivitySynchronization2"), std::string::npos);
  }
}

}  // namespace
}  // namespace dagsgd::runtime
