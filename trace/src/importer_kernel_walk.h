// The trace reader's one pass of simdjson On-Demand over a file, included by each
// importer_kernel_<name>.cc (only there: it defines that kernel's entry points): compiled with that
// kernel's instruction sets, simdjson's builtin implementation is that kernel, so the walk and its
// number and key matching use them too. Everything here lives in the kernel's own namespace and
// hands records to an EventSink, so no function compiled for a wider instruction set is shared with
// (or chosen by the linker for) the portable code.
#pragma once

#include <simdjson.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "importer_kernel.h"

#ifndef DAGSGD_KERNEL_NS
#error "define DAGSGD_KERNEL_NS (the kernel's namespace) before including importer_kernel_walk.h"
#endif

namespace dagsgd::trace::detail::DAGSGD_KERNEL_NS {

namespace od = simdjson::ondemand;
using model::Nanos;

enum class Parsed : std::uint8_t { kOk, kBad, kOutOfRange };

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// A token as raw_json_token gives it, without the whitespace (and comma) after it.
inline std::string_view trim_token(std::string_view t) {
  while (!t.empty() && (is_space(t.back()) || t.back() == ',')) t.remove_suffix(1);
  return t;
}

// Microseconds as written ("123.456", "-5", "1e3") to integer ns, exactly for plain decimals
// (a double would lose nanoseconds on absolute Kineto timestamps of 1.7e15 us). Values beyond
// +-kMaxTimestamp ns are kOutOfRange (and `out` is left alone). One pass over the digits; only
// a token that stops early is searched for an exponent.
inline Parsed parse_us(std::string_view tok, Nanos& out) {
  tok = trim_token(tok);
  if (tok.empty()) return Parsed::kBad;
  bool neg = false;
  std::size_t i = 0;
  if (tok[0] == '-') {
    neg = true;
    ++i;
  }
  // Digits past kMaxTimestamp / 1000 us need not be added up: the value is out of range.
  constexpr std::int64_t kMaxWholeUs = model::kMaxTimestamp / 1000;
  std::int64_t ip = 0;
  bool digits = false;
  bool too_big = false;
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
    if (!too_big) ip = ip * 10 + (tok[i] - '0');
    too_big = too_big || ip > kMaxWholeUs;
    digits = true;
  }
  std::int64_t frac = 0;
  int fd = 0;
  bool round_up = false;
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i) {
      if (fd < 3) {
        frac = frac * 10 + (tok[i] - '0');
        ++fd;
      } else if (fd == 3) {
        round_up = tok[i] >= '5';
        ++fd;
      }
      digits = true;
    }
  }
  if (i != tok.size() && tok.find_first_of("eE") != std::string_view::npos) {
    const std::string s(tok);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || std::isnan(v)) return Parsed::kBad;
    const double ns = v * 1000.0;
    if (!(std::abs(ns) <= static_cast<double>(model::kMaxTimestamp))) return Parsed::kOutOfRange;
    out = static_cast<Nanos>(std::llround(ns));
    return Parsed::kOk;
  }
  if (!digits || i != tok.size()) return Parsed::kBad;
  if (too_big) return Parsed::kOutOfRange;
  for (int k = std::min(fd, 3); k < 3; ++k) frac *= 10;
  const Nanos v = ip * 1000 + frac + (round_up ? 1 : 0);
  if (v > model::kMaxTimestamp) return Parsed::kOutOfRange;
  out = neg ? -v : v;
  return Parsed::kOk;
}

// Any JSON number (or numeric string) as int64; false for other types. The general path.
inline bool value_int_slow(od::value& v, std::int64_t& out) {
  od::json_type t;
  if (v.type().get(t)) return false;
  if (t == od::json_type::number) {
    od::number_type nt;
    if (v.get_number_type().get(nt)) return false;
    if (nt == od::number_type::floating_point_number) {
      double d = 0;
      if (v.get_double().get(d)) return false;
      // 2^63 and beyond (or NaN) do not fit: not an integer we can use.
      if (!(std::abs(d) < 9.2e18)) return false;
      out = static_cast<std::int64_t>(std::llround(d));
      return true;
    }
    if (nt == od::number_type::unsigned_integer) {
      std::uint64_t u = 0;
      if (v.get_uint64().get(u)) return false;
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
      out = static_cast<std::int64_t>(u);
      return true;
    }
    return !v.get_int64().get(out);
  }
  if (t == od::json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return false;
    const std::string str(s);
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(str.c_str(), &end, 10);
    if (str.empty() || end != str.c_str() + str.size() || errno == ERANGE) return false;
    out = x;
    return true;
  }
  return false;
}

// value_int_slow's answer, read straight from the text for plain integers of up to 17 digits
// (pids, tids, ids, args): what simdjson's get_int64 would give them.
inline bool value_int(od::value& v, std::int64_t& out) {
  const std::string_view tok = v.raw_json_token();
  std::size_t i = tok.empty() || tok[0] != '-' ? 0 : 1;
  const std::size_t first = i;
  std::int64_t x = 0;
  for (; i < tok.size() && i - first < 17 && tok[i] >= '0' && tok[i] <= '9'; ++i) {
    x = x * 10 + (tok[i] - '0');
  }
  const std::size_t n = i - first;
  // A leading zero before more digits is not JSON: the general path reports it.
  if (n > 0 && n < 17 && !(tok[first] == '0' && n > 1) && (i == tok.size() || is_space(tok[i]))) {
    out = first == 1 ? -x : x;
    return true;
  }
  return value_int_slow(v, out);
}

// A JSON string as it is in the text when it has no escapes (no copy), else unescaped into the
// parser's buffer; false for other types.
inline bool value_string(od::value& v, std::string_view& out) {
  std::string_view tok = v.raw_json_token();
  if (tok.empty() || tok[0] != '"') return false;
  while (is_space(tok.back())) tok.remove_suffix(1);
  if (tok.size() >= 2 && tok.back() == '"') {
    const std::string_view inner = tok.substr(1, tok.size() - 2);
    if (inner.find('\\') == std::string_view::npos) {
      out = inner;
      return true;
    }
  }
  return !v.get_string().get(out);
}

// A JSON array as written (Kineto's grid and block); false for other types.
inline bool value_array_text(od::value& v, std::string_view& out) {
  od::array a;
  return !v.get_array().get(a) && !a.raw_json().get(out);
}

// A field's key as written when it has no escapes (the usual case: no copy), else unescaped.
inline bool key_of(od::field& f, std::string_view& k) {
  const char* raw = f.key().raw();
  std::size_t n = 0;
  // The key is a string stage 1 closed: its quote comes before the end of the padded text.
  while (raw[n] != '"' && raw[n] != '\\') ++n;
  if (raw[n] == '"') {
    k = std::string_view(raw, n);
    return true;
  }
  return !f.unescaped_key().get(k);
}

constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

// The loops below use each field, value and object where simdjson's result holds it
// (value_unsafe() after error()) instead of copying it out with get(): GCC builds such a copy
// from a just-written iterator with one 16-byte load over two smaller stores, which stalls on
// store-to-load forwarding, and did so twice per field (about a sixth of an import's time).
// simdjson_result offers a non-const value_unsafe() only on an rvalue, hence the std::move.

inline bool read_args(od::object& args, RawEvent& e) {
  for (auto f_r : args) {
    if (f_r.error()) return false;
    od::field&& f = std::move(f_r).value_unsafe();
    std::string_view k;
    if (!key_of(f, k)) return false;
    od::value& v = f.value();
    std::int64_t x = 0;
    // Numbers that land in int32 fields or feed byte counts: beyond their range the event is
    // a counted problem, not a silently truncated value.
    auto out_of_range = [&] {
      if (!e.bad_args) e.bad_arg = k;
      e.bad_args = true;
      return false;
    };
    auto fits = [&](std::int64_t lo, std::int64_t hi) {
      return (x >= lo && x <= hi) || out_of_range();
    };
    // Such a field read into `x`: a number beyond int64 (1e20) is counted as out of range too;
    // a value that is not a number at all is skipped, as before.
    auto int_fits = [&](std::int64_t lo, std::int64_t hi) {
      const std::string_view tok = v.raw_json_token();
      if (value_int(v, x)) return fits(lo, hi);
      if (!tok.empty() && (tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9'))) out_of_range();
      return false;
    };
    // By length first: most keys (Kineto's "External id", "Input Dims", ...) match nothing.
    switch (k.size()) {
      case 4:
        if (k == "name") {
          value_string(v, e.arg_name);
        } else if (k == "grid") {
          value_array_text(v, e.grid);
        }
        break;
      case 5:
        if (k == "block") {
          value_array_text(v, e.block);
        } else if (k == "bytes") {
          if (int_fits(-1, kMaxEventBytes)) e.bytes = x;
        } else if (k == "phase") {
          value_string(v, e.phase);
        } else if (k == "layer") {
          if (int_fits(-1, kInt32Max)) e.layer = x;
        } else if (k == "dtype") {
          value_string(v, e.dtype);
        }
        break;
      case 6:
        if (k == "bucket") {
          if (int_fits(-1, kInt32Max)) e.bucket = x;
        } else if (k == "device") {
          if (int_fits(-1, kInt32Max)) e.device = x;
        } else if (k == "stream") {
          if (value_int(v, x)) e.stream = x;
        }
        break;
      case 9:
        if (k == "iteration") {
          if (int_fits(-1, kInt32Max)) e.iteration = x;
        } else if (k == "algorithm") {
          value_string(v, e.algorithm);
        } else if (k == "comm_size") {
          if (int_fits(0, kMaxRanks)) e.group_size = x;
        }
        break;
      case 10:
        if (k == "collective") {
          value_string(v, e.collective);
        } else if (k == "Group size") {
          if (int_fits(0, kMaxRanks)) e.group_size = x;
        } else if (k == "world_size") {
          if (int_fits(1, kMaxRanks)) e.world_size = x;
        }
        break;
      case 11:
        if (k == "correlation") {
          if (value_int(v, x)) e.correlation = x;
        } else if (k == "drift_t0_ns") {
          if (value_int(v, x)) {
            e.drift_t0 = x;
            e.has_drift = true;
          }
        } else if (k == "drift_t1_ns") {
          if (value_int(v, x)) e.drift_t1 = x;
        }
        break;
      case 13:
        if (k == "In msg nelems") {
          if (int_fits(-1, kMaxEventBytes / 8)) e.nelems = x;
        }
        break;
      case 14:
        if (k == "wait_on_stream") {
          if (int_fits(-2, kInt32Max)) e.wait_stream = x;
        } else if (k == "Out msg nelems") {
          if (int_fits(-1, kMaxEventBytes / 8)) e.out_nelems = x;
        }
        break;
      case 15:
        if (k == "Collective name") value_string(v, e.collective);
        break;
      case 19:
        if (k == "drift_correction_ns") {
          if (value_int(v, x)) e.drift_c = x;
        } else if (k == "Process Group Ranks") {
          if (!value_string(v, e.group_ranks)) value_array_text(v, e.group_ranks);
        }
        break;
      case 33:
        if (k == "wait_on_cuda_event_record_corr_id") {
          if (value_int(v, x)) e.wait_corr = x;
        }
        break;
      default:
        break;
    }
  }
  return true;
}

inline void read_time(od::value& v, bool is_ts, RawEvent& e) {
  const std::string_view tok = v.raw_json_token();
  Nanos t = 0;
  const Parsed p = parse_us(tok, t);
  if (is_ts) {
    e.has_ts = true;
    e.bad_ts = p == Parsed::kBad;
    e.ts_out_of_range = p == Parsed::kOutOfRange;
    e.ts_token = tok;
    e.ts = t;
  } else {
    e.has_dur = true;
    e.bad_dur = p == Parsed::kBad;
    e.dur_out_of_range = p == Parsed::kOutOfRange;
    e.dur_token = tok;
    e.dur = t;
  }
}

inline bool read_event(od::object& obj, RawEvent& e) {
  for (auto f_r : obj) {
    if (f_r.error()) return false;
    od::field&& f = std::move(f_r).value_unsafe();
    std::string_view k;
    if (!key_of(f, k)) return false;
    od::value& v = f.value();
    switch (k.size()) {
      case 2:
        if (k == "ph") {
          value_string(v, e.ph);
        } else if (k == "ts") {
          read_time(v, true, e);
        } else if (k == "id") {
          if (!value_int(v, e.id)) {
            std::string_view s;
            if (value_string(v, s))
              e.id = static_cast<std::int64_t>(std::hash<std::string_view>{}(s));
          }
        }
        break;
      case 3:
        if (k == "cat") {
          value_string(v, e.cat);
        } else if (k == "dur") {
          read_time(v, false, e);
        } else if (k == "pid") {
          e.pid_numeric = value_int(v, e.pid);
        } else if (k == "tid") {
          if (!value_int(v, e.tid)) e.tid = -1;
        }
        break;
      case 4:
        if (k == "name") {
          if (!value_string(v, e.name)) e.name = {};
        } else if (k == "args") {
          auto args_r = v.get_object();
          if (!args_r.error()) {
            // NOLINTNEXTLINE(performance-move-const-arg): the only non-const access (see above)
            od::object&& args = std::move(args_r).value_unsafe();
            if (!read_args(args, e)) return false;
          }
        }
        break;
      default:
        break;
    }
  }
  return true;
}

inline const char* json_type_name(od::json_type t) {
  switch (t) {
    case od::json_type::array:
      return "array";
    case od::json_type::object:
      return "object";
    case od::json_type::number:
      return "number";
    case od::json_type::string:
      return "string";
    case od::json_type::boolean:
      return "boolean";
    case od::json_type::null:
      return "null";
  }
  return "value";
}

// traceEvents: every entry to the sink; false when the JSON broke inside the array.
inline bool walk_events(od::array arr, EventSink& sink) {
  for (auto ev_r : arr) {
    if (ev_r.error()) return false;
    // NOLINTNEXTLINE(performance-move-const-arg): the only non-const access (see read_args)
    od::value&& ev = std::move(ev_r).value_unsafe();
    od::json_type type;
    if (ev.type().get(type)) return false;
    if (type != od::json_type::object) {
      // Counted, like any bad record; the iterator skips the value.
      sink.not_an_object(json_type_name(type));
      continue;
    }
    auto obj_r = ev.get_object();
    if (obj_r.error()) return false;
    // NOLINTNEXTLINE(performance-move-const-arg): the only non-const access (see read_args)
    od::object&& obj = std::move(obj_r).value_unsafe();
    RawEvent raw;
    if (!read_event(obj, raw)) return false;
    sink.event(raw);
  }
  return true;
}

// distributedInfo; false when the sink refused a value.
inline bool walk_info(od::object info, EventSink& sink) {
  for (auto f_r : info) {
    od::field f;
    if (std::move(f_r).get(f)) break;
    std::string_view k;
    if (!key_of(f, k)) break;
    od::value v = f.value();
    std::int64_t x = 0;
    std::string_view s;
    if (k == "rank" || k == "world_size") {
      const InfoField which = k == "rank" ? InfoField::kRank : InfoField::kWorldSize;
      // Taken before the value is read: a number that does not fit leaves it unreadable.
      const std::string_view token = trim_token(v.raw_json_token());
      if (!value_int(v, x)) {
        sink.info_not_int(which, token);
        return false;
      }
      if (!sink.info_int(which, x)) return false;
    } else if (k == "backend" && value_string(v, s)) {
      sink.info_string(InfoField::kBackend, s);
    } else if (k == "run_id" && value_string(v, s)) {
      sink.info_string(InfoField::kRunId, s);
    }
  }
  return true;
}

// The whole text in one go: what the windows below must agree with, and what runs whenever they
// meet anything unusual.
// `after_events`: the text is what follows traceEvents (a break in it is then a break after the
// events, as in the whole text).
inline WalkResult walk(od::parser& parser, const char* text, std::size_t size, std::size_t capacity,
                       EventSink& sink, bool after_events = false) {
  WalkResult r;
  r.events_seen = after_events;
  od::document doc;
  if (parser.iterate(text, size, capacity).get(doc)) {
    r.status = WalkStatus::kNotJson;
    return r;
  }
  od::object root;
  if (doc.get_object().get(root)) {
    r.status = WalkStatus::kNotObject;
    return r;
  }
  bool whole_root = true;  // the root object read to its '}'
  for (auto field_r : root) {
    od::field field;
    std::string_view key;
    if (std::move(field_r).get(field) || !key_of(field, key)) {
      r.failed_inside = r.events_seen;
      whole_root = false;
      break;
    }
    if (key == "traceEvents") {
      od::array arr;
      if (field.value().get_array().get(arr)) {
        r.status = WalkStatus::kEventsNotArray;
        return r;
      }
      r.events_seen = true;
      if (!walk_events(arr, sink)) {
        r.failed_inside = true;
        whole_root = false;
        break;
      }
    } else if (key == "distributedInfo") {
      od::object info;
      if (field.value().get_object().get(info)) continue;
      if (!walk_info(info, sink)) {
        r.status = WalkStatus::kStopped;
        return r;
      }
    } else if (key == "baseTimeNanoseconds") {
      std::int64_t x = 0;
      od::value v = field.value();
      if (value_int(v, x)) sink.base_time(x);
    }
  }
  // The root object read to its end: anything after it is a second document (simdjson would
  // leave it unread). A root that broke off is a cut tail or bad JSON, not this.
  const char* after = nullptr;
  if (whole_root && !doc.current_location().get(after)) r.status = WalkStatus::kTrailing;
  return r;
}

// A byte of the text replaced while a window is read, put back when it goes out of scope.
class Patch {
 public:
  Patch(char* at, char c) : at_(at), was_(*at) { *at = c; }
  Patch(const Patch&) = delete;
  Patch& operator=(const Patch&) = delete;
  ~Patch() { *at_ = was_; }

 private:
  char* at_;
  char was_;
};

// Where the '[' of traceEvents is when the text names it in the plain way (the walk of the head
// checks that it is the top-level key); npos when not.
inline std::size_t events_bracket(std::string_view t) {
  const std::size_t q = t.find("\"traceEvents\"");
  if (q == std::string_view::npos) return q;
  std::size_t i = q + 13;
  while (i < t.size() && is_space(t[i])) ++i;
  if (i >= t.size() || t[i] != ':') return std::string_view::npos;
  ++i;
  while (i < t.size() && is_space(t[i])) ++i;
  if (i >= t.size() || t[i] != '[') return std::string_view::npos;
  return i;
}

// The last ',' after a '}' in text[p, end): between two events when the window up to it parses
// (one that is not fails the walk of that window). npos when there is none.
inline std::size_t window_cut(const char* text, std::size_t p, std::size_t end) {
  for (std::size_t c = end; c > p + 1; --c) {
    if (text[c - 1] != ',') continue;
    std::size_t b = c - 1;
    while (b > p && is_space(text[b - 1])) --b;
    if (b > p && text[b - 1] == '}') return c - 1;
  }
  return std::string_view::npos;
}

// How reading traceEvents window by window ended (read_events).
enum class Events : std::uint8_t {
  kRead,     // every event, what follows the array and the root's end: all read cleanly
  kSplit,    // every event up to the split, cleanly
  kUnusual,  // anything else: the caller starts again over the whole text
};

// traceEvents from `p` (the byte after its '[' or after a ',' between two events) a window of
// about `window` bytes at a time, each read as [event, ..., event] with its brackets written
// over the ',' on either side, then the last window with what follows the array (read as
// {"traceEvents": [event, ...], ...}). Every window must read cleanly and hold traceEvents' own
// events; a window whose array ends before the written ']' is followed by the root's remaining
// fields (read as {...}). A middle window is one level shallower than the whole text: its
// parser allows one level less.
// `split` (0: none): stop at that ',' (kSplit), and read nothing past it, as the text after it
// is another thread's (WalkPart). `scratch`: read the first window from this copy instead of
// the text, and write nothing into the text within kTextPadding + 16 bytes after `p`.
inline Events read_events(od::parser& parser, od::parser& window_parser, char* text,
                          std::size_t size, std::size_t capacity, EventSink& sink,
                          std::size_t window, std::size_t p, std::size_t split, char* scratch) {
  enum class Read : std::uint8_t { kNext, kTail, kNoIndex, kFailed };
  const char* loc = nullptr;
  // text[q - 1, c] as [events].
  auto read_window = [&](std::size_t q, std::size_t c) {
    const Patch open(text + q - 1, '[');
    const Patch close(text + c, ']');
    od::document doc;
    if (window_parser.iterate(text + q - 1, c + 1 - (q - 1), capacity - (q - 1)).get(doc)) {
      return Read::kNoIndex;
    }
    od::array arr;
    if (doc.get_array().get(arr) || !walk_events(arr, sink)) return Read::kFailed;
    // The array ended before the written ']' (at traceEvents' own end): what follows is next.
    return doc.current_location().get(loc) ? Read::kNext : Read::kTail;
  };
  // text[q, c) as [events] in the scratch copy: nothing of it may follow the array.
  auto read_copy = [&](std::size_t q, std::size_t c) {
    const std::size_t n = c - q;
    if (n + 2 + kTextPadding > kPartScratch) return Read::kFailed;
    scratch[0] = '[';
    std::memcpy(scratch + 1, text + q, n);
    scratch[n + 1] = ']';
    od::document doc;
    if (window_parser.iterate(scratch, n + 2, kPartScratch).get(doc)) return Read::kNoIndex;
    od::array arr;
    if (doc.get_array().get(arr) || !walk_events(arr, sink)) return Read::kFailed;
    return doc.current_location().get(loc) ? Read::kNext : Read::kFailed;
  };
  // Where the copy's own window ends, nothing may be written in the text: the next window's
  // '[' (and the last window's 16-byte opening) must be past what the other thread may read.
  static constexpr std::string_view kOpen = "{\"traceEvents\":[";
  const std::size_t first_write = p + kTextPadding + kOpen.size();
  bool copied = scratch == nullptr;
  std::size_t width = window;
  std::size_t end = p + width;  // the cut is before here
  for (;;) {
    if (split != 0 && end >= split) {
      const Read got = read_window(p, split);
      return got == Read::kNext ? Events::kSplit : Events::kUnusual;
    }
    if (end >= size) {
      if (!copied) return Events::kUnusual;
      // The last window, with what follows the array: as {"traceEvents": [events ...], ...},
      // written over the 16 bytes before it (the head is at least that long).
      WalkResult last;
      {
        char* const at = text + p - kOpen.size();
        char keep[kOpen.size()];
        std::memcpy(keep, at, kOpen.size());
        std::memcpy(at, kOpen.data(), kOpen.size());
        last = walk(parser, at, size - (p - kOpen.size()), capacity - (p - kOpen.size()), sink);
        std::memcpy(at, keep, kOpen.size());
      }
      if (last.status != WalkStatus::kOk || last.failed_inside) return Events::kUnusual;
      return Events::kRead;
    }
    const std::size_t c = window_cut(text, p, end);
    if (c == std::string_view::npos) {
      width *= 2;  // an event longer than the window
      end = p + width;
      continue;
    }
    const Read got = copied ? read_window(p, c) : read_copy(p, c);
    if (got == Read::kTail) break;
    if (got == Read::kFailed) return Events::kUnusual;
    if (got == Read::kNoIndex) {
      end = c;  // that ',' may be inside a string: try an earlier one
      continue;
    }
    if (!copied && c < first_write) return Events::kUnusual;
    copied = true;
    p = c + 1;
    width = window;
    end = p + width;
  }
  // (only a window read in place ends the array: the copy's tail is kFailed)
  if (split != 0) return Events::kUnusual;  // what follows the array is past the split
  const auto tail = static_cast<std::size_t>(loc - text);
  // What follows the array: ", key: value, ...}" read as "{ key: value, ...}", or "}" (and
  // anything after it, which the whole text's stage 1 would have checked) as "{}".
  const char first = text[tail];
  if (first != ',' && first != '}') return Events::kUnusual;
  const std::size_t from = first == ',' ? tail : tail - 1;
  WalkResult rest;
  {
    const Patch open(text + from, '{');
    rest = walk(parser, text + from, size - from, capacity - from, sink, true);
  }
  if (rest.status != WalkStatus::kOk || rest.failed_inside) return Events::kUnusual;
  return Events::kRead;
}

// The text in windows of about `window` bytes: the head up to traceEvents' '[' (read as
// {..., "traceEvents": []}), then read_events. Anything unusual, a cut tail or bad JSON
// included, starts again over the whole text, so the windows change nothing but the memory and
// the speed. `part` (WalkPart) reads one part of a text split in two instead; the first part
// then leaves starting again to its caller, which must first let the second part end.
inline WalkResult walk_windowed(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                                std::size_t window, const WalkPart& part) {
  od::parser parser;
  od::parser window_parser;
  WalkResult r;
  if (part.split != 0 && part.second) {
    // The second part: read, or fail.
    r.events_seen = true;
    if (window_parser.allocate(2 * window, simdjson::DEFAULT_MAX_DEPTH - 1) ||
        part.split + 1 >= size ||
        read_events(parser, window_parser, text, size, capacity, sink, window, part.split + 1, 0,
                    part.scratch) != Events::kRead) {
      r.failed_inside = true;
      return r;
    }
    r.part_read = true;
    return r;
  }
  auto whole = [&] {
    if (part.split != 0) return r;  // (part_read false: the caller starts again)
    sink.reset();
    return walk(parser, text, size, capacity, sink);
  };
  const std::size_t a = events_bracket(std::string_view(text, size));
  if (a == std::string_view::npos || a + 3 > size || (part.split != 0 && part.split <= a + 1)) {
    return whole();
  }
  WalkResult head;
  {
    const Patch close_array(text + a + 1, ']');
    const Patch close_root(text + a + 2, '}');
    head = walk(parser, text, a + 3, capacity, sink);
  }
  // (whole() only once the text is back as it was)
  if (head.status != WalkStatus::kOk || !head.events_seen || head.failed_inside) return whole();
  if (window_parser.allocate(std::min(size, 2 * window), simdjson::DEFAULT_MAX_DEPTH - 1)) {
    return whole();
  }
  const Events got = read_events(parser, window_parser, text, size, capacity, sink, window, a + 1,
                                 part.split, nullptr);
  if (got == Events::kUnusual) return whole();
  r.events_seen = true;
  r.part_read = got == Events::kSplit;
  return r;
}

}  // namespace dagsgd::trace::detail::DAGSGD_KERNEL_NS

// The kernel's entry points (importer_kernel.h): walk_<kernel> and <kernel>_kernel_name, the
// latter the simdjson implementation this file was built as.
#define DAGSGD_PASTE2(a, b) a##b
#define DAGSGD_PASTE(a, b) DAGSGD_PASTE2(a, b)
#define DAGSGD_STRINGIFY2(x) #x
#define DAGSGD_STRINGIFY(x) DAGSGD_STRINGIFY2(x)

namespace dagsgd::trace::detail {

WalkResult DAGSGD_PASTE(walk_, DAGSGD_KERNEL_NS)(char* text, std::size_t size, std::size_t capacity,
                                                 EventSink& sink, std::size_t window,
                                                 const WalkPart& part) {
  return DAGSGD_KERNEL_NS::walk_windowed(text, size, capacity, sink, window, part);
}

const char* DAGSGD_PASTE(DAGSGD_KERNEL_NS, _kernel_name)() {
  return DAGSGD_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION);
}

}  // namespace dagsgd::trace::detail
