// Units used everywhere in dagsgd: time is int64 nanoseconds, sizes are int64 bytes; the ranges
// a time may take so that sums and differences never overflow (docs/limits.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "dagsgd/model/expected.h"

namespace dagsgd::model {

using Nanos = std::int64_t;
using Bytes = std::int64_t;

inline constexpr Nanos kNanosPerMicro = 1'000;
inline constexpr Nanos kNanosPerMilli = 1'000'000;
inline constexpr Nanos kNanosPerSecond = 1'000'000'000;

// The longest duration dagsgd takes from a file or computes: below 1e15 ns (11.6 days). A task,
// collective, layer, step or trace event at or above it is an error ("out of range"), never
// a number that overflows later: 9,000 such durations still add up inside int64.
inline constexpr Nanos kMaxDuration = 1'000'000'000'000'000;
// Timestamps (trace 'ts', after unit conversion): |ts| at most 3e18 ns, the Unix epoch of
// 2065, so that the difference of two timestamps plus a duration still fits in int64.
inline constexpr Nanos kMaxTimestamp = 3'000'000'000'000'000'000;

// Rounds to the nearest nanosecond; durations below half a nanosecond become 0. Never undefined:
// values beyond +-kMaxTimestamp (and NaN) come back as +-kMaxTimestamp, which every duration
// check rejects. Use duration_ns where bad input must become an Error.
inline Nanos saturating_nanos(double ns) {
  if (!(ns < static_cast<double>(kMaxTimestamp))) return kMaxTimestamp;  // NaN included
  if (ns <= -static_cast<double>(kMaxTimestamp)) return -kMaxTimestamp;
  return std::llround(ns);
}
// a + b, saturating at +-kMaxTimestamp like saturating_nanos: for sums of durations that may
// already be saturated.
inline Nanos saturating_add(Nanos a, Nanos b) {
  Nanos r = 0;
  if (__builtin_add_overflow(a, b, &r) || r > kMaxTimestamp)
    return a < 0 && b < 0 ? -kMaxTimestamp : kMaxTimestamp;
  return r < -kMaxTimestamp ? -kMaxTimestamp : r;
}
inline Nanos from_seconds(double seconds) { return saturating_nanos(seconds * 1e9); }
inline Nanos from_micros(double micros) { return saturating_nanos(micros * 1e3); }
inline constexpr double to_seconds(Nanos ns) { return static_cast<double>(ns) * 1e-9; }
inline constexpr double to_micros(Nanos ns) { return static_cast<double>(ns) * 1e-3; }
inline constexpr double to_millis(Nanos ns) { return static_cast<double>(ns) * 1e-6; }

// `value` units of `ns_per_unit` ns each as a duration: an Error naming `what` unless the
// product is finite, >= 0 and below kMaxDuration ("what: 1e+20 s is out of range ...").
Expected<Nanos> duration_ns(double value, double ns_per_unit, const std::string& what);
// The same for a duration already in (floating) nanoseconds.
inline Expected<Nanos> duration_ns(double ns, const std::string& what) {
  return duration_ns(ns, 1.0, what);
}

}  // namespace dagsgd::model
