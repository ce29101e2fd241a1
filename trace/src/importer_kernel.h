// The boundary between the trace reader's portable part and its JSON walk, which is compiled once
// per simdjson kernel (importer_kernel_*.cc) and chosen by the CPU at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "dagsgd/model/units.h"

namespace dagsgd::trace::detail {

// What an event's args and distributedInfo may state (docs/limits.md): a message of at most
// 1e15 bytes (1 PB), at most 2^20 ranks, as the cost models take.
inline constexpr std::int64_t kMaxEventBytes = 1'000'000'000'000'000;
inline constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;
// simdjson's padding: the walk reads up to this many bytes past the text's end.
inline constexpr std::size_t kTextPadding = 64;
// The walk reads traceEvents a window of about this many bytes at a time: simdjson's index of a
// whole file takes 4 bytes per JSON token (~0.8x a Kineto trace) and outgrows the caches, a
// window's does neither.
inline constexpr std::size_t kWindowBytes = std::size_t{1} << 20;

// What one record of traceEvents holds before it is classified. Strings view the file's text
// (or the parser's buffer when they had escapes): valid until the next record.
struct RawEvent {
  std::string_view name, cat, ph, collective, algorithm, phase, dtype, arg_name;
  std::string_view grid, block;  // a kernel's launch shape: the arrays as written
  std::string_view group_ranks;  // NCCL "Process Group Ranks": "[0, 1]" (string or array)
  model::Nanos ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, bad_ts = false, bad_dur = false;
  bool ts_out_of_range = false, dur_out_of_range = false;
  std::string_view ts_token, dur_token;  // as written, for messages
  bool bad_args = false;                 // an args number that does not fit its field
  std::string_view bad_arg;
  bool pid_numeric = false;
  std::int64_t pid = 0, tid = 0, id = -1;
  std::int64_t correlation = -1, bytes = -1, nelems = -1, out_nelems = -1, layer = -1;
  std::int64_t iteration = -1, bucket = -1;
  std::int64_t group_size = 0, wait_stream = -2, wait_corr = -1, device = -1, stream = -1;
  std::int64_t rank = -1, world_size = -1;
  // dagsgd_clock_sync
  std::int64_t drift_t0 = 0, drift_t1 = 0, drift_c = 0;
  bool has_drift = false;
};

// distributedInfo fields the reader keeps.
enum class InfoField : std::uint8_t { kRank, kWorldSize, kBackend, kRunId };

// What the JSON walk hands over, implemented by the portable reader (file_parser.cc): the
// walk itself holds no containers, so nothing compiled for a wider instruction set is shared.
class EventSink {
 public:
  EventSink() = default;
  EventSink(const EventSink&) = delete;
  EventSink& operator=(const EventSink&) = delete;
  virtual ~EventSink() = default;
  virtual void event(const RawEvent& e) = 0;
  // A traceEvents entry that is not an object (`type`: "array", "number", ...).
  virtual void not_an_object(const char* type) = 0;
  // False stops the walk (the value is out of range: the import fails).
  virtual bool info_int(InfoField f, std::int64_t x) = 0;
  // A rank or world size that is not an integer dagsgd can hold (`token`: its JSON text); the
  // walk stops, and the import fails naming it.
  virtual void info_not_int(InfoField f, std::string_view token) = 0;
  virtual void info_string(InfoField f, std::string_view s) = 0;
  virtual void base_time(std::int64_t ns) = 0;
  // Forget everything handed over so far: the walk starts again over the whole text.
  virtual void reset() = 0;
};

enum class WalkStatus : std::uint8_t {
  kOk,
  kNotJson,         // simdjson would not start (or failed before traceEvents)
  kNotObject,       // the top level is not an object
  kEventsNotArray,  // traceEvents is not an array
  kTrailing,        // more JSON after the root object (a second document, or a stray value)
  kStopped,         // EventSink::info_int refused a value, or info_not_int was told one
};

struct WalkResult {
  WalkStatus status = WalkStatus::kOk;
  bool events_seen = false;    // a traceEvents array was opened
  bool failed_inside = false;  // the JSON broke after traceEvents opened (a cut tail?)
  bool part_read = false;      // a split walk (WalkPart) read its part cleanly
};

// A text read in two parts at once (file_parser.cc): the first part is the head and the
// events up to the ',' at `split`, the second the events after it, what follows the array and
// the root's end. Each part reads its windows as the whole walk would, each into its own sink;
// the second part reads its first window from `scratch` (a copy, so that neither part writes
// bytes the other reads) and writes nothing into the text within kTextPadding + 16 bytes after
// `split` (the first part's parser may read kTextPadding bytes past its last window).
struct WalkPart {
  std::size_t split = 0;  // 0: the whole text, as one walk
  bool second = false;
  char* scratch = nullptr;  // the second part: at least kPartScratch bytes
};
// The second part's copy of its first window: two windows, its brackets and the padding.
inline constexpr std::size_t kPartScratch = 2 * kWindowBytes + 2 + kTextPadding;

// One file's text: `capacity` bytes are allocated at `text` (at least size + kTextPadding).
// The walk writes brackets into the text to read it in windows and puts the bytes back before
// it returns.
// `window`: the bytes of traceEvents read at a time (kWindowBytes; tests use small ones), at
// most kWindowBytes when `part` splits the text.
// With a split, the first part is the whole walk when anything in it is unusual, or when
// traceEvents ends before `split` (`part_read` false then: the second part is of no use); the
// second part only reads, and fails (`failed_inside`) on anything unusual.
using WalkFn = WalkResult (*)(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                              std::size_t window, const WalkPart& part);

struct Kernel {
  const char* name;  // simdjson's implementation name: "icelake", "haswell", "fallback", ...
  WalkFn walk;
};

// The kernels built into this binary that this CPU can run, best first.
std::span<const Kernel> runnable_kernels();

// Each kernel's walk and the name of the simdjson implementation it was built as
// (importer_kernel_<name>.cc); which exist depends on the build.
WalkResult walk_portable(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                         std::size_t window, const WalkPart& part);
const char* portable_kernel_name();
#ifdef DAGSGD_KERNEL_HASWELL
WalkResult walk_haswell(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                        std::size_t window, const WalkPart& part);
const char* haswell_kernel_name();
#endif
#ifdef DAGSGD_KERNEL_ICELAKE
WalkResult walk_icelake(char* text, std::size_t size, std::size_t capacity, EventSink& sink,
                        std::size_t window, const WalkPart& part);
const char* icelake_kernel_name();
#endif

}  // namespace dagsgd::trace::detail
