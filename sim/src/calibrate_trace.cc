// A traced run's collectives as micro-benchmark series (calibrate_trace.h).
#include "dagsgd/sim/calibrate_trace.h"

#include <algorithm>
#include <map>

#include "dagsgd/sim/scenario.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;
using model::Nanos;

namespace {

struct Window {
  Nanos start = INT64_MAX;      // the first rank's issue
  Nanos end = INT64_MIN;        // the last rank's observed completion
  Nanos first_end = INT64_MAX;  // the first rank's observed completion
  Nanos last_arrive = INT64_MIN;
};

// Where a collective was in flight on any rank; start > end when no rank has its span.
Window in_flight(const trace::TraceCollective& c) {
  Window w;
  for (std::size_t r = 0; r < c.span_end.size(); ++r) {
    if (c.span_end[r] < 0) continue;
    w.start = std::min(w.start, c.span_start[r]);
    w.end = std::max(w.end, c.span_end[r]);
    w.first_end = std::min(w.first_end, c.span_end[r]);
    if (r < c.arrive.size()) w.last_arrive = std::max(w.last_arrive, c.arrive[r]);
  }
  return w;
}

bool is_series_candidate(const trace::TraceCollective& c) {
  return c.kind == trace::CollectiveKind::kAllreduce && c.bytes > 0 && c.joined && c.ranks >= 2 &&
         c.measured > 0;
}

}  // namespace

Expected<TraceSeries> trace_collective_series(const trace::TraceDag& td, const std::string& where) {
  TraceSeries out;
  std::vector<Window> windows;
  windows.reserve(td.collectives.size());
  for (const auto& c : td.collectives) windows.push_back(in_flight(c));
  // Durations by group size, then by message size.
  std::map<int, std::map<model::Bytes, std::vector<Nanos>>> by_ranks;
  for (std::size_t i = 0; i < td.collectives.size(); ++i) {
    const auto& c = td.collectives[i];
    if (!is_series_candidate(c)) {
      ++out.other;
      continue;
    }
    if (c.iteration >= 0 && c.iteration < td.warmup) {
      ++out.warmup;
      continue;
    }
    // Its service, from the last rank's arrival to the first observed completion, shared with
    // no other collective's time in flight.
    const Window& own = windows[i];
    const bool alone = std::none_of(windows.begin(), windows.end(), [&](const Window& w) {
      return &w != &own && w.start <= w.end && w.start < own.first_end && w.end > own.last_arrive;
    });
    if (!alone) {
      ++out.overlapped;
      continue;
    }
    by_ranks[c.ranks][c.bytes].push_back(c.measured);
    ++out.used;
  }
  for (auto& [ranks, sizes] : by_ranks) {
    BenchmarkLog log;
    log.path = where + " (" + std::to_string(ranks) + " ranks)";
    log.log.format = "trace";
    log.log.benchmark = "traced collectives of " + where;
    log.log.ranks = ranks;
    log.series.ranks = ranks;
    log.ranks_from = RanksFrom::kLog;
    for (auto& [bytes, times] : sizes) {
      // The median: a collective that a descheduled rank held up is an outlier, not the library.
      std::sort(times.begin(), times.end());
      const std::size_t n = times.size();
      const double median =
          n % 2 == 1
              ? static_cast<double>(times[n / 2])
              : (static_cast<double>(times[n / 2 - 1]) + static_cast<double>(times[n / 2])) / 2;
      log.log.points.push_back({bytes, median / 1e3, -1, 0});
      log.series.points.push_back({bytes, median});
    }
    if (log.series.points.size() >= 3) out.logs.push_back(std::move(log));
  }
  if (out.logs.empty()) {
    std::string sizes;
    for (const auto& [ranks, s] : by_ranks) {
      sizes += (sizes.empty() ? "" : ", ") + std::to_string(s.size()) + " at " +
               std::to_string(ranks) + " ranks";
    }
    return Error{"trace '" + where +
                 "': no group size has allreduces of 3 distinct sizes alone in flight after the "
                 "warm-up to calibrate from (sizes: " +
                 (sizes.empty() ? "none" : sizes) +
                 "; left out: " + std::to_string(out.overlapped) +
                 " overlapping another collective, " + std::to_string(out.warmup) +
                 " in warm-up iterations, " + std::to_string(out.other) +
                 " not an allreduce with a size joined on 2 or more ranks)"};
  }
  return out;
}

Expected<TraceSeries> read_trace_collectives(const std::string& run) {
  auto w = TracedWorkload::load({run}, trace::ImportOptions{});
  if (!w) return w.error();
  return trace_collective_series((*w)->dag(), run);
}

}  // namespace dagsgd::sim
