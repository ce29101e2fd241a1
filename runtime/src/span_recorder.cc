// Spans to Kineto-layout events: main-thread ops, collectives on lanes, device work on streams.
#include "span_recorder.h"

#include <algorithm>
#include <limits>
#include <string>
#include <variant>

#include "dagsgd/runtime/clock_sync.h"

namespace dagsgd::runtime {

namespace {

// --device cuda trace rows (docs/runtime.md): host threads making CUDA API calls, GPU streams.
constexpr std::int64_t kCudaApiTid = 90000;
constexpr std::int64_t kGpuStreamTid = 100000;

bool on_gpu(const trace::Event& e) {
  return e.cat == trace::cat::kKernel || e.cat == trace::cat::kGpuMemcpy ||
         e.cat == trace::cat::kGpuMemset || e.cat == trace::cat::kCudaSync ||
         (e.cat == trace::cat::kAc2g && e.ph == 'f');
}

}  // namespace

void SpanRecorder::begin_iteration(std::int64_t iteration) {
  iteration_ = iteration;
  t0_ = now_ns();
  cursor_ = t0_;
}

void SpanRecorder::mark(const char* name, trace::Phase phase, int layer, int group) {
  std::int64_t t = now_ns();
  if (enabled_)
    spans_.push_back(Span{name, Kind::kMain, phase, layer, group, iteration_, cursor_, t});
  cursor_ = t;
}

void SpanRecorder::comm(const char* collective, int layer, int group, std::int64_t start,
                        std::int64_t end) {
  if (enabled_) {
    spans_.push_back(
        Span{collective, Kind::kComm, trace::Phase::kComm, layer, group, iteration_, start, end});
  }
}

std::int64_t SpanRecorder::end_iteration() {
  if (enabled_) {
    spans_.push_back(
        Span{"ProfilerStep", Kind::kStep, trace::Phase::kNone, -1, -1, iteration_, t0_, cursor_});
  }
  return cursor_ - t0_;
}

model::Expected<void> SpanRecorder::open(const RankTraceConfig& config, GroupArgs group_args) {
  auto w = open_rank_trace(config);
  if (!w) return w.error();
  writer_ = std::move(*w);
  config_ = config;
  group_args_ = std::move(group_args);
  name_track(*writer_, config_.rank, 0, "main");
  writer_->flush();
  return model::ok();
}

int SpanRecorder::comm_lane(const Span& s) {
  std::size_t k = 0;
  while (k < lane_end_.size() && lane_end_[k] > s.start) ++k;
  if (k == lane_end_.size()) {
    lane_end_.push_back(0);
    name_track(*writer_, config_.rank, static_cast<std::int64_t>(k) + 1,
               "comm " + std::to_string(k));
  }
  lane_end_[k] = s.end;
  return static_cast<int>(k) + 1;
}

void SpanRecorder::fill(trace::Event& e, const Span& s) const {
  e.args.clear();
  e.ph = 'X';
  e.pid = config_.rank;
  e.ts = to_trace_ns(config_, s.start);
  e.dur = s.end - s.start;
  if (s.kind == Kind::kStep) {
    e.name = "ProfilerStep#" + std::to_string(s.iteration);
    e.cat = trace::cat::kUserAnnotation;
    e.tid = 0;
    e.add(trace::arg::kIteration, s.iteration);
    return;
  }
  e.name = s.name;
  e.cat = trace::cat::kCpuOp;
  e.tid = s.kind == Kind::kComm ? s.lane : 0;
  e.add(trace::arg::kPhase, std::string(trace::phase_name(s.phase)));
  e.add(trace::arg::kIteration, s.iteration);
  if (s.layer >= 0) e.add(trace::arg::kLayer, std::int64_t{s.layer});
  if (s.group >= 0 && group_args_) group_args_(e, s.group, s.kind == Kind::kComm);
  if (s.kind != Kind::kComm) return;
  const auto* collective = e.find(trace::arg::kCollective);
  const auto* name = collective ? std::get_if<std::string>(collective) : nullptr;
  trace::add_comm_args(e, name ? *name : s.name, config_.world_size);
}

void SpanRecorder::place_device_event(trace::Event& e) {
  e.ts = to_trace_ns(config_, e.ts);
  e.pid = config_.rank;
  if (on_gpu(e)) {
    std::int64_t stream = e.tid;
    e.tid = kGpuStreamTid + stream;
    if (stream_named_.insert(e.tid).second) {
      name_track(*writer_, config_.rank, e.tid, "gpu stream " + std::to_string(stream));
    }
    return;
  }
  auto [it, fresh] =
      api_tid_.emplace(e.tid, kCudaApiTid + static_cast<std::int64_t>(api_tid_.size()));
  if (fresh) {
    name_track(*writer_, config_.rank, it->second,
               "cuda api (thread " + std::to_string(it->first) + ")");
  }
  e.tid = it->second;
}

void SpanRecorder::add_device_events(std::vector<trace::Event> events) {
  if (!enabled_) return;
  device_.insert(device_.end(), std::make_move_iterator(events.begin()),
                 std::make_move_iterator(events.end()));
}

namespace {

// Time order, and the enclosing span first at equal start, so parents precede children.
bool before(std::int64_t ts_a, std::int64_t dur_a, std::int64_t ts_b, std::int64_t dur_b) {
  return ts_a != ts_b ? ts_a < ts_b : dur_a > dur_b;
}

}  // namespace

void SpanRecorder::write_device_events_before(std::size_t& next, std::int64_t ts,
                                              std::int64_t dur) {
  for (; next < device_.size() && before(device_[next].ts, device_[next].dur, ts, dur); ++next) {
    writer_->write(device_[next]);
  }
}

void SpanRecorder::commit() {
  recorded_ += static_cast<std::int64_t>(spans_.size());
  if (writer_) {
    // Lanes are taken in record order, which is start order among the comm spans.
    for (Span& s : spans_) {
      if (s.kind == Kind::kComm) s.lane = comm_lane(s);
    }
    std::stable_sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) {
      return before(a.start, a.end - a.start, b.start, b.end - b.start);
    });
    device_.erase(std::remove_if(device_.begin(), device_.end(),
                                 [](const trace::Event& e) { return e.ph == 'M'; }),
                  device_.end());
    for (auto& e : device_) place_device_event(e);
    std::stable_sort(device_.begin(), device_.end(),
                     [](const trace::Event& a, const trace::Event& b) {
                       return before(a.ts, a.dur, b.ts, b.dur);
                     });
    std::size_t next = 0;
    for (const Span& s : spans_) {
      fill(scratch_, s);
      write_device_events_before(next, scratch_.ts, scratch_.dur);
      writer_->write(scratch_);
    }
    write_device_events_before(next, std::numeric_limits<std::int64_t>::max(), 0);
    written_ += static_cast<std::int64_t>(spans_.size() + device_.size());
    writer_->flush();
  }
  spans_.clear();
  device_.clear();
}

model::Expected<void> SpanRecorder::close(const ClockSample& end) {
  if (!writer_) return model::ok();
  commit();
  writer_->write(clock_sync_event(config_, &end, "finish", written_, 0));
  auto rc = writer_->close();
  writer_.reset();
  return rc;
}

}  // namespace dagsgd::runtime
