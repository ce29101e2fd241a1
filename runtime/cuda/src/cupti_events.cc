// CUPTI records -> Kineto-layout events: names, args and flows the way Kineto writes them, plus
// our layer/phase/iteration fields from external correlation ids. Pure C++: no CUDA here.
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "dagsgd/runtime/cuda/cupti_records.h"

namespace dagsgd::runtime {

namespace {

template <class T>
void move_append(std::vector<T>& to, std::vector<T>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
  from.clear();
}

std::string demangle(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* plain = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || plain == nullptr) {
    std::free(plain);  // NOLINT: __cxa_demangle allocates with malloc
    return name;
  }
  std::string out(plain);
  std::free(plain);  // NOLINT
  return out;
}

std::string dim3_text(const std::int32_t (&d)[3]) {
  // Kineto writes a JSON array; our ArgValue has no arrays, so the same text as a string.
  char tmp[64];
  std::snprintf(tmp, sizeof tmp, "[%d, %d, %d]", d[0], d[1], d[2]);
  return tmp;
}

bool untimed(std::uint64_t start, std::uint64_t end) { return start == 0 && end == 0; }

// Kineto writes bytes per ns (== GB/s) and the string "N/A" for zero-length copies.
trace::ArgValue bandwidth(std::uint64_t bytes, std::int64_t dur_ns) {
  if (dur_ns <= 0) return std::string("N/A");
  return static_cast<double>(bytes) / static_cast<double>(dur_ns);
}

// A copy's or memset's size and the bandwidth it reached.
void add_bytes(trace::Event& e, std::uint64_t bytes) {
  e.add(trace::arg::kBytes, static_cast<std::int64_t>(bytes))
      .add("memory bandwidth (GB/s)", bandwidth(bytes, e.dur));
}

}  // namespace

void CuptiRecords::append(CuptiRecords&& other) {
  move_append(kernels, other.kernels);
  move_append(memcpys, other.memcpys);
  move_append(memsets, other.memsets);
  move_append(api_calls, other.api_calls);
  move_append(syncs, other.syncs);
  move_append(external, other.external);
  other_records += other.other_records;
  other.other_records = 0;
}

namespace {

// Names by enum value (the enums mirror CUPTI's values, 0 = unknown).
template <class Kind, std::size_t N>
const char* name_of(Kind kind, const char* const (&names)[N]) {
  auto i = static_cast<std::size_t>(kind);
  return i < N ? names[i] : names[0];
}

// A GPU activity's event on its device (pid) and stream (tid), with Kineto's placement args.
trace::Event gpu_event(std::string name, const char* cat, const CuptiGpuActivity& a,
                       std::int64_t ts) {
  trace::Event e{std::move(name),
                 cat,
                 'X',
                 ts,
                 static_cast<std::int64_t>(a.end - a.start),
                 std::int64_t{a.device},
                 std::int64_t{a.stream}};
  e.add("device", std::int64_t{a.device})
      .add("context", std::int64_t{a.context})
      .add("stream", std::int64_t{a.stream})
      .add("correlation", std::int64_t{a.correlation});
  return e;
}

}  // namespace

const char* memcpy_kind_name(CuptiMemcpyKind kind) {
  static constexpr const char* kNames[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                           "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return name_of(kind, kNames);
}

const char* memory_kind_name(CuptiMemoryKind kind) {
  static constexpr const char* kNames[] = {"Unknown",       "Pageable",      "Pinned",
                                           "Device",        "Array",         "Managed",
                                           "Device Static", "Managed Static"};
  return name_of(kind, kNames);
}

const char* sync_kind_name(CuptiSyncKind kind) {
  static constexpr const char* kNames[] = {"Unknown", "Event Sync", "Stream Wait Event",
                                           "Stream Sync", "Context Sync"};
  return name_of(kind, kNames);
}

CuptiEventConverter::CuptiEventConverter(CuptiConvertOptions options) : options_(options) {}

void CuptiEventConverter::add_layer_tag(std::uint64_t external_id, LayerTag tag) {
  tags_[external_id] = std::move(tag);
}

const LayerTag* CuptiEventConverter::find_layer_tag(std::uint64_t external_id) const {
  auto it = tags_.find(external_id);
  return it == tags_.end() ? nullptr : &it->second;
}

std::int64_t CuptiEventConverter::to_trace(std::uint64_t cupti_ns) const {
  return static_cast<std::int64_t>(cupti_ns) + options_.time_offset_ns;
}

void CuptiEventConverter::attribute(std::uint32_t correlation, trace::Event& e, bool gpu) {
  auto ext = external_.find(correlation);
  if (ext == external_.end()) return;
  std::uint64_t id = ext->second.first;
  e.add("External id", static_cast<std::int64_t>(id));
  const LayerTag* tag = find_layer_tag(id);
  if (tag == nullptr) {
    ++stats_.unknown_external;
    return;
  }
  e.add(trace::arg::kLayer, tag->layer);
  e.add(trace::arg::kPhase, std::string(trace::phase_name(tag->phase)));
  if (tag->iteration >= 0) e.add(trace::arg::kIteration, tag->iteration);
  if (gpu) ++stats_.attributed;
}

void CuptiEventConverter::emit_flow(std::uint32_t correlation, HostEnd& host, const GpuEnd& gpu,
                                    std::vector<trace::Event>& out) {
  auto id = static_cast<std::int64_t>(correlation);
  if (!host.flow_started) {
    out.push_back(trace::Event{"ac2g", trace::cat::kAc2g, 's', host.ts, 0, host.pid, host.tid, id});
    host.flow_started = true;
  }
  out.push_back(trace::Event{"ac2g", trace::cat::kAc2g, 'f', gpu.ts, 0, gpu.pid, gpu.tid, id});
  ++stats_.flows;
}

// Finds the call that launched a GPU activity: the runtime call with its correlation id, else the
// runtime call named by `fallback` (memcpy's runtime id), else the driver call (cuBLAS launches
// through the driver). Unmatched activities wait for a later batch.
void CuptiEventConverter::link(std::uint32_t correlation, std::uint32_t fallback,
                               const trace::Event& gpu_event, std::vector<trace::Event>& out) {
  GpuEnd gpu{gpu_event.ts, gpu_event.pid, gpu_event.tid, batch_};
  if (auto it = runtime_calls_.find(correlation); it != runtime_calls_.end()) {
    emit_flow(correlation, it->second, gpu, out);
    return;
  }
  if (fallback != 0 && fallback != correlation) {
    if (auto it = runtime_calls_.find(fallback); it != runtime_calls_.end()) {
      emit_flow(fallback, it->second, gpu, out);
      return;
    }
  }
  if (auto it = driver_calls_.find(correlation); it != driver_calls_.end()) {
    emit_flow(correlation, it->second, gpu, out);
    return;
  }
  waiting_gpu_.emplace(correlation, gpu);
}

void CuptiEventConverter::forget_old() {
  std::int64_t oldest = batch_ - options_.keep_batches;
  auto prune = [oldest](auto& m, auto batch_of) {
    for (auto it = m.begin(); it != m.end();) {
      it = batch_of(it->second) < oldest ? m.erase(it) : std::next(it);
    }
  };
  prune(runtime_calls_, [](const HostEnd& h) { return h.batch; });
  prune(driver_calls_, [](const HostEnd& h) { return h.batch; });
  prune(waiting_gpu_, [](const GpuEnd& g) { return g.batch; });
  prune(external_, [](const std::pair<std::uint64_t, std::int64_t>& e) { return e.second; });
}

std::vector<trace::Event> CuptiEventConverter::convert(const CuptiRecords& batch) {
  ++batch_;
  std::vector<trace::Event> out;
  out.reserve(batch.size() * 2);

  for (const auto& x : batch.external) {
    external_[x.correlation] = {x.external_id, batch_};
  }
  for (const auto& k : batch.kernels) context_device_[k.context] = k.device;
  for (const auto& m : batch.memcpys) context_device_[m.context] = m.device;
  for (const auto& m : batch.memsets) context_device_[m.context] = m.device;

  auto timed = [this](std::uint64_t start, std::uint64_t end) {
    if (untimed(start, end)) {
      ++stats_.untimed;
      return false;
    }
    if (end < start) {
      ++stats_.bad_time;
      return false;
    }
    return true;
  };

  // Runtime calls before driver calls, so a GPU activity links to the runtime call when both
  // exist (Kineto's choice).
  for (CuptiApiDomain domain : {CuptiApiDomain::kRuntime, CuptiApiDomain::kDriver}) {
    bool runtime = domain == CuptiApiDomain::kRuntime;
    auto& calls = runtime ? runtime_calls_ : driver_calls_;
    for (const auto& c : batch.api_calls) {
      if (c.domain != domain || !timed(c.start, c.end)) continue;
      std::int64_t pid = options_.host_pid >= 0 ? options_.host_pid : std::int64_t{c.process};
      trace::Event e{c.name,
                     runtime ? trace::cat::kCudaRuntime : trace::cat::kCudaDriver,
                     'X',
                     to_trace(c.start),
                     static_cast<std::int64_t>(c.end - c.start),
                     pid,
                     std::int64_t{c.thread}};
      e.add("cbid", std::int64_t{c.cbid}).add("correlation", std::int64_t{c.correlation});
      attribute(c.correlation, e, false);
      ++(runtime ? stats_.runtime_calls : stats_.driver_calls);
      HostEnd& host = calls[c.correlation];
      host = HostEnd{e.ts, e.pid, e.tid, false, batch_};
      out.push_back(std::move(e));
      auto [first, last] = waiting_gpu_.equal_range(c.correlation);
      for (auto it = first; it != last; ++it) emit_flow(c.correlation, host, it->second, out);
      waiting_gpu_.erase(first, last);
    }
  }

  // A GPU activity's event with its own args: its layer (from the call `attributed_to`), counted
  // in `count`, linked to its launch (`correlation`, else `fallback`).
  auto emit_gpu = [&](trace::Event& e, std::uint32_t correlation, std::uint32_t attributed_to,
                      std::uint32_t fallback, std::int64_t& count) {
    attribute(attributed_to, e, true);
    ++count;
    link(correlation, fallback, e, out);
    out.push_back(std::move(e));
  };

  for (const auto& k : batch.kernels) {
    if (!timed(k.start, k.end)) continue;
    trace::Event e = gpu_event(demangle(k.name), trace::cat::kKernel, k, to_trace(k.start));
    e.add("registers per thread", std::int64_t{k.registers_per_thread})
        .add("shared memory", k.shared_memory)
        .add("grid", dim3_text(k.grid))
        .add("block", dim3_text(k.block));
    emit_gpu(e, k.correlation, k.correlation, 0, stats_.kernels);
  }

  for (const auto& m : batch.memcpys) {
    if (!timed(m.start, m.end)) continue;
    std::string name = std::string("Memcpy ") + memcpy_kind_name(m.kind) + " (" +
                       memory_kind_name(m.src_kind) + " -> " + memory_kind_name(m.dst_kind) + ")";
    trace::Event e = gpu_event(std::move(name), trace::cat::kGpuMemcpy, m, to_trace(m.start));
    add_bytes(e, m.bytes);
    const bool own = external_.count(m.correlation) != 0 || m.runtime_correlation == 0;
    emit_gpu(e, m.correlation, own ? m.correlation : m.runtime_correlation, m.runtime_correlation,
             stats_.memcpys);
  }

  for (const auto& m : batch.memsets) {
    if (!timed(m.start, m.end)) continue;
    trace::Event e = gpu_event(std::string("Memset (") + memory_kind_name(m.memory_kind) + ")",
                               trace::cat::kGpuMemset, m, to_trace(m.start));
    add_bytes(e, m.bytes);
    emit_gpu(e, m.correlation, m.correlation, 0, stats_.memsets);
  }

  for (const auto& s : batch.syncs) {
    if (!timed(s.start, s.end)) continue;
    auto dev = context_device_.find(s.context);
    std::int64_t device = dev == context_device_.end() ? 0 : std::int64_t{dev->second};
    // CUPTI marks "no stream" with 0xffffffff; as int32 that is the -1 Kineto shows.
    auto stream = std::int64_t{static_cast<std::int32_t>(s.stream)};
    trace::Event e{sync_kind_name(s.kind),
                   trace::cat::kCudaSync,
                   'X',
                   to_trace(s.start),
                   static_cast<std::int64_t>(s.end - s.start),
                   device,
                   stream};
    e.add("cuda_sync_kind", std::string(sync_kind_name(s.kind)));
    if (s.kind == CuptiSyncKind::kEventSynchronize || s.kind == CuptiSyncKind::kStreamWaitEvent) {
      e.add("wait_on_cuda_event_id", std::int64_t{static_cast<std::int32_t>(s.cuda_event)});
    }
    e.add("stream", stream)
        .add("correlation", std::int64_t{s.correlation})
        .add("device", device)
        .add("context", std::int64_t{s.context});
    attribute(s.correlation, e, false);
    ++stats_.syncs;
    out.push_back(std::move(e));
  }

  forget_old();
  std::stable_sort(out.begin(), out.end(),
                   [](const trace::Event& a, const trace::Event& b) { return a.ts < b.ts; });
  return out;
}

}  // namespace dagsgd::runtime
