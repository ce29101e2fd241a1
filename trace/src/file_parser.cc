// One trace text's records into events (file_parser.h): each record classified
// (record_category.h), strings interned, problems counted per kind with the first offender, flows
// matched, clock corrections applied, and the events sorted; a large text read on two threads.
#include "file_parser.h"

#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "flow_table.h"
#include "kernel_choice.h"
#include "record_category.h"

namespace dagsgd::trace {

namespace {

using detail::dtype_size;
using detail::EventSink;
using detail::FlowKey;
using detail::FlowTable;
using detail::ignorable_category;
using detail::InfoField;
using detail::Kernel;
using detail::kMaxRanks;
using detail::kNotJson;
using detail::known_category;
using detail::kPartScratch;
using detail::RawEvent;
using detail::Stage1As;
using detail::WalkPart;
using detail::WalkResult;
using detail::WalkStatus;
using model::Nanos;

// FNV-1a over the grid's and the block's text without blanks, so that "[8, 1, 1]" and
// "[8,1,1]" agree; never 0 (0 means no shape recorded).
std::uint32_t launch_hash(std::string_view grid, std::string_view block) {
  std::uint32_t h = 2166136261u;
  for (std::string_view part : {grid, std::string_view("/"), block}) {
    for (char c : part) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
      h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    }
  }
  return h == 0 ? 1 : h;
}

// Asks for 2 MiB pages under the event table (as read_file does under the text): fewer page
// faults as it fills. Advice only.
void advise_huge_pages(void* data, std::size_t bytes) {
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(kHuge - 1);
  if (last > first) {
    ::madvise(static_cast<char*>(data) + (first - begin), last - first, MADV_HUGEPAGE);
  }
}

// The order of the event table: by start, the longer first, then as read (lambdas: sorts inline).
constexpr auto event_before = [](const ImportedEvent& a, const ImportedEvent& b) {
  if (a.ts != b.ts) return a.ts < b.ts;
  return a.dur > b.dur;
};

// What the sort moves instead of events; the index keeps equal events in file order (stable).
struct SortKey {
  Nanos ts;
  Nanos dur;
  std::size_t index;
};

constexpr auto key_less = [](const SortKey& a, const SortKey& b) {
  if (a.ts != b.ts) return a.ts < b.ts;
  if (a.dur != b.dur) return a.dur > b.dur;
  return a.index < b.index;
};

// The order of `events` as sorted keys; none when they are in order already.
std::vector<SortKey> part_order(const std::vector<ImportedEvent>& events) {
  if (std::is_sorted(events.begin(), events.end(), event_before)) return {};
  std::vector<SortKey> keys;
  keys.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    keys.push_back(SortKey{events[i].ts, events[i].dur, i});
  }
  std::sort(keys.begin(), keys.end(), key_less);
  return keys;
}

// `size` events of `table` in order: through `keys`, or as they lie when `keys` is null.
struct OrderRun {
  const SortKey* keys = nullptr;
  const ImportedEvent* table = nullptr;
  std::size_t size = 0;
  const ImportedEvent* at(std::size_t i) const {
    return table + (keys != nullptr ? keys[i].index : i);
  }
  // The i-th event's start and duration, from the keys (read in order) where there are keys.
  Nanos ts(std::size_t i) const { return keys != nullptr ? keys[i].ts : table[i].ts; }
  Nanos dur(std::size_t i) const { return keys != nullptr ? keys[i].dur : table[i].dur; }
};

// The events of two runs in one order, the first run's first among equals (its events come
// first in the file): the order one sort of all the keys gives.
class MergedOrder {
 public:
  MergedOrder(const OrderRun& a, const OrderRun& b) : a_(a), b_(b) {}
  const ImportedEvent* next() {
    if (j_ < b_.size && (i_ == a_.size || second_first())) return b_.at(j_++);
    return a_.at(i_++);
  }

 private:
  bool second_first() const {
    const Nanos a = a_.ts(i_);
    const Nanos b = b_.ts(j_);
    if (a != b) return b < a;
    return b_.dur(j_) > a_.dur(i_);
  }
  OrderRun a_;
  OrderRun b_;
  std::size_t i_ = 0;
  std::size_t j_ = 0;
};

class FileParser final : public EventSink {
 public:
  FileParser(ImportedRank& rank, FileReport& report)
      : rank_(rank), report_(report), fresh_rank_(rank), fresh_report_(report) {}

  // Returns an error only when the text is not a trace; a break inside traceEvents is returned
  // through `failed_inside` for the caller to repair. `split`: read the text in two parts at
  // once, the second from that ',' on (0: in one walk).
  model::Expected<void> parse(model::FileText& text, const std::string& where, const Kernel& kernel,
                              std::size_t window, std::size_t split, bool& events_seen,
                              bool& failed_inside) {
    where_ = &where;
    // Room for one complete event per 160 bytes (Kineto's take ~350): the table is not copied as
    // it grows, and the part never written is never touched.
    rank_.events.reserve(text.size() / 160);
    advise_huge_pages(rank_.events.data(), rank_.events.capacity() * sizeof(ImportedEvent));
    WalkResult r;
    {
      const Stage1As stage1(kernel.name);
      r = split != 0 ? walk_split(text, kernel, window, split)
                     : kernel.walk(text.data(), text.size(), text.capacity(), *this, window, {});
    }
    events_seen = r.events_seen;
    failed_inside = r.failed_inside;
    switch (r.status) {
      case WalkStatus::kOk:
        break;
      case WalkStatus::kNotJson:
        return model::Error{where + kNotJson};
      case WalkStatus::kNotObject:
        return model::Error{where + ": not a trace (the top level is not a JSON object)"};
      case WalkStatus::kEventsNotArray:
        return model::Error{where + ": not a trace ('traceEvents' is not an array)"};
      case WalkStatus::kTrailing:
        return model::Error{where + detail::kTrailingJson};
      case WalkStatus::kStopped:
        return model::Error{stop_};
    }
    if (!events_seen) {
      if (failed_inside) return model::Error{where + kNotJson};
      return model::Error{where + ": not a trace (no 'traceEvents' array)"};
    }
    return model::ok();
  }

  // The text in two parts, the second on another thread into a parser of its own, then taken
  // in (absorb). Whenever that cannot give what one walk gives (either part unusual, the second
  // with a counted problem, whose message numbers the events), this parser reads what is left
  // itself, or the whole text again: the result never depends on the split.
  WalkResult walk_split(model::FileText& text, const Kernel& kernel, std::size_t window,
                        std::size_t split) {
    char* const t = text.data();
    const std::size_t n = text.size();
    const std::size_t cap = text.capacity();
    const auto scratch = std::make_unique_for_overwrite<char[]>(kPartScratch);
    const WalkPart second_part{split, true, scratch.get()};
    ImportedRank rank2 = fresh_rank_;
    FileReport report2 = fresh_report_;
    rank2.events.reserve((n - split) / 160);
    advise_huge_pages(rank2.events.data(), rank2.events.capacity() * sizeof(ImportedEvent));
    FileParser second(rank2, report2);
    second.where_ = where_;
    WalkResult r2;
    // Each part's events in order, sorted on its own thread (finish merges them).
    std::vector<SortKey> keys1;
    std::vector<SortKey> keys2;
    bool second_ran = false;
    WalkResult r;
    try {
      std::thread other([&] {
        try {
          r2 = kernel.walk(t, n, cap, second, window, second_part);
          if (r2.part_read) keys2 = part_order(rank2.events);
        } catch (...) {
          r2 = WalkResult{};  // (part_read false: read again here)
        }
      });
      second_ran = true;
      try {
        r = kernel.walk(t, n, cap, *this, window, WalkPart{split, false, nullptr});
        if (r.part_read) keys1 = part_order(rank_.events);
      } catch (...) {
        other.join();
        throw;
      }
      other.join();
    } catch (const std::system_error&) {
      // No thread to be had: one walk.
      if (second_ran) throw;
      reset();
      return kernel.walk(t, n, cap, *this, window, {});
    }
    if (!r.part_read) {
      // The first part was unusual, or traceEvents ended before the split.
      reset();
      return kernel.walk(t, n, cap, *this, window, {});
    }
    if (r2.part_read && absorb(second)) {
      part_keys_[0] = std::move(keys1);
      part_keys_[1] = std::move(keys2);
      return r;
    }
    r2 = kernel.walk(t, n, cap, *this, window, second_part);
    if (r2.part_read) return r;
    reset();
    return kernel.walk(t, n, cap, *this, window, {});
  }

  // Takes in what `o` read after this parser's part, as if this parser had read on: false
  // (nothing taken) when `o` counted a problem or stopped.
  bool absorb(FileParser& o) {
    if (!o.report_.problems.empty() || !o.stop_.empty()) return false;
    std::vector<std::int32_t> ids(o.rank_.strings.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = intern(o.rank_.strings[i]);
    auto id = [&](std::int32_t s) { return s >= 0 ? ids[static_cast<std::size_t>(s)] : s; };
    // The second part's events stay in their table until finish() gathers both (or appends it).
    for (ImportedEvent& e : o.rank_.events) {
      e.name = id(e.name);
      e.collective = id(e.collective);
      if (e.detail >= 0) e.detail += static_cast<std::int32_t>(rank_.details.size());
    }
    for (EventDetail& d : o.rank_.details) {
      d.algorithm = id(d.algorithm);
      d.group_ranks = id(d.group_ranks);
      rank_.details.push_back(d);
    }
    second_events_ = std::move(o.rank_.events);
    o.flows_.each([&](const FlowKey& key, const std::pair<int, int>& se) {
      auto& slot =
          flows_[FlowKey{flow_category(*o.flow_cats_[static_cast<std::size_t>(key.cat)]), key.id}];
      slot.first += se.first;
      slot.second += se.second;
    });
    report_.events += o.report_.events;
    report_.complete_events += o.report_.complete_events;
    report_.metadata += o.report_.metadata;
    for (std::size_t c = 0; c < report_.by_category.size(); ++c) {
      report_.by_category[c] += o.report_.by_category[c];
    }
    for (auto& [tid, name] : o.rank_.thread_names) rank_.thread_names[tid] = std::move(name);
    if (rank_.cpu_pid == 0) rank_.cpu_pid = o.rank_.cpu_pid;
    rank_.dagsgd_rank_info = rank_.dagsgd_rank_info || o.rank_.dagsgd_rank_info;
    if (o.drift_.has_drift) drift_ = o.drift_;
    if (o.rank_set_) rank_.rank = o.rank_.rank;
    if (o.world_size_set_) {
      rank_.world_size = o.rank_.world_size;
      rank_.world_size_stated = true;
    }
    if (o.backend_set_) rank_.backend = std::move(o.rank_.backend);
    if (o.run_id_set_) rank_.run_id = std::move(o.rank_.run_id);
    if (o.base_set_) base_ns_ = o.base_ns_;
    return true;
  }

  // `scratch`: `scratch_bytes` of no further use (the file's text, read cleanly), or null.
  void finish(char* scratch, std::size_t scratch_bytes);

  // The second part's events after the first's, as one walk would have left them.
  void append_second() {
    rank_.events.insert(rank_.events.end(), second_events_.begin(), second_events_.end());
    std::vector<ImportedEvent>().swap(second_events_);
  }

  void event(const RawEvent& e) override { add_event(e); }

  void not_an_object(const char* type) override {
    ++report_.events;
    problem("not an event object",
            "traceEvents[" + std::to_string(report_.events - 1) + "] is a JSON " + type);
  }

  bool info_int(InfoField f, std::int64_t x) override {
    if (f == InfoField::kRank) {
      if (x < 0 || x >= kMaxRanks) {
        stop_ = *where_ + ": 'distributedInfo.rank' is " + std::to_string(x) +
                ": out of range (0 to " + std::to_string(kMaxRanks - 1) + ")";
        return false;
      }
      rank_.rank = static_cast<int>(x);
      rank_set_ = true;
    } else if (f == InfoField::kWorldSize) {
      if (x < 1 || x > kMaxRanks) {
        stop_ = *where_ + ": 'distributedInfo.world_size' is " + std::to_string(x) +
                ": out of range (1 to " + std::to_string(kMaxRanks) + ")";
        return false;
      }
      rank_.world_size = static_cast<int>(x);
      rank_.world_size_stated = true;
      world_size_set_ = true;
    }
    return true;
  }

  void info_not_int(InfoField f, std::string_view token) override {
    // The token as written, at most 40 bytes of it (it may be a long string).
    const std::string shown(token.substr(0, 40));
    stop_ = *where_ + ": 'distributedInfo." + (f == InfoField::kRank ? "rank" : "world_size") +
            "' is " + shown + ": not a whole number from " +
            (f == InfoField::kRank ? "0 to " + std::to_string(kMaxRanks - 1)
                                   : "1 to " + std::to_string(kMaxRanks));
  }

  void info_string(InfoField f, std::string_view s) override {
    if (f == InfoField::kBackend) {
      rank_.backend = std::string(s);
      backend_set_ = true;
    }
    if (f == InfoField::kRunId) {
      rank_.run_id = std::string(s);
      run_id_set_ = true;
    }
  }

  void base_time(std::int64_t ns) override {
    base_ns_ = ns;
    base_set_ = true;
  }

  void reset() override {
    rank_ = fresh_rank_;
    report_ = fresh_report_;
    stop_.clear();
    interned_.clear();
    recent_.fill(Recent{});  // (it views keys_)
    keys_.clear();
    flow_cat_ids_.clear();
    flow_cats_.clear();
    last_flow_cat_ = -1;
    flows_.clear();
    part_keys_[0].clear();
    part_keys_[1].clear();
    std::vector<ImportedEvent>().swap(second_events_);
    drift_ = RawEvent{};
    base_ns_ = 0;
    rank_set_ = world_size_set_ = backend_set_ = run_id_set_ = base_set_ = false;
  }

 private:
  void problem(const std::string& kind, const std::string& first) {
    report_.count_problem(kind, first);
  }

  // `n` more of a kind already counted.
  void problem_count(const std::string& kind, std::int64_t n) {
    for (auto& p : report_.problems) {
      if (p.kind == kind) p.count += n;
    }
  }

  std::int32_t flow_category(std::string_view c) {
    // Kineto's flows alternate between two categories (ac2g, fwdbwd): the last one first.
    if (last_flow_cat_ >= 0 && c == *flow_cats_[static_cast<std::size_t>(last_flow_cat_)]) {
      return last_flow_cat_;
    }
    auto it = flow_cat_ids_.find(c);
    if (it != flow_cat_ids_.end()) return last_flow_cat_ = it->second;
    auto id = static_cast<std::int32_t>(flow_cats_.size());
    flow_cats_.push_back(std::make_unique<std::string>(c));
    flow_cat_ids_.emplace(std::string_view(*flow_cats_.back()), id);
    return last_flow_cat_ = id;
  }

  // The order of std::map<pair<std::string, id>>: category text, then id.
  bool flow_before(const FlowKey& a, const FlowKey& b) const {
    const std::string& ca = *flow_cats_[static_cast<std::size_t>(a.cat)];
    const std::string& cb = *flow_cats_[static_cast<std::size_t>(b.cat)];
    if (ca != cb) return ca < cb;
    return a.id < b.id;
  }

  std::string where_event(const RawEvent& e) const {
    std::string name(e.name.substr(0, 80));
    return "event " + std::to_string(report_.events - 1) + " ('" + name + "')";
  }

  // A number as written, cut short for messages.
  static std::string token(std::string_view t) {
    while (!t.empty() && (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' ||
                          t.back() == '\t' || t.back() == ',')) {
      t.remove_suffix(1);
    }
    return std::string(t.substr(0, 40)) + (t.size() > 40 ? "..." : "");
  }

  // A slot of the cache in front of interned_, from the length and the first and last 8 bytes:
  // Kineto repeats a few thousand names hundreds of times each, and std::hash reads all of a name
  // (kernel names run to hundreds of bytes) before the table divides by a prime.
  static std::size_t recent_slot(std::string_view s) {
    std::uint64_t head = 0;
    std::uint64_t tail = 0;
    const std::size_t n = s.size();
    if (n >= 8) {
      std::memcpy(&head, s.data(), 8);
      std::memcpy(&tail, s.data() + n - 8, 8);
    } else if (n > 0) {
      std::memcpy(&head, s.data(), n);
    }
    const std::uint64_t h = head * 0x9E3779B97F4A7C15ull ^ (tail + n) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<std::size_t>(h >> 54) % kRecentSlots;
  }

  std::int32_t intern(std::string_view s) {
    // Ids come from interned_ (first seen, first numbered); the cache only remembers them.
    Recent& r = recent_[recent_slot(s)];
    if (r.id >= 0 && r.text == s) return r.id;
    auto it = interned_.find(s);
    if (it != interned_.end()) {
      r = Recent{it->first, it->second};
      return it->second;
    }
    auto id = static_cast<std::int32_t>(rank_.strings.size());
    rank_.strings.emplace_back(s);
    // Keys view the stored strings; a deque would keep them stable, but strings never move
    // their heap buffer on vector growth except short ones (SSO), so keep an owned copy.
    keys_.push_back(std::make_unique<std::string>(s));
    interned_.emplace(std::string_view(*keys_.back()), id);
    r = Recent{std::string_view(*keys_.back()), id};
    return id;
  }

  void add_event(const RawEvent& e) {
    ++report_.events;
    char ph = e.ph.empty() ? '?' : e.ph[0];
    if (ph == 'M') {
      ++report_.metadata;
      if (e.name == "thread_name" && !e.arg_name.empty()) {
        rank_.thread_names[e.tid] = std::string(e.arg_name);
      } else if (e.name == "dagsgd_clock_sync" && e.has_drift && e.drift_t1 != e.drift_t0) {
        drift_ = e;
      } else if (e.name == "dagsgd_rank_info") {
        rank_.dagsgd_rank_info = true;
        if (e.world_size <= 0) return;
        rank_.world_size = static_cast<int>(e.world_size);
        rank_.world_size_stated = true;
        world_size_set_ = true;
      }
      return;
    }
    if (ph == 's' || ph == 'f' || ph == 't') {
      auto& slot = flows_[FlowKey{flow_category(e.cat), e.id}];
      if (ph == 's') {
        ++slot.first;
      } else {
        ++slot.second;
      }
      return;
    }
    if (ph != 'X') return;  // instants, counters, async spans: nothing for the DAG
    ++report_.complete_events;
    if (!e.has_ts || e.bad_ts) {
      problem("bad or missing ts", where_event(e));
      return;
    }
    if (e.ts_out_of_range) {
      problem("ts out of range",
              where_event(e) + ": ts " + token(e.ts_token) + " us (|ts| must be at most 3e15 us)");
      return;
    }
    if (e.bad_dur) {
      problem("bad dur", where_event(e));
      return;
    }
    if (!e.has_dur) {
      // Chrome's format requires dur on X events; the event is kept as an instant.
      problem("missing dur", where_event(e));
    }
    if (e.dur_out_of_range || e.dur >= model::kMaxDuration) {
      problem("dur out of range",
              where_event(e) + ": dur " + token(e.dur_token) + " us (must be below 1e12 us)");
      return;
    }
    if (e.dur < 0) {
      problem("negative duration", where_event(e) + ": dur " + std::to_string(e.dur) + " ns");
      return;
    }
    if (e.bad_args) {
      problem("bad args value",
              where_event(e) + ": args '" + std::string(e.bad_arg) + "' is out of range");
      return;
    }
    auto c = known_category(e.cat, e.name);
    if (!c) {
      if (!ignorable_category(e.cat)) {
        problem("unknown category", where_event(e) + ": cat '" + std::string(e.cat) + "'");
      }
      return;
    }
    ImportedEvent out;
    out.category = *c;
    report_.by_category[static_cast<std::size_t>(*c)]++;
    out.ts = e.ts;
    out.dur = e.dur;
    out.gpu = *c == EventCategory::kKernel || *c == EventCategory::kMemcpy ||
              *c == EventCategory::kMemset || *c == EventCategory::kSync ||
              *c == EventCategory::kGpuAnnotation;
    out.tid = out.gpu && e.stream >= 0 ? e.stream : e.tid;
    if (!out.gpu && e.pid_numeric && rank_.cpu_pid == 0) rank_.cpu_pid = e.pid;
    out.correlation = e.correlation;
    out.name = intern(e.name);
    if (!e.collective.empty()) out.collective = intern(e.collective);
    // The rarer fields (interned in the order they always were), stored when one is set.
    EventDetail d;
    if (!e.algorithm.empty()) d.algorithm = intern(e.algorithm);
    out.bytes = e.bytes;
    if (e.nelems >= 0 || e.out_nelems >= 0) {
      const int sz = dtype_size(e.dtype) > 0 ? dtype_size(e.dtype) : 4;
      if (e.nelems >= 0) out.bytes = e.nelems * sz;
      if (e.out_nelems >= 0) d.out_bytes = e.out_nelems * sz;
    }
    if (!e.group_ranks.empty()) d.group_ranks = intern(e.group_ranks);
    d.wait_on_corr = e.wait_corr;
    d.wait_on_stream = e.wait_stream >= 0 ? static_cast<std::int32_t>(e.wait_stream) : -1;
    if (d.algorithm >= 0 || d.out_bytes != -1 || d.group_ranks >= 0 || d.wait_on_corr != -1 ||
        d.wait_on_stream >= 0) {
      out.detail = static_cast<std::int32_t>(rank_.details.size());
      rank_.details.push_back(d);
    }
    out.layer = static_cast<std::int32_t>(e.layer);
    out.iteration = static_cast<std::int32_t>(e.iteration);
    out.bucket = static_cast<std::int32_t>(e.bucket);
    out.group_size = static_cast<std::int32_t>(e.group_size);
    out.device = static_cast<std::int32_t>(e.device);
    if (!e.grid.empty() || !e.block.empty()) out.launch = launch_hash(e.grid, e.block);
    out.phase = e.phase.empty() ? Phase::kNone : phase_from_name(std::string(e.phase));
    rank_.events.push_back(out);
  }

  ImportedRank& rank_;
  FileReport& report_;
  const ImportedRank fresh_rank_;  // what reset() goes back to
  const FileReport fresh_report_;
  const std::string* where_ = nullptr;
  std::string stop_;  // why the walk was stopped (kStopped)
  std::unordered_map<std::string_view, std::int32_t> interned_;
  // Views of keys_' strings (id -1: empty).
  struct Recent {
    std::string_view text;
    std::int32_t id = -1;
  };
  static constexpr std::size_t kRecentSlots = 1024;
  std::array<Recent, kRecentSlots> recent_{};
  std::vector<std::unique_ptr<std::string>> keys_;
  std::unordered_map<std::string_view, std::int32_t> flow_cat_ids_;
  std::vector<std::unique_ptr<std::string>> flow_cats_;
  std::int32_t last_flow_cat_ = -1;  // the last flow's category
  FlowTable flows_;
  // A text read in two parts: the second part's events (absorb), and the order of each part's
  // events (part_order; none when in order).
  std::vector<ImportedEvent> second_events_;
  std::vector<SortKey> part_keys_[2];
  RawEvent drift_;
  std::int64_t base_ns_ = 0;
  // Set by the text (what absorb() takes from a second part).
  bool rank_set_ = false, world_size_set_ = false, backend_set_ = false, run_id_set_ = false;
  bool base_set_ = false;
};

void FileParser::finish(char* scratch, std::size_t scratch_bytes) {
  // Counts do not depend on the order; the message names the smallest (category, id), as an
  // ordered walk would.
  std::optional<FlowKey> first_unmatched;
  std::int64_t unmatched = 0;
  flows_.each([&](const FlowKey& key, const std::pair<int, int>& se) {
    report_.flows_matched += std::min(se.first, se.second);
    if (se.first == 0) {
      // Kineto ends a flow on runtime calls that launched nothing (cudaEventRecord, ...), with
      // no start: its convention, not a defect.
      ++report_.flows_end_only;
    } else if (se.second == 0) {
      report_.flows_unmatched += se.first;
      unmatched += se.first;
      if (!first_unmatched || flow_before(key, *first_unmatched)) first_unmatched = key;
    }
  });
  if (first_unmatched) {
    problem("unmatched flow", "flow '" +
                                  *flow_cats_[static_cast<std::size_t>(first_unmatched->cat)] +
                                  "' id " + std::to_string(first_unmatched->id) +
                                  " starts but never ends (its GPU work is not in the trace)");
    problem_count("unmatched flow", unmatched - 1);
  }
  // The drift correction moves times: the parts' orders no longer hold.
  if (drift_.has_drift) append_second();
  if (drift_.has_drift) {
    // docs/tracing.md: T' = T + c (T - t0) / (t1 - t0), on the trace's own axis (ts relative to
    // baseTimeNanoseconds). In double, and applied only when every corrected time stays in range:
    // the record's numbers come from the file.
    const double t0 = static_cast<double>(drift_.drift_t0);
    const double span = static_cast<double>(drift_.drift_t1) - t0;
    const double c = static_cast<double>(drift_.drift_c);
    const auto max_ts = static_cast<double>(model::kMaxTimestamp);
    auto map = [&](Nanos t) {
      const double td = static_cast<double>(t);
      return td + c * (td - t0) / span;
    };
    std::vector<std::pair<Nanos, Nanos>> corrected;
    corrected.reserve(rank_.events.size());
    bool sane = std::abs(t0) <= max_ts && std::abs(span) <= 2 * max_ts &&
                std::abs(c) < static_cast<double>(model::kMaxDuration);
    for (std::size_t i = 0; sane && i < rank_.events.size(); ++i) {
      const auto& e = rank_.events[i];
      const double s = map(e.ts);
      const double f = map(e.ts + e.dur);
      sane = std::abs(s) <= max_ts && std::abs(f) <= max_ts &&
             f - s < static_cast<double>(model::kMaxDuration);
      if (sane) {
        const Nanos si = std::llround(s);
        corrected.emplace_back(si, std::max<Nanos>(0, std::llround(f) - si));
      }
    }
    if (sane) {
      for (std::size_t i = 0; i < rank_.events.size(); ++i) {
        rank_.events[i].ts = corrected[i].first;
        rank_.events[i].dur = corrected[i].second;
      }
      report_.drift_corrected = true;
    } else {
      problem("bad clock-drift record", "dagsgd_clock_sync (t0 " + std::to_string(drift_.drift_t0) +
                                            ", t1 " + std::to_string(drift_.drift_t1) +
                                            ", correction " + std::to_string(drift_.drift_c) +
                                            " ns) moves times out of range; not applied");
    }
  }
  // Our writer's traces arrive in order: no sort (and no copy of the table) for them. Others
  // are gathered once in the order of 24-byte keys: a text read in two parts has each part's
  // keys sorted on its own thread already (unless the drift correction moved the times since),
  // merged here as they are gathered.
  auto& events = rank_.events;
  const bool parts = !second_events_.empty();
  if (parts && part_keys_[0].empty() && part_keys_[1].empty() &&
      (events.empty() || !event_before(second_events_.front(), events.back()))) {
    append_second();  // both parts in order, and the second after the first
    return;
  }
  if (!parts && std::is_sorted(events.begin(), events.end(), event_before)) return;
  const std::size_t n = events.size() + second_events_.size();
  auto run = [](const std::vector<SortKey>& keys, const std::vector<ImportedEvent>& table) {
    return OrderRun{keys.empty() ? nullptr : keys.data(), table.data(), table.size()};
  };
  const OrderRun first = run(part_keys_[0], events);
  const OrderRun second = run(part_keys_[1], second_events_);
  // The gather reads the tables in key order, all over them (threads and streams interleave):
  // the events a few keys ahead are asked for early so that their cache misses overlap instead
  // of following one another.
  auto gather = [&](const OrderRun& a, const OrderRun& b, auto&& put) {
    constexpr std::size_t kAhead = 8;
    MergedOrder order(a, b);
    MergedOrder ahead(a, b);
    auto prefetch = [&] {
      const auto* e = reinterpret_cast<const char*>(ahead.next());
      __builtin_prefetch(e);
      __builtin_prefetch(e + 64);
      __builtin_prefetch(e + sizeof(ImportedEvent) - 1);
    };
    for (std::size_t i = 0; i < kAhead && i < n; ++i) prefetch();
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) prefetch();
      put(i, *order.next());
    }
  };
  auto all_keys = [&](SortKey* keys) {
    for (std::size_t i = 0; i < n; ++i) new (keys + i) SortKey{events[i].ts, events[i].dur, i};
    std::sort(keys, keys + n, key_less);
  };
  // In the text's buffer when it is large enough (a Kineto trace takes ~350 bytes per kept event,
  // the keys and the gathered copy 136): new tables are fresh pages, which the kernel zeroes and
  // later unmaps, and that was most of this step's time on the 313 MB trace. The peak memory is
  // then the walk's (text and table) and no more.
  static_assert(std::is_trivially_copyable_v<SortKey> &&
                std::is_trivially_copyable_v<ImportedEvent>);
  static_assert(sizeof(SortKey) % alignof(ImportedEvent) == 0 && sizeof(ImportedEvent) <= 80);
  if (scratch != nullptr && scratch_bytes / (sizeof(SortKey) + sizeof(ImportedEvent)) >= n &&
      reinterpret_cast<std::uintptr_t>(scratch) % alignof(SortKey) == 0) {
    auto* keys = reinterpret_cast<SortKey*>(scratch);
    char* out = scratch + n * sizeof(SortKey);
    auto put = [&](std::size_t i, const ImportedEvent& e) {
      std::memcpy(out + i * sizeof(ImportedEvent), &e, sizeof(ImportedEvent));
    };
    if (parts) {
      gather(first, second, put);
      // The second table goes before the first grows into new pages: the peak stays the walk's.
      std::vector<ImportedEvent>().swap(second_events_);
      events.resize(n);
    } else {
      all_keys(keys);
      gather(OrderRun{keys, events.data(), n}, OrderRun{}, put);
    }
    std::memcpy(static_cast<void*>(events.data()), out, n * sizeof(ImportedEvent));
    return;
  }
  // New tables get 2 MiB pages: faulting them in 4 KiB at a time took about a quarter of this
  // step (perf, 98 MB trace).
  std::vector<ImportedEvent> sorted;
  sorted.reserve(n);
  advise_huge_pages(sorted.data(), sorted.capacity() * sizeof(ImportedEvent));
  auto put = [&](std::size_t, const ImportedEvent& e) { sorted.push_back(e); };
  if (parts) {
    gather(first, second, put);
    std::vector<ImportedEvent>().swap(second_events_);
  } else {
    const auto keys = std::make_unique_for_overwrite<SortKey[]>(n);
    advise_huge_pages(keys.get(), n * sizeof(SortKey));
    all_keys(keys.get());
    gather(OrderRun{keys.get(), events.data(), n}, OrderRun{}, put);
  }
  events = std::move(sorted);
}

}  // namespace

namespace detail {

model::Expected<void> read_trace_events(model::FileText& text, const std::string& where,
                                        const Kernel& kernel, std::size_t window, std::size_t split,
                                        ImportedRank& rank, FileReport& report, bool& events_seen,
                                        bool& failed_inside) {
  FileParser parser(rank, report);
  DAGSGD_TRY(parser.parse(text, where, kernel, window, split, events_seen, failed_inside));
  // Read cleanly, the text is not needed again (a cut one is, for the repair): the sort may use
  // its buffer (not a mapped file's: each page written would be copied), then it is freed.
  parser.finish(failed_inside || text.mapped() ? nullptr : text.data(), text.size());
  if (!failed_inside) text.release();
  return model::ok();
}

}  // namespace detail

}  // namespace dagsgd::trace
