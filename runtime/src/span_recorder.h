// The training loop's timed spans: kept compact while an iteration runs, then turned into trace
// events and written to the rank trace when it is done (flushed, so a rank killed at any moment
// leaves every completed iteration on disk, see docs/runtime.md).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/runtime/rank_trace.h"
#include "dagsgd/trace/event.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::runtime {

class SpanRecorder {
 public:
  // Fills the trace arguments of a span that belongs to gradient group `group`.
  using GroupArgs = std::function<void(trace::Event& e, int group, bool comm)>;

  // A disabled recorder keeps only the cursor (the iteration's clock).
  explicit SpanRecorder(bool enabled) : enabled_(enabled) {}

  bool enabled() const { return enabled_; }
  // Starts iteration `iteration` now.
  void begin_iteration(std::int64_t iteration);
  // The end of the last span (local ns): where the next one starts.
  std::int64_t cursor() const { return cursor_; }
  // A main-thread span from the cursor to now.
  void mark(const char* name, trace::Phase phase, int layer = -1, int group = -1);
  // A collective from its issue to its observed completion (local ns).
  void comm(const char* collective, int layer, int group, std::int64_t start, std::int64_t end);
  // Ends the iteration at the cursor (its ProfilerStep span); returns its duration.
  std::int64_t end_iteration();
  // Writes what was recorded since the last commit and flushes it (keeps nothing when no trace
  // is open: the benchmark's in-memory mode).
  void commit();
  std::int64_t recorded() const { return recorded_; }

  // Streams from now on into the trace `config` names.
  model::Expected<void> open(const RankTraceConfig& config, GroupArgs group_args);
  // GPU streams' and CUDA API threads' events on this process's clock; written with the next
  // commit(), on their own tracks (docs/runtime.md, "--device cuda").
  void add_device_events(std::vector<trace::Event> events);
  // Writes the closing clock record (both samples) and closes the trace.
  model::Expected<void> close(const ClockSample& end);

 private:
  enum class Kind : std::uint8_t { kMain, kComm, kStep };
  struct Span {
    const char* name = "";
    Kind kind = Kind::kMain;
    trace::Phase phase = trace::Phase::kNone;
    int layer = -1;
    int group = -1;
    std::int64_t iteration = 0;
    std::int64_t start = 0;
    std::int64_t end = 0;
    int lane = 0;  // comm spans: the track they are drawn on (tid), from 1
  };

  // Fills `e` (reused, so writing allocates little) with span `s`.
  void fill(trace::Event& e, const Span& s) const;
  int comm_lane(const Span& s);
  void place_device_event(trace::Event& e);
  void write_device_events_before(std::size_t& next, std::int64_t ts, std::int64_t dur);

  bool enabled_ = false;
  std::int64_t iteration_ = 0;
  std::int64_t t0_ = 0;
  std::int64_t cursor_ = 0;
  std::int64_t recorded_ = 0;
  std::vector<Span> spans_;
  std::vector<trace::Event> device_;

  std::optional<trace::TraceWriter> writer_;
  RankTraceConfig config_;
  GroupArgs group_args_;
  std::int64_t written_ = 0;
  trace::Event scratch_;
  // Comm spans may overlap in time: each goes on the first lane (tids 1, 2, ...) free at its
  // start, so every track holds properly nested slices, as Perfetto requires.
  std::vector<std::int64_t> lane_end_;
  std::map<std::int64_t, std::int64_t> api_tid_;  // OS thread -> trace tid
  std::set<std::int64_t> stream_named_;           // trace tids of GPU streams named so far
};

}  // namespace dagsgd::runtime
