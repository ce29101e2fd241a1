// Cross-rank clock alignment: ping-pong offsets to rank 0 at start and end, drift corrected
// linearly.
#pragma once

#include <cstdint>

namespace dagsgd::runtime {

// This process's trace clock (CLOCK_MONOTONIC), in nanoseconds.
std::int64_t now_ns();

// One measurement of this rank's clock against rank 0's: global = local - offset_ns.
struct ClockSample {
  std::int64_t local_ns = 0;        // local time at which the offset was measured
  std::int64_t offset_ns = 0;       // local clock minus rank 0's clock
  std::int64_t uncertainty_ns = 0;  // half the best round-trip time (0 on rank 0)
};

// Collective over MPI_COMM_WORLD (every rank must call it, after MPI_Init). Uses PMPI_ calls only,
// so it runs unseen inside the PMPI tracer too. Keeps the round with the smallest round trip.
ClockSample measure_clock_offset(int rounds = 16);

// Offsets at two instants; in between (and beyond) the offset is interpolated linearly.
class ClockAlignment {
 public:
  ClockAlignment() = default;
  explicit ClockAlignment(ClockSample start) : start_(start), end_(start) {}
  void set_end(ClockSample end) { end_ = end; }

  std::int64_t offset_at(std::int64_t local_ns) const;
  // Maps a local timestamp onto rank 0's clock.
  std::int64_t to_global(std::int64_t local_ns) const { return local_ns - offset_at(local_ns); }
  // How far the line can be off: the worst uncertainty of its two samples, plus the drift
  // disagreement when both ends were measured.
  std::int64_t residual_ns() const;
  double drift_ppm() const;

 private:
  ClockSample start_;
  ClockSample end_;
};

}  // namespace dagsgd::runtime
