// The trace importer: simdjson On-Demand over each file (one pass, no DOM), interned strings,
// problems counted per kind with the first offender, clock corrections applied on read.
#include "dagsgd/trace/importer.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/collective.h"
#include "dagsgd/trace/trace_repair.h"

namespace dagsgd::trace {

namespace od = simdjson::ondemand;
namespace fs = std::filesystem;
using model::Nanos;

const char* category_name(EventCategory c) {
  switch (c) {
    case EventCategory::kKernel:
      return "kernel";
    case EventCategory::kMemcpy:
      return "gpu_memcpy";
    case EventCategory::kMemset:
      return "gpu_memset";
    case EventCategory::kRuntime:
      return "cuda_runtime";
    case EventCategory::kSync:
      return "cuda_sync";
    case EventCategory::kAnnotation:
      return "user_annotation";
    case EventCategory::kGpuAnnotation:
      return "gpu_user_annotation";
    case EventCategory::kCpuOp:
      return "cpu_op";
    case EventCategory::kMpi:
      return "mpi";
    case EventCategory::kOther:
      return "other";
  }
  return "other";
}

const char* run_source_name(RunSource s) {
  switch (s) {
    case RunSource::kDagsgdTrain:
      return "dagsgd-train";
    case RunSource::kDagsgdCollect:
      return "dagsgd-collect";
    case RunSource::kKineto:
      return "kineto";
  }
  return "kineto";
}

std::int64_t ImportReport::problem_count() const {
  std::int64_t n = 0;
  for (const auto& p : run_problems) n += p.count;
  for (const auto& f : files) {
    for (const auto& p : f.problems) n += p.count;
  }
  return n;
}

std::string ImportReport::summary() const {
  std::string out;
  for (const auto& p : run_problems) {
    if (!out.empty()) out += "; ";
    out += "the run: " + std::to_string(p.count) + " " + p.kind + " (" + p.first + ")";
  }
  for (const auto& f : files) {
    for (const auto& p : f.problems) {
      if (!out.empty()) out += "; ";
      out += "'" + f.file + "': " + std::to_string(p.count) + " " + p.kind + " (first: " + p.first +
             ")";
    }
  }
  return out;
}

namespace {

// What an event's args may state (docs/limits.md): a message of at most 1e15 bytes (1 PB), at
// most 2^20 ranks, as the cost models take.
constexpr std::int64_t kMaxEventBytes = 1'000'000'000'000'000;
constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;

// Kineto categories that carry nothing the DAG needs; skipped without complaint.
bool ignorable_category(std::string_view c) {
  static constexpr std::array<std::string_view, 12> kIgnored = {
      "Trace",        "python_function", "cuda_profiler_range", "ac2g",
      "fwdbwd",       "overhead",        "gpu_memory",          "cpu_instant_event",
      "user_instant", "Runtime",         "cuda_driver_event",   "Kernel"};
  return std::find(kIgnored.begin(), kIgnored.end(), c) != kIgnored.end();
}

std::optional<EventCategory> known_category(std::string_view c, std::string_view name) {
  if (c == cat::kKernel) return EventCategory::kKernel;
  if (c == cat::kGpuMemcpy) return EventCategory::kMemcpy;
  if (c == cat::kGpuMemset) return EventCategory::kMemset;
  if (c == cat::kCudaRuntime || c == cat::kCudaDriver) return EventCategory::kRuntime;
  if (c == cat::kCudaSync) return EventCategory::kSync;
  if (c == cat::kUserAnnotation) return EventCategory::kAnnotation;
  if (c == cat::kGpuUserAnnotation) return EventCategory::kGpuAnnotation;
  if (c == cat::kCpuOp || c == "operator") {
    return name.substr(0, 4) == "MPI_" ? EventCategory::kMpi : EventCategory::kCpuOp;
  }
  if (c == "mpi") return EventCategory::kMpi;
  return std::nullopt;
}

enum class Parsed { kOk, kBad, kOutOfRange };

// Microseconds as written ("123.456", "-5", "1e3") to integer ns, exactly for plain decimals
// (a double would lose nanoseconds on absolute Kineto timestamps of 1.7e15 us). Values beyond
// +-kMaxTimestamp ns are kOutOfRange (and `out` is left alone).
Parsed parse_us(std::string_view tok, Nanos& out) {
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' ||
                          tok.back() == '\t' || tok.back() == ',')) {
    tok.remove_suffix(1);
  }
  if (tok.empty()) return Parsed::kBad;
  if (tok.find_first_of("eE") != std::string_view::npos) {
    std::string s(tok);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size() || std::isnan(v)) return Parsed::kBad;
    const double ns = v * 1000.0;
    if (!(std::abs(ns) <= static_cast<double>(model::kMaxTimestamp))) return Parsed::kOutOfRange;
    out = static_cast<Nanos>(std::llround(ns));
    return Parsed::kOk;
  }
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
  if (!digits || i != tok.size()) return Parsed::kBad;
  if (too_big) return Parsed::kOutOfRange;
  for (int k = std::min(fd, 3); k < 3; ++k) frac *= 10;
  Nanos v = ip * 1000 + frac + (round_up ? 1 : 0);
  if (v > model::kMaxTimestamp) return Parsed::kOutOfRange;
  out = neg ? -v : v;
  return Parsed::kOk;
}

// Any JSON number (or numeric string) as int64; false for other types.
bool value_int(od::value v, std::int64_t& out) {
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
    std::string str(s);
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(str.c_str(), &end, 10);
    if (str.empty() || end != str.c_str() + str.size() || errno == ERANGE) return false;
    out = x;
    return true;
  }
  return false;
}

bool value_string(od::value v, std::string_view& out) {
  od::json_type t;
  if (v.type().get(t) || t != od::json_type::string) return false;
  return !v.get_string().get(out);
}

int dtype_size(std::string_view d) {
  std::string s(d);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "float" || s == "float32" || s == "int" || s == "int32" || s == "uint32") return 4;
  if (s == "double" || s == "float64" || s == "long" || s == "int64" || s == "uint64") return 8;
  if (s == "half" || s == "float16" || s == "bfloat16" || s == "bf16" || s == "int16") return 2;
  if (s == "byte" || s == "char" || s == "int8" || s == "uint8" || s == "int8_t" || s == "bool") {
    return 1;
  }
  return 0;
}

// What one record of traceEvents holds before it is classified.
struct RawEvent {
  std::string_view name, cat, ph, collective, algorithm, phase, dtype, arg_name;
  Nanos ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, bad_ts = false, bad_dur = false;
  bool ts_out_of_range = false, dur_out_of_range = false;
  std::string_view ts_token, dur_token;  // as written, for messages
  bool bad_args = false;                 // an args number that does not fit its field
  std::string_view bad_arg;
  bool pid_numeric = false;
  std::int64_t pid = 0, tid = 0, id = -1;
  std::int64_t correlation = -1, bytes = -1, nelems = -1, layer = -1, iteration = -1, bucket = -1;
  std::int64_t group_size = 0, wait_stream = -2, wait_corr = -1, device = -1, stream = -1;
  std::int64_t rank = -1, world_size = -1;
  // dagsgd_clock_sync
  std::int64_t drift_t0 = 0, drift_t1 = 0, drift_c = 0;
  bool has_drift = false;
};

const char* json_type_name(od::json_type t) {
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

// The error of a text simdjson would not read; import_trace_text replaces it with the position.
constexpr const char* kNotJson = ": not JSON";

// Why `text` is not valid JSON, with the line and column: the first invalid UTF-8 byte (a fast
// scan), else nlohmann's first syntax error (a slower pass, on this error path only).
model::Error invalid_json(const std::string& text, const std::string& where,
                          const std::string& what) {
  const std::size_t bad = model::find_invalid_utf8(text);
  if (bad != std::string::npos) {
    return model::Error{where + ": " + what + ": " + model::text_position(text, bad) +
                        ": invalid UTF-8 byte"};
  }
  std::string syntax = model::json_syntax_error(text);
  if (syntax.empty()) syntax = "nested deeper than the trace reader's 1024 levels";
  return model::Error{where + ": " + what + ": " + syntax};
}

class FileParser {
 public:
  FileParser(ImportedRank& rank, FileReport& report) : rank_(rank), report_(report) {}

  // Returns an error only when the text is not a trace; parse errors inside traceEvents are
  // returned through `cut` (the byte offset where reading stopped) for the caller to repair.
  model::Expected<void> parse(std::string& text, const std::string& where, bool& events_seen,
                              bool& failed_inside) {
    text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
    od::parser parser;
    od::document doc;
    if (parser.iterate(simdjson::padded_string_view(text)).get(doc)) {
      return model::Error{where + kNotJson};
    }
    od::object root;
    if (doc.get_object().get(root)) {
      return model::Error{where + ": not a trace (the top level is not a JSON object)"};
    }
    bool have_events = false;
    for (auto field_r : root) {
      od::field field;
      if (std::move(field_r).get(field)) {
        failed_inside = have_events;
        break;
      }
      std::string_view key;
      if (field.unescaped_key().get(key)) {
        failed_inside = have_events;
        break;
      }
      if (key == "traceEvents") {
        od::array arr;
        if (field.value().get_array().get(arr)) {
          return model::Error{where + ": not a trace ('traceEvents' is not an array)"};
        }
        have_events = true;
        events_seen = true;
        for (auto ev_r : arr) {
          od::value ev;
          od::json_type type;
          if (ev_r.get(ev) || ev.type().get(type)) {
            failed_inside = true;
            break;
          }
          if (type != od::json_type::object) {
            // Counted, like any bad record; the iterator skips the value.
            ++report_.events;
            problem("not an event object", "traceEvents[" + std::to_string(report_.events - 1) +
                                               "] is a JSON " + json_type_name(type));
            continue;
          }
          od::object obj;
          if (ev.get_object().get(obj)) {
            failed_inside = true;
            break;
          }
          RawEvent raw;
          if (!read_event(obj, raw)) {
            failed_inside = true;
            break;
          }
          add_event(raw);
        }
        if (failed_inside) break;
      } else if (key == "distributedInfo") {
        od::object info;
        if (field.value().get_object().get(info)) continue;
        for (auto f_r : info) {
          od::field f;
          if (std::move(f_r).get(f)) break;
          std::string_view k;
          if (f.unescaped_key().get(k)) break;
          std::int64_t x = 0;
          std::string_view s;
          if (k == "rank" && value_int(f.value(), x)) {
            if (x < 0 || x >= kMaxRanks) {
              return model::Error{where + ": 'distributedInfo.rank' is " + std::to_string(x) +
                                  ": out of range (0 to " + std::to_string(kMaxRanks - 1) + ")"};
            }
            rank_.rank = static_cast<int>(x);
          } else if (k == "world_size" && value_int(f.value(), x)) {
            if (x < 1 || x > kMaxRanks) {
              return model::Error{where + ": 'distributedInfo.world_size' is " + std::to_string(x) +
                                  ": out of range (1 to " + std::to_string(kMaxRanks) + ")"};
            }
            rank_.world_size = static_cast<int>(x);
            rank_.world_size_stated = true;
          } else if (k == "backend" && value_string(f.value(), s)) {
            rank_.backend = std::string(s);
          } else if (k == "run_id" && value_string(f.value(), s)) {
            rank_.run_id = std::string(s);
          }
        }
      } else if (key == "baseTimeNanoseconds") {
        std::int64_t x = 0;
        if (value_int(field.value(), x)) base_ns_ = x;
      }
    }
    if (!events_seen) {
      if (failed_inside) return model::Error{where + kNotJson};
      return model::Error{where + ": not a trace (no 'traceEvents' array)"};
    }
    return model::ok();
  }

  void finish();
  bool has_drift() const { return drift_.has_drift; }

 private:
  bool read_args(od::object args, RawEvent& e) {
    for (auto f_r : args) {
      od::field f;
      if (std::move(f_r).get(f)) return false;
      std::string_view k;
      if (f.unescaped_key().get(k)) return false;
      od::value v = f.value();
      std::int64_t x = 0;
      // Numbers that land in int32 fields or feed byte counts: beyond their range the event is
      // a counted problem, not a silently truncated value.
      auto fits = [&](std::int64_t lo, std::int64_t hi) {
        if (x >= lo && x <= hi) return true;
        if (!e.bad_args) e.bad_arg = k;
        e.bad_args = true;
        return false;
      };
      constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
      if (k == "correlation") {
        if (value_int(v, x)) e.correlation = x;
      } else if (k == "bytes") {
        if (value_int(v, x) && fits(-1, kMaxEventBytes)) e.bytes = x;
      } else if (k == arg::kPhase) {
        value_string(v, e.phase);
      } else if (k == arg::kLayer) {
        if (value_int(v, x) && fits(-1, kInt32Max)) e.layer = x;
      } else if (k == arg::kIteration) {
        if (value_int(v, x) && fits(-1, kInt32Max)) e.iteration = x;
      } else if (k == "bucket") {
        if (value_int(v, x) && fits(-1, kInt32Max)) e.bucket = x;
      } else if (k == arg::kCollective || k == "Collective name") {
        value_string(v, e.collective);
      } else if (k == arg::kAlgorithm) {
        value_string(v, e.algorithm);
      } else if (k == "In msg nelems") {
        if (value_int(v, x) && fits(-1, kMaxEventBytes / 8)) e.nelems = x;
      } else if (k == "Group size" || k == "comm_size") {
        if (value_int(v, x) && fits(0, kMaxRanks)) e.group_size = x;
      } else if (k == "dtype") {
        value_string(v, e.dtype);
      } else if (k == "wait_on_stream") {
        if (value_int(v, x) && fits(-2, kInt32Max)) e.wait_stream = x;
      } else if (k == "wait_on_cuda_event_record_corr_id") {
        if (value_int(v, x)) e.wait_corr = x;
      } else if (k == "device") {
        if (value_int(v, x) && fits(-1, kInt32Max)) e.device = x;
      } else if (k == "stream") {
        if (value_int(v, x)) e.stream = x;
      } else if (k == "name") {
        value_string(v, e.arg_name);
      } else if (k == "world_size") {
        if (value_int(v, x) && fits(1, kMaxRanks)) e.world_size = x;
      } else if (k == "drift_t0_ns") {
        if (value_int(v, x)) {
          e.drift_t0 = x;
          e.has_drift = true;
        }
      } else if (k == "drift_t1_ns") {
        if (value_int(v, x)) e.drift_t1 = x;
      } else if (k == "drift_correction_ns") {
        if (value_int(v, x)) e.drift_c = x;
      }
    }
    return true;
  }

  bool read_event(od::object obj, RawEvent& e) {
    for (auto f_r : obj) {
      od::field f;
      if (std::move(f_r).get(f)) return false;
      std::string_view k;
      if (f.unescaped_key().get(k)) return false;
      od::value v = f.value();
      if (k == "name") {
        if (!value_string(v, e.name)) e.name = {};
      } else if (k == "cat") {
        value_string(v, e.cat);
      } else if (k == "ph") {
        value_string(v, e.ph);
      } else if (k == "ts" || k == "dur") {
        std::string_view tok = v.raw_json_token();
        Nanos t = 0;
        const Parsed p = parse_us(tok, t);
        if (k == "ts") {
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
      } else if (k == "pid") {
        e.pid_numeric = value_int(v, e.pid);
      } else if (k == "tid") {
        if (!value_int(v, e.tid)) e.tid = -1;
      } else if (k == "id") {
        if (!value_int(v, e.id)) {
          std::string_view s;
          if (value_string(v, s))
            e.id = static_cast<std::int64_t>(std::hash<std::string_view>{}(s));
        }
      } else if (k == "args") {
        od::object args;
        if (v.get_object().get(args) == simdjson::SUCCESS) {
          if (!read_args(args, e)) return false;
        }
      }
    }
    return true;
  }

  void problem(const std::string& kind, const std::string& first) {
    for (auto& p : report_.problems) {
      if (p.kind == kind) {
        ++p.count;
        return;
      }
    }
    report_.problems.push_back(ImportProblem{kind, 1, first});
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

  std::int32_t intern(std::string_view s) {
    auto it = interned_.find(s);
    if (it != interned_.end()) return it->second;
    auto id = static_cast<std::int32_t>(rank_.strings.size());
    rank_.strings.emplace_back(s);
    // Keys view the stored strings; a deque would keep them stable, but strings never move
    // their heap buffer on vector growth except short ones (SSO), so keep an owned copy.
    keys_.push_back(std::make_unique<std::string>(s));
    interned_.emplace(std::string_view(*keys_.back()), id);
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
      } else if (e.name == "dagsgd_rank_info" && e.world_size > 0) {
        rank_.world_size = static_cast<int>(e.world_size);
        rank_.world_size_stated = true;
      }
      return;
    }
    if (ph == 's' || ph == 'f' || ph == 't') {
      auto& slot = flows_[{std::string(e.cat), e.id}];
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
    if (!e.algorithm.empty()) out.algorithm = intern(e.algorithm);
    out.bytes = e.bytes;
    if (e.nelems >= 0) {
      int sz = dtype_size(e.dtype);
      out.bytes = e.nelems * (sz > 0 ? sz : 4);
    }
    out.layer = static_cast<std::int32_t>(e.layer);
    out.iteration = static_cast<std::int32_t>(e.iteration);
    out.bucket = static_cast<std::int32_t>(e.bucket);
    out.group_size = static_cast<std::int32_t>(e.group_size);
    out.wait_on_corr = e.wait_corr;
    out.wait_on_stream = e.wait_stream >= 0 ? static_cast<std::int32_t>(e.wait_stream) : -1;
    out.device = static_cast<std::int32_t>(e.device);
    out.phase = e.phase.empty() ? Phase::kNone : phase_from_name(std::string(e.phase));
    rank_.events.push_back(out);
  }

  ImportedRank& rank_;
  FileReport& report_;
  std::unordered_map<std::string_view, std::int32_t> interned_;
  std::vector<std::unique_ptr<std::string>> keys_;
  std::map<std::pair<std::string, std::int64_t>, std::pair<int, int>> flows_;
  RawEvent drift_;
  std::int64_t base_ns_ = 0;
};

void FileParser::finish() {
  for (const auto& [key, se] : flows_) {
    report_.flows_matched += std::min(se.first, se.second);
    if (se.first == 0) {
      // Kineto ends a flow on runtime calls that launched nothing (cudaEventRecord, ...), with
      // no start: its convention, not a defect.
      ++report_.flows_end_only;
    } else if (se.second == 0) {
      report_.flows_unmatched += se.first;
      problem("unmatched flow", "flow '" + key.first + "' id " + std::to_string(key.second) +
                                    " starts but never ends (its GPU work is not in the trace)");
      for (int i = 1; i < se.first; ++i) problem("unmatched flow", "");
    }
  }
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
  std::stable_sort(rank_.events.begin(), rank_.events.end(),
                   [](const ImportedEvent& a, const ImportedEvent& b) {
                     if (a.ts != b.ts) return a.ts < b.ts;
                     return a.dur > b.dur;
                   });
}

// A cut that is not our writer's one-event-per-line layout: close the array after the last
// event that still parses.
std::optional<std::string> generic_repair(const std::string& text) {
  std::size_t pos = text.size();
  // Each try parses the whole candidate: a few suffice for a cut tail (the last complete
  // event is found within them), and more would make a broken large file a slow one.
  for (int tries = 0; tries < 16; ++tries) {
    pos = text.rfind('}', pos == 0 ? 0 : pos - 1);
    if (pos == std::string::npos || pos == 0) return std::nullopt;
    std::size_t next = text.find_first_not_of(" \n\r\t", pos + 1);
    if (next == std::string::npos || text[next] != ',') continue;
    std::string candidate = text.substr(0, pos + 1) + "]}";
    candidate.reserve(candidate.size() + simdjson::SIMDJSON_PADDING);
    simdjson::dom::parser p;
    simdjson::dom::element el;
    if (p.parse(candidate.data(), candidate.size(), false).get(el) == simdjson::SUCCESS) {
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace

model::Expected<ImportedRank> import_trace_text(std::string text, const std::string& where,
                                                int rank_hint, FileReport& report) {
  report.file = where;
  report.bytes = static_cast<std::int64_t>(text.size());
  auto attempt = [&](std::string& t, ImportedRank& rank, FileReport& rep, bool& inside,
                     bool& seen) -> model::Expected<void> {
    rank = ImportedRank{};
    rank.rank = rank_hint;
    rank.file = where;
    FileReport fresh;
    fresh.file = rep.file;
    fresh.bytes = rep.bytes;
    rep = fresh;
    FileParser parser(rank, rep);
    DAGSGD_TRY(parser.parse(t, where, seen, inside));
    parser.finish();
    return model::ok();
  };
  const std::string not_json = where + kNotJson;
  auto positioned = [&](const model::Error& e) {
    return e.message == not_json ? invalid_json(text, where, "not valid JSON") : e;
  };
  ImportedRank rank;
  bool inside = false;
  bool seen = false;
  auto first = attempt(text, rank, report, inside, seen);
  if (first && !inside) return rank;
  // Not a trace at all: no traceEvents array opened.
  if (text.find("\"traceEvents\"") == std::string::npos) {
    if (!first) return positioned(first.error());
    return model::Error{where + ": not a trace (no 'traceEvents' array)"};
  }
  std::string repaired;
  std::int64_t dropped = 0;
  auto ours = repair_truncated_trace(text, where);
  if (ours && ours->repaired) {
    repaired = std::move(ours->text);
    dropped = ours->dropped_bytes;
  } else if (auto g = generic_repair(text)) {
    dropped = static_cast<std::int64_t>(text.size()) - static_cast<std::int64_t>(g->size()) + 2;
    repaired = std::move(*g);
  } else {
    if (!first) return positioned(first.error());
    return invalid_json(text, where, "malformed JSON inside 'traceEvents' that cannot be repaired");
  }
  inside = false;
  seen = false;
  auto second = attempt(repaired, rank, report, inside, seen);
  if (!second) return positioned(second.error());
  if (inside) {
    return invalid_json(text, where, "malformed JSON inside 'traceEvents' that cannot be repaired");
  }
  report.bytes = static_cast<std::int64_t>(text.size());
  report.truncated = true;
  report.dropped_bytes = dropped;
  report.problems.push_back(
      ImportProblem{"truncated tail", 1,
                    "the file ends inside an event; " + std::to_string(dropped) +
                        " bytes dropped after event " + std::to_string(report.events - 1)});
  return rank;
}

namespace {

bool is_trace_file(const fs::path& p) {
  std::string n = p.filename().string();
  auto ends = [&](const std::string& s) {
    return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

// Collectives (NCCL kernels, MPI collectives, our gradient groups), in issue order per rank.
std::vector<Nanos> collective_ends(const ImportedRank& r) {
  std::vector<Nanos> ends;
  for (const auto& e : r.events) {
    if (e.collective < 0) continue;
    if (!leaves_together(classify_collective(r.str(e.collective)))) continue;
    if (e.gpu || e.category == EventCategory::kMpi) ends.push_back(e.ts + e.dur);
  }
  return ends;
}

// Offsets of every rank to rank 0 from the ends of matching collectives (the k-th on each rank):
// the median difference, and the largest deviation from it as the residual.
void align_clocks(ImportedRun& run, bool apply) {
  auto& rep = run.report;
  rep.clock_offsets.assign(run.ranks.size(), 0);
  if (run.ranks.size() < 2) return;
  auto ref = collective_ends(run.ranks[0]);
  if (ref.empty()) return;
  Nanos residual = 0;
  bool any = false;
  for (std::size_t r = 1; r < run.ranks.size(); ++r) {
    auto ends = collective_ends(run.ranks[r]);
    std::size_t n = std::min(ends.size(), ref.size());
    if (n == 0) continue;
    std::vector<Nanos> d(n);
    for (std::size_t k = 0; k < n; ++k) d[k] = ends[k] - ref[k];
    std::vector<Nanos> sorted = d;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n / 2),
                     sorted.end());
    Nanos off = sorted[n / 2];
    rep.clock_offsets[r] = off;
    // In double: with timestamps up to +-kMaxTimestamp, x - off can pass int64.
    for (Nanos x : d) {
      residual = std::max(residual, model::saturating_nanos(std::abs(static_cast<double>(x) -
                                                                     static_cast<double>(off))));
    }
    any = true;
  }
  rep.clock_residual = residual;
  if (apply && any) {
    for (std::size_t r = 1; r < run.ranks.size(); ++r) {
      for (auto& e : run.ranks[r].events) e.ts -= rep.clock_offsets[r];
    }
    rep.clocks_aligned = true;
  }
}

}  // namespace

namespace {

// Traces of one run carry one run id (dagsgd's writers put it in the manifest and in every
// trace's distributedInfo); any difference, or an id on some files and not on others, means the
// files come from different runs. Traces without ids (older runs, Kineto) are accepted as one.
model::Expected<void> check_run_ids(const ImportedRun& run, const std::string& manifest_path) {
  bool any = run.manifest && !run.manifest->run_id.empty();
  for (const auto& r : run.ranks) any = any || !r.run_id.empty();
  if (!any) return model::ok();
  auto said = [](const std::string& id) {
    return id.empty() ? std::string("no run id") : "run id '" + id + "'";
  };
  std::string ref_id;
  std::string ref_file;
  if (run.manifest) {
    ref_id = run.manifest->run_id;
    ref_file = manifest_path;
  } else {
    ref_id = run.ranks.front().run_id;
    ref_file = run.ranks.front().file;
  }
  for (const auto& r : run.ranks) {
    if (r.run_id == ref_id) continue;
    return model::Error{"'" + r.file + "' (" + said(r.run_id) + ") and '" + ref_file + "' (" +
                        said(ref_id) + ") are not from the same run"};
  }
  return model::ok();
}

// The earliest start and latest end of the run's events, and the sum of their durations, must
// let every time derived from them fit in int64 (docs/limits.md).
model::Expected<void> check_time_span(const ImportedRun& run) {
  const ImportedRank* first_rank = nullptr;
  const ImportedRank* last_rank = nullptr;
  Nanos first = 0;
  Nanos last = 0;
  double total = 0;
  for (const auto& r : run.ranks) {
    for (const auto& e : r.events) {
      if (first_rank == nullptr || e.ts < first) {
        first = e.ts;
        first_rank = &r;
      }
      if (last_rank == nullptr || e.ts + e.dur > last) {
        last = e.ts + e.dur;
        last_rank = &r;
      }
      total += static_cast<double>(e.dur);
    }
  }
  if (first_rank == nullptr) return model::ok();
  // In double: after clock alignment two ranks' times may be up to 1.2e19 ns apart.
  const double span = static_cast<double>(last) - static_cast<double>(first);
  if (!(span < static_cast<double>(model::kMaxDuration))) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", span * 1e-9);
    return model::Error{"'" + run.path + "': the events span " + buf + " s, from an event of '" +
                        first_rank->file + "' to one of '" + last_rank->file +
                        "': out of range (at most 1e15 ns, 11.6 days; traces of different runs?)"};
  }
  if (!(total < static_cast<double>(model::kMaxDagTime) / 2)) {
    return model::Error{"'" + run.path +
                        "': the events' durations add up to 2^61 ns or more: out of range"};
  }
  return model::ok();
}

}  // namespace

model::Expected<ImportedRun> import_run(const std::vector<std::string>& paths,
                                        const ImportOptions& options) {
  if (paths.empty()) return model::Error{"no trace given"};
  ImportedRun run;
  run.path = paths[0];
  std::vector<std::string> files;
  std::string manifest_path;
  if (paths.size() == 1 && fs::is_directory(paths[0])) {
    const fs::path dir(paths[0]);
    if (fs::exists(dir / kManifestName)) {
      manifest_path = (dir / kManifestName).string();
      auto m = read_manifest(dir.string());
      if (!m) return m.error();
      run.source = m->kind == "collect" ? RunSource::kDagsgdCollect : RunSource::kDagsgdTrain;
      // read_manifest keeps every entry inside the run directory.
      for (const auto& t : m->traces) files.push_back((dir / t).string());
      if (files.empty()) {
        for (int r = 0; r < m->ranks; ++r) {
          fs::path p = dir / rank_trace_name(r);
          if (!fs::exists(p) && fs::exists(p.string() + ".gz")) p = p.string() + ".gz";
          files.push_back(p.string());
        }
      } else if (files.size() != static_cast<std::size_t>(m->ranks)) {
        const std::string counts = std::to_string(m->ranks) + " ranks but lists " +
                                   std::to_string(files.size()) + " trace(s)";
        if (m->status == "ok") {
          return model::Error{"manifest '" + manifest_path + "': " + counts +
                              ", and its status is \"ok\""};
        }
        // What a failed collect writes: the ranks that left no trace are in its status.
        run.report.run_problems.push_back(
            ImportProblem{"missing rank traces", 1,
                          "manifest '" + manifest_path + "': " + counts +
                              "; status: " + m->status.substr(0, 200)});
      }
      run.manifest = std::move(*m);
    } else {
      std::error_code ec;
      for (const auto& ent : fs::directory_iterator(dir, ec)) {
        if (ent.is_regular_file() && is_trace_file(ent.path())) files.push_back(ent.path());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) {
        return model::Error{"'" + paths[0] +
                            "': neither a run directory (no manifest.json) nor a directory of "
                            ".json/.json.gz traces"};
      }
    }
  } else {
    for (const auto& p : paths) {
      if (fs::is_directory(p)) {
        return model::Error{"'" + p + "': give either one directory or a list of trace files"};
      }
      files.push_back(p);
    }
  }
  if (options.strict && !run.report.run_problems.empty()) {
    const auto& p = run.report.run_problems.front();
    return model::Error{p.first + " (--strict)"};
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto text = model::read_file(files[i]);
    if (!text) return text.error();
    FileReport rep;
    auto rank = import_trace_text(std::move(*text), files[i], static_cast<int>(i), rep);
    if (!rank) return rank.error();
    rep.rank = rank->rank;
    if (options.strict && !rep.problems.empty()) {
      const auto& p = rep.problems.front();
      return model::Error{"'" + files[i] + "': " + p.kind + " (" + p.first + "); " +
                          std::to_string(p.count) + " in all (--strict)"};
    }
    if (run.manifest) {
      const int ranks = run.manifest->ranks;
      if (rank->world_size_stated && rank->world_size != ranks) {
        return model::Error{"'" + files[i] + "' is a trace of " + std::to_string(rank->world_size) +
                            " ranks, but manifest '" + manifest_path + "' says " +
                            std::to_string(ranks) + ": not from this run"};
      }
      if (rank->rank >= ranks) {
        return model::Error{"'" + files[i] + "' is rank " + std::to_string(rank->rank) +
                            ", but manifest '" + manifest_path + "' says " + std::to_string(ranks) +
                            " ranks"};
      }
    }
    run.ranks.push_back(std::move(*rank));
    run.report.files.push_back(std::move(rep));
  }
  DAGSGD_TRY(check_run_ids(run, manifest_path));
  // Order by rank; two files claiming one rank is bad input.
  std::vector<std::size_t> order(run.ranks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return run.ranks[a].rank < run.ranks[b].rank;
  });
  std::vector<ImportedRank> ranks;
  std::vector<FileReport> reps;
  for (std::size_t i : order) {
    if (!ranks.empty() && ranks.back().rank == run.ranks[i].rank) {
      return model::Error{"'" + run.ranks[i].file + "' and '" + ranks.back().file +
                          "' are both rank " + std::to_string(run.ranks[i].rank)};
    }
    ranks.push_back(std::move(run.ranks[i]));
    reps.push_back(std::move(run.report.files[i]));
  }
  run.ranks = std::move(ranks);
  run.report.files = std::move(reps);
  align_clocks(run, options.align_clocks && run.source == RunSource::kKineto);
  DAGSGD_TRY(check_time_span(run));
  run.origin = 0;
  bool first = true;
  for (const auto& r : run.ranks) {
    for (const auto& e : r.events) {
      if (first || e.ts < run.origin) run.origin = e.ts;
      first = false;
    }
  }
  return run;
}

}  // namespace dagsgd::trace
