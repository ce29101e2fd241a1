// Units used everywhere in dagsgd: time is int64 nanoseconds, sizes are int64 bytes.
#pragma once

#include <cmath>
#include <cstdint>

namespace dagsgd::model {

using Nanos = std::int64_t;
using Bytes = std::int64_t;

inline constexpr Nanos kNanosPerMicro = 1'000;
inline constexpr Nanos kNanosPerMilli = 1'000'000;
inline constexpr Nanos kNanosPerSecond = 1'000'000'000;

// Rounds to the nearest nanosecond; durations below half a nanosecond become 0.
inline Nanos from_seconds(double seconds) { return std::llround(seconds * 1e9); }
inline Nanos from_micros(double micros) { return std::llround(micros * 1e3); }
inline constexpr double to_seconds(Nanos ns) { return static_cast<double>(ns) * 1e-9; }
inline constexpr double to_micros(Nanos ns) { return static_cast<double>(ns) * 1e-3; }
inline constexpr double to_millis(Nanos ns) { return static_cast<double>(ns) * 1e-6; }

}  // namespace dagsgd::model
