// CUPTI record -> Kineto event conversion on synthetic records: names, args, flows, layer
// attribution, time base, batches. Runs without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/hta_conventions.h"
#include "dagsgd/model/io.h"
#include "dagsgd/runtime/cuda/cupti_records.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::runtime {
namespace {

using trace::Event;

CuptiApiCall api(CuptiApiDomain domain, const char* name, std::uint32_t corr, std::uint64_t start,
                 std::uint64_t end) {
  CuptiApiCall c;
  c.domain = domain;
  c.name = name;
  c.cbid = domain == CuptiApiDomain::kRuntime ? 211 : 307;
  c.start = start;
  c.end = end;
  c.process = 4242;
  c.thread = 77;
  c.correlation = corr;
  return c;
}

CuptiKernel kernel(std::uint32_t corr, std::uint64_t start, std::uint64_t end) {
  CuptiKernel k;
  k.name = "_Z6kernelPfi";
  k.start = start;
  k.end = end;
  k.device = 1;
  k.context = 3;
  k.stream = 7;
  k.correlation = corr;
  k.grid[0] = 128;
  k.grid[1] = 1;
  k.grid[2] = 1;
  k.block[0] = 256;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registers_per_thread = 32;
  k.shared_memory = 1024;
  return k;
}

CuptiSync sync(CuptiSyncKind kind, std::uint64_t start, std::uint64_t end, std::uint32_t context,
               std::uint32_t correlation) {
  CuptiSync s;
  s.kind = kind;
  s.start = start;
  s.end = end;
  s.context = context;
  s.correlation = correlation;
  return s;
}

// A launching API call and the kernel it launched (same correlation id).
void launch(CuptiRecords& r, CuptiApiDomain domain, const char* name, std::uint32_t corr,
            std::uint64_t call_start, std::uint64_t call_end, std::uint64_t kernel_start,
            std::uint64_t kernel_end) {
  r.api_calls.push_back(api(domain, name, corr, call_start, call_end));
  r.kernels.push_back(kernel(corr, kernel_start, kernel_end));
}

std::vector<const Event*> with_cat(const std::vector<Event>& events, const std::string& cat,
                                   char ph = 'X') {
  std::vector<const Event*> out;
  for (const auto& e : events) {
    if (e.cat == cat && e.ph == ph) out.push_back(&e);
  }
  return out;
}

// The start ('s') and end ('f') of the one flow among `events`; nulls unless there is one.
std::pair<const Event*, const Event*> the_flow(const std::vector<Event>& events) {
  auto s = with_cat(events, trace::cat::kAc2g, 's');
  auto f = with_cat(events, trace::cat::kAc2g, 'f');
  EXPECT_EQ(s.size(), 1u);
  EXPECT_EQ(f.size(), 1u);
  if (s.size() != 1 || f.size() != 1) return {nullptr, nullptr};
  return {s[0], f[0]};
}

std::int64_t int_arg(const Event& e, const std::string& key) {
  const auto* v = e.find(key);
  if (v == nullptr) throw std::runtime_error("no arg " + key);
  return std::get<std::int64_t>(*v);
}

std::string str_arg(const Event& e, const std::string& key) {
  const auto* v = e.find(key);
  if (v == nullptr) throw std::runtime_error("no arg " + key);
  return std::get<std::string>(*v);
}

TEST(CuptiEvents, KernelLaunchBecomesKinetoEventsWithFlow) {
  CuptiEventConverter conv(CuptiConvertOptions{-500, -1});
  CuptiRecords r;
  launch(r, CuptiApiDomain::kRuntime, "cudaLaunchKernel", 5, 1000, 1100, 2000, 2500);
  auto events = conv.convert(r);

  auto rt = with_cat(events, trace::cat::kCudaRuntime);
  ASSERT_EQ(rt.size(), 1u);
  EXPECT_EQ(rt[0]->name, "cudaLaunchKernel");
  EXPECT_EQ(rt[0]->ts, 500);  // 1000 + offset
  EXPECT_EQ(rt[0]->dur, 100);
  EXPECT_EQ(rt[0]->pid, 4242);
  EXPECT_EQ(rt[0]->tid, 77);
  EXPECT_EQ(int_arg(*rt[0], "correlation"), 5);
  EXPECT_EQ(int_arg(*rt[0], "cbid"), 211);

  auto k = with_cat(events, trace::cat::kKernel);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0]->name, "kernel(float*, int)");  // demangled, as Kineto shows it
  EXPECT_EQ(k[0]->ts, 1500);
  EXPECT_EQ(k[0]->dur, 500);
  EXPECT_EQ(k[0]->pid, 1);  // device
  EXPECT_EQ(k[0]->tid, 7);  // stream
  EXPECT_EQ(int_arg(*k[0], "device"), 1);
  EXPECT_EQ(int_arg(*k[0], "stream"), 7);
  EXPECT_EQ(int_arg(*k[0], "correlation"), 5);
  EXPECT_EQ(int_arg(*k[0], "registers per thread"), 32);
  EXPECT_EQ(str_arg(*k[0], "grid"), "[128, 1, 1]");
  EXPECT_EQ(str_arg(*k[0], "block"), "[256, 1, 1]");
  EXPECT_EQ(k[0]->find("layer"), nullptr);  // nothing was pushed

  auto [s, f] = the_flow(events);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->id, 5);
  EXPECT_EQ(f->id, 5);
  EXPECT_EQ(s->ts, rt[0]->ts);
  EXPECT_EQ(s->pid, rt[0]->pid);
  EXPECT_EQ(s->tid, rt[0]->tid);
  EXPECT_EQ(f->ts, k[0]->ts);
  EXPECT_EQ(f->pid, k[0]->pid);
  EXPECT_EQ(f->tid, k[0]->tid);
  EXPECT_EQ(conv.stats().flows, 1);

  for (std::size_t i = 1; i < events.size(); ++i) EXPECT_LE(events[i - 1].ts, events[i].ts);
}

TEST(CuptiEvents, HostPidOverridesTheRecordedProcess) {
  CuptiEventConverter conv(CuptiConvertOptions{0, 3});
  CuptiRecords r;
  r.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaMalloc", 1, 10, 20));
  auto events = conv.convert(r);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].pid, 3);
}

TEST(CuptiEvents, KernelsAreAttributedToThePushedLayer) {
  CuptiEventConverter conv;
  conv.add_layer_tag(1, LayerTag{"fc1", trace::Phase::kForward, 3});
  conv.add_layer_tag(2, LayerTag{"fc1", trace::Phase::kBackward, 3});
  CuptiRecords r;
  r.external.push_back(CuptiExternalCorrelation{3, 1, 10});
  r.external.push_back(CuptiExternalCorrelation{3, 2, 11});
  r.external.push_back(CuptiExternalCorrelation{3, 99, 12});  // never registered
  r.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", 10, 100, 110));
  r.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", 11, 200, 210));
  r.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", 12, 300, 310));
  r.kernels.push_back(kernel(10, 1000, 1100));
  r.kernels.push_back(kernel(11, 1200, 1300));
  r.kernels.push_back(kernel(12, 1400, 1500));
  r.kernels.push_back(kernel(13, 1600, 1700));  // launched outside any layer scope
  auto events = conv.convert(r);

  auto k = with_cat(events, trace::cat::kKernel);
  ASSERT_EQ(k.size(), 4u);
  EXPECT_EQ(str_arg(*k[0], "layer"), "fc1");
  EXPECT_EQ(str_arg(*k[0], "phase"), "forward");
  EXPECT_EQ(int_arg(*k[0], "iteration"), 3);
  EXPECT_EQ(int_arg(*k[0], "External id"), 1);
  EXPECT_EQ(str_arg(*k[1], "phase"), "backward");
  EXPECT_EQ(int_arg(*k[1], "External id"), 2);
  EXPECT_EQ(int_arg(*k[2], "External id"), 99);
  EXPECT_EQ(k[2]->find("layer"), nullptr);
  EXPECT_EQ(k[3]->find("External id"), nullptr);
  // The launching call carries the same attribution.
  auto rt = with_cat(events, trace::cat::kCudaRuntime);
  ASSERT_EQ(rt.size(), 3u);
  EXPECT_EQ(str_arg(*rt[0], "layer"), "fc1");
  EXPECT_EQ(str_arg(*rt[1], "phase"), "backward");

  EXPECT_EQ(conv.stats().attributed, 2);
  EXPECT_EQ(conv.stats().unknown_external, 2);  // the call and the kernel of id 99
  EXPECT_EQ(conv.stats().flows, 3);
}

TEST(CuptiEvents, FlowsSpanBatchesInEitherOrder) {
  CuptiEventConverter conv;
  // Call first, kernel in the next flush.
  CuptiRecords a;
  a.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", 1, 100, 110));
  auto e1 = conv.convert(a);
  EXPECT_TRUE(with_cat(e1, trace::cat::kAc2g, 's').empty());
  CuptiRecords b;
  b.kernels.push_back(kernel(1, 500, 600));
  auto e2 = conv.convert(b);
  auto [s, f] = the_flow(e2);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ts, 100);
  EXPECT_EQ(f->ts, 500);

  // Kernel first (its buffer completed earlier), call later.
  CuptiRecords c;
  c.kernels.push_back(kernel(2, 900, 950));
  auto e3 = conv.convert(c);
  EXPECT_TRUE(with_cat(e3, trace::cat::kAc2g, 'f').empty());
  CuptiRecords d;
  d.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", 2, 800, 810));
  auto e4 = conv.convert(d);
  auto [later_s, later_f] = the_flow(e4);
  ASSERT_NE(later_s, nullptr);
  EXPECT_EQ(later_f->ts, 900);
  EXPECT_EQ(conv.stats().flows, 2);
}

TEST(CuptiEvents, UnmatchedCallsAreForgottenAfterKeepBatches) {
  CuptiConvertOptions o;
  o.keep_batches = 2;
  CuptiEventConverter conv(o);
  CuptiRecords a;
  a.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", 1, 100, 110));
  (void)conv.convert(a);
  for (int i = 0; i < 3; ++i) (void)conv.convert(CuptiRecords{});
  CuptiRecords late;
  late.kernels.push_back(kernel(1, 500, 600));
  auto events = conv.convert(late);
  EXPECT_TRUE(with_cat(events, trace::cat::kAc2g, 'f').empty());
  EXPECT_EQ(with_cat(events, trace::cat::kKernel).size(), 1u);
}

TEST(CuptiEvents, DriverLaunchesLinkWhenNoRuntimeCallExists) {
  CuptiEventConverter conv;
  CuptiRecords r;
  // cuBLAS launches through the driver: only a cuLaunchKernel record.
  launch(r, CuptiApiDomain::kDriver, "cuLaunchKernel", 4, 100, 105, 300, 400);
  // A runtime call with its nested driver call: the flow starts at the runtime call.
  r.api_calls.push_back(api(CuptiApiDomain::kDriver, "cuLaunchKernel", 6, 152, 158));
  launch(r, CuptiApiDomain::kRuntime, "cudaLaunchKernel", 6, 150, 160, 500, 600);
  auto events = conv.convert(r);
  auto drv = with_cat(events, trace::cat::kCudaDriver);
  ASSERT_EQ(drv.size(), 2u);
  EXPECT_EQ(drv[0]->name, "cuLaunchKernel");
  auto s = with_cat(events, trace::cat::kAc2g, 's');
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0]->ts, 100);  // the driver call
  EXPECT_EQ(s[0]->id, 4);
  EXPECT_EQ(s[1]->ts, 150);  // the runtime call, not its nested driver call
  EXPECT_EQ(s[1]->id, 6);
}

TEST(CuptiEvents, MemcpyAndMemsetNamesBytesAndBandwidth) {
  CuptiEventConverter conv;
  CuptiRecords r;
  CuptiMemcpy h2d;
  h2d.kind = CuptiMemcpyKind::kHtoD;
  h2d.src_kind = CuptiMemoryKind::kPageable;
  h2d.dst_kind = CuptiMemoryKind::kDevice;
  h2d.bytes = 1'000'000;
  h2d.start = 1000;
  h2d.end = 101'000;  // 100 us -> 10 GB/s
  h2d.device = 0;
  h2d.stream = 14;
  h2d.correlation = 21;
  h2d.runtime_correlation = 20;
  r.memcpys.push_back(h2d);
  CuptiMemcpy d2h = h2d;
  d2h.kind = CuptiMemcpyKind::kDtoH;
  d2h.src_kind = CuptiMemoryKind::kDevice;
  d2h.dst_kind = CuptiMemoryKind::kPinned;
  d2h.start = d2h.end = 200'000;  // zero length
  d2h.correlation = 31;
  d2h.runtime_correlation = 0;
  r.memcpys.push_back(d2h);
  CuptiMemset ms;
  ms.memory_kind = CuptiMemoryKind::kDevice;
  ms.bytes = 4096;
  ms.start = 300'000;
  ms.end = 300'512;
  ms.stream = 14;
  ms.correlation = 40;
  r.memsets.push_back(ms);
  // The memcpy's runtime call has the runtime correlation id, not the driver one.
  r.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaMemcpyAsync", 20, 500, 600));
  r.external.push_back(CuptiExternalCorrelation{3, 8, 20});
  conv.add_layer_tag(8, LayerTag{"input", trace::Phase::kH2D, 0});
  auto events = conv.convert(r);

  auto mc = with_cat(events, trace::cat::kGpuMemcpy);
  ASSERT_EQ(mc.size(), 2u);
  EXPECT_EQ(mc[0]->name, "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(int_arg(*mc[0], "bytes"), 1'000'000);
  EXPECT_DOUBLE_EQ(std::get<double>(*mc[0]->find("memory bandwidth (GB/s)")), 10.0);
  EXPECT_EQ(mc[0]->tid, 14);
  EXPECT_EQ(str_arg(*mc[0], "phase"), "h2d");
  EXPECT_EQ(str_arg(*mc[0], "layer"), "input");
  EXPECT_EQ(mc[1]->name, "Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(str_arg(*mc[1], "memory bandwidth (GB/s)"), "N/A");

  auto mset = with_cat(events, trace::cat::kGpuMemset);
  ASSERT_EQ(mset.size(), 1u);
  EXPECT_EQ(mset[0]->name, "Memset (Device)");
  EXPECT_EQ(int_arg(*mset[0], "bytes"), 4096);
  EXPECT_DOUBLE_EQ(std::get<double>(*mset[0]->find("memory bandwidth (GB/s)")), 8.0);

  auto f = with_cat(events, trace::cat::kAc2g, 'f');
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]->id, 20);
  EXPECT_EQ(conv.stats().memcpys, 2);
  EXPECT_EQ(conv.stats().memsets, 1);
}

TEST(CuptiEvents, SyncEventsSitOnTheirStreamAndDevice) {
  CuptiEventConverter conv;
  CuptiRecords r;
  CuptiKernel k = kernel(1, 10, 20);
  k.device = 2;
  k.context = 9;
  r.kernels.push_back(k);  // teaches the converter that context 9 is device 2
  CuptiSync stream_sync = sync(CuptiSyncKind::kStreamSynchronize, 100, 400, 9, 50);
  stream_sync.stream = 7;
  r.syncs.push_back(stream_sync);
  r.syncs.push_back(sync(CuptiSyncKind::kContextSynchronize, 500, 900, 9, 51));
  CuptiSync event_sync = sync(CuptiSyncKind::kEventSynchronize, 1000, 1001, 4, 0);
  event_sync.cuda_event = 12;  // context 4 is unknown: device 0
  r.syncs.push_back(event_sync);
  auto events = conv.convert(r);

  auto s = with_cat(events, trace::cat::kCudaSync);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0]->name, "Stream Sync");
  EXPECT_EQ(s[0]->pid, 2);
  EXPECT_EQ(s[0]->tid, 7);
  EXPECT_EQ(s[0]->dur, 300);
  EXPECT_EQ(str_arg(*s[0], "cuda_sync_kind"), "Stream Sync");
  EXPECT_EQ(int_arg(*s[0], "correlation"), 50);
  EXPECT_EQ(s[1]->name, "Context Sync");
  EXPECT_EQ(s[1]->tid, -1);  // no stream
  EXPECT_EQ(int_arg(*s[1], "stream"), -1);
  EXPECT_EQ(s[2]->name, "Event Sync");
  EXPECT_EQ(s[2]->pid, 0);
  EXPECT_EQ(int_arg(*s[2], "wait_on_cuda_event_id"), 12);
  EXPECT_EQ(conv.stats().syncs, 3);
}

TEST(CuptiEvents, UntimedAndBackwardsRecordsAreCountedNotWritten) {
  CuptiEventConverter conv;
  CuptiRecords r;
  r.kernels.push_back(kernel(1, 0, 0));
  r.kernels.push_back(kernel(2, 500, 400));
  r.api_calls.push_back(api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", 3, 0, 0));
  auto events = conv.convert(r);
  EXPECT_TRUE(events.empty());
  EXPECT_EQ(conv.stats().untimed, 2);
  EXPECT_EQ(conv.stats().bad_time, 1);
  EXPECT_EQ(conv.stats().kernels, 0);
}

TEST(CuptiEvents, RecordsAppendInOrder) {
  CuptiRecords a;
  a.kernels.push_back(kernel(1, 1, 2));
  a.other_records = 2;
  CuptiRecords b;
  b.kernels.push_back(kernel(2, 3, 4));
  b.syncs.push_back(CuptiSync{});
  b.other_records = 1;
  a.append(std::move(b));
  ASSERT_EQ(a.kernels.size(), 2u);
  EXPECT_EQ(a.kernels[1].correlation, 2u);
  EXPECT_EQ(a.syncs.size(), 1u);
  EXPECT_EQ(a.other_records, 3);
  EXPECT_EQ(a.size(), 3u);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): append() empties it by contract
}

TEST(CuptiEvents, SameRecordsGiveTheSameTraceBytes) {
  CuptiRecords r;
  for (std::uint32_t i = 0; i < 20; ++i) {
    r.api_calls.push_back(
        api(CuptiApiDomain::kRuntime, "cudaLaunchKernel", i, 100 + i * 10, 105 + i * 10));
    r.kernels.push_back(kernel(i, 1000 + (19 - i) * 50, 1040 + (19 - i) * 50));
  }
  auto text = [&r] {
    CuptiEventConverter conv(CuptiConvertOptions{-50, 1});
    conv.add_layer_tag(1, LayerTag{"fc2", trace::Phase::kBackward, 1});
    std::string out;
    for (const auto& e : conv.convert(r)) {
      trace::append_event_json(out, e);
      out.push_back('\n');
    }
    return out;
  };
  EXPECT_EQ(text(), text());
}

TEST(CuptiEvents, WrittenTraceIsKinetoJson) {
  std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-cupti.trace.json";
  auto w = trace::TraceWriter::open(path, trace::DistributedInfo{0, 1, "mpi"}, 1'000'000);
  ASSERT_TRUE(w.ok()) << w.error().message;
  CuptiEventConverter conv(CuptiConvertOptions{-1'000'000, -1});
  conv.add_layer_tag(7, LayerTag{"fc1", trace::Phase::kForward, 0});
  CuptiRecords r;
  r.external.push_back(CuptiExternalCorrelation{3, 7, 5});
  launch(r, CuptiApiDomain::kRuntime, "cudaLaunchKernel", 5, 1'001'000, 1'002'500, 1'003'000,
         1'013'250);
  for (const auto& e : conv.convert(r)) w->write(e);
  ASSERT_TRUE(w->close().ok());

  auto text = model::read_file(path);
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  const auto& evs = j["traceEvents"];
  ASSERT_EQ(evs.size(), 4u);
  int kernels = 0;
  for (const auto& e : evs) {
    if (e["cat"] == "kernel") {
      ++kernels;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 3.0);  // 1'003'000 ns - base 1'000'000 ns
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 10.25);
      EXPECT_EQ(e["args"]["layer"], "fc1");
      EXPECT_EQ(e["args"]["External id"], 7);
    }
    if (e["ph"] == "f") {
      EXPECT_EQ(e["id"], 5);
      EXPECT_EQ(e["bp"], "e");
    }
  }
  EXPECT_EQ(kernels, 1);

  // As Holistic Trace Analysis reads it (tests/common/hta_conventions.h): the kernel is device
  // work on its stream and device, linked by its correlation id to the launch, a CPU event.
  namespace hta = dagsgd::testing::hta;
  EXPECT_EQ(hta::rank_of(path), 0);
  int device = 0;
  int linked = 0;
  for (const auto& e : evs) {
    if (e["ph"] != "X" || !hta::on_device(e)) continue;
    ++device;
    EXPECT_TRUE(hta::kernel_category(e["cat"].get<std::string>())) << e.dump();
    EXPECT_EQ(hta::int_arg(e, "stream"), 7);
    EXPECT_EQ(hta::int_arg(e, "device"), 1);
    for (const auto& c : evs) {
      if (c["ph"] == "X" && !hta::on_device(c) && c["cat"] == "cuda_runtime" &&
          hta::launch_call(c["name"].get<std::string>()) &&
          hta::int_arg(c, "correlation") == hta::int_arg(e, "correlation")) {
        ++linked;
      }
    }
  }
  EXPECT_EQ(device, 1);
  EXPECT_EQ(linked, 1);
}

TEST(CuptiEvents, KindNames) {
  EXPECT_STREQ(memcpy_kind_name(CuptiMemcpyKind::kPtoP), "PtoP");
  EXPECT_STREQ(memcpy_kind_name(CuptiMemcpyKind::kDtoD), "DtoD");
  EXPECT_STREQ(memory_kind_name(CuptiMemoryKind::kManagedStatic), "Managed Static");
  EXPECT_STREQ(sync_kind_name(CuptiSyncKind::kStreamWaitEvent), "Stream Wait Event");
  EXPECT_STREQ(sync_kind_name(CuptiSyncKind::kUnknown), "Unknown");
}

}  // namespace
}  // namespace dagsgd::runtime
