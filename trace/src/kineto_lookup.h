// What the Kineto DAG builder (trace_dag_kineto.cc) looks up per event: the labeled spans
// enclosing an instant on a thread, and the runtime call that carries a correlation id. Private
// to trace/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/units.h"
#include "dagsgd/trace/event.h"
#include "open_table.h"

namespace dagsgd::trace::detail {

using model::Nanos;

struct Labeled {
  Nanos start, end;
  Phase phase;
};

// How far back from an instant the search for an enclosing span looks: ops nest, so the nearest
// enclosing one starts at most a few hundred spans back.
constexpr std::size_t kLookBack = 256;

// One thread's labeled spans by start, and per position k the latest end among the kLookBack
// spans before it: whether any of them encloses an instant is one comparison (host gaps mostly
// lie outside every op, where walking back the whole way was a fifth of building the DAG).
struct Spans {
  std::vector<Labeled> list;
  std::vector<Nanos> reach;  // reach[k]: max end of list[max(0, k - kLookBack) .. k - 1]

  void seal() {
    reach.assign(list.size() + 1, INT64_MIN);
    // A sliding-window maximum: the deque holds positions of decreasing ends.
    std::vector<std::size_t> window(list.size());
    std::size_t head = 0;
    std::size_t tail = 0;
    for (std::size_t k = 1; k <= list.size(); ++k) {
      const std::size_t added = k - 1;
      while (tail > head && list[window[tail - 1]].end <= list[added].end) --tail;
      window[tail++] = added;
      if (window[head] + kLookBack < k) ++head;
      reach[k] = list[window[head]].end;
    }
  }
  // The number of spans that start at or before t.
  std::size_t started_by(Nanos t) const {
    auto it = std::upper_bound(list.begin(), list.end(), t,
                               [](Nanos x, const Labeled& l) { return x < l.start; });
    return static_cast<std::size_t>(it - list.begin());
  }
};

// A cursor over one thread's Spans for instants asked in time order (its gaps and calls, one
// after another): the count of spans started by then walks on from the last answer instead of
// searching the whole list (the searches missed the cache at every step), and is searched for
// when the instant is earlier or far ahead.
class SpanCursor {
 public:
  explicit SpanCursor(const Spans& spans) : spans_(spans) {}
  const Spans& spans() const { return spans_; }
  std::size_t started_by(Nanos t) {
    const auto& l = spans_.list;
    if (k_ > 0 && l[k_ - 1].start > t) return k_ = spans_.started_by(t);
    for (int steps = 0; k_ < l.size() && l[k_].start <= t; ++steps) {
      if (steps == 32) return k_ = spans_.started_by(t);
      ++k_;
    }
    return k_;
  }

 private:
  const Spans& spans_;
  std::size_t k_ = 0;  // started_by() of the last instant asked
};

// Innermost labeled interval containing t on one thread (the nearest of the kLookBack spans
// before t that still runs at t); `k`: the spans that start at or before t.
inline Phase phase_at(const Spans& v, Nanos t, std::size_t k) {
  if (v.reach[k] <= t) return Phase::kNone;
  for (std::size_t i = k; i > 0 && k - i < kLookBack; --i) {
    const Labeled& l = v.list[i - 1];
    if (l.start <= t && t < l.end) return l.phase;
  }
  return Phase::kNone;
}

inline Phase phase_at(SpanCursor& c, Nanos t) { return phase_at(c.spans(), t, c.started_by(t)); }

// Whether t lies inside one of the kLookBack spans that start before it.
inline bool inside(SpanCursor& c, Nanos t) { return c.spans().reach[c.started_by(t)] > t; }

// A std::map's operator[] for keys that mostly repeat the last one asked (a trace's events
// come thread by thread in runs): that entry is remembered, as a map's entries stay put.
template <typename Map>
class LastEntry {
 public:
  explicit LastEntry(Map& map) : map_(map) {}
  typename Map::mapped_type& operator[](const typename Map::key_type& key) {
    if (entry_ == nullptr || key != key_) {
      entry_ = &map_[key];
      key_ = key;
    }
    return *entry_;
  }

 private:
  Map& map_;
  typename Map::key_type key_{};
  typename Map::mapped_type* entry_ = nullptr;
};

// The runtime call that carries a correlation id: its task and event (the last call with the
// id wins).
struct CorrelatedCall {
  model::TaskId task = model::kNoTask;
  std::size_t event = 0;
};
// A correlation id's slot hash: splitmix64 over all but the id's low bits, as FlowKeyHash does
// for flows: a runtime call and, soon after, its kernel look up ids that count up, so the ids of
// one block of kRun share a few cache lines instead of missing the cache once each (the lookup
// was half of build_host_threads' samples on the 313 MB run of docs/performance.md).
struct CorrelationHash {
  static constexpr std::uint64_t kRun = 16;
  std::uint64_t operator()(std::int64_t id) const {
    const auto u = static_cast<std::uint64_t>(id);
    return mix64(u / kRun) * kRun + u % kRun;
  }
};
// Correlation id -> its call, open-addressed: a std::unordered_map allocated, and later freed,
// a node per launch, and its lookups per kernel missed the cache twice.
using CorrelationTable = OpenTable<std::int64_t, CorrelatedCall, CorrelationHash, 4096>;

}  // namespace dagsgd::trace::detail
