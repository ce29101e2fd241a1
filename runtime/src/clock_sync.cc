// Ping-pong clock offsets (Cristian's method against rank 0) through PMPI so tracers stay silent.
#include "dagsgd/runtime/clock_sync.h"

#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace dagsgd::runtime {

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

namespace {
constexpr int kTag = 0x7C10;
}

ClockSample measure_clock_offset(int rounds) {
  int rank = 0;
  int size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  rounds = std::max(rounds, 1);
  ClockSample mine;
  mine.local_ns = now_ns();
  // Rank 0 serves each other rank in turn; the peer measures t0 (send), t1 (rank 0's reply
  // time) and t2 (receipt), so offset = peer - root = (t0 + t2) / 2 - t1.
  for (int peer = 1; peer < size; ++peer) {
    if (rank == 0) {
      for (int i = 0; i < rounds; ++i) {
        std::int64_t dummy = 0;
        PMPI_Recv(&dummy, 1, MPI_INT64_T, peer, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        std::int64_t t1 = now_ns();
        PMPI_Send(&t1, 1, MPI_INT64_T, peer, kTag, MPI_COMM_WORLD);
      }
    } else if (rank == peer) {
      std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max();
      for (int i = 0; i < rounds; ++i) {
        std::int64_t t0 = now_ns();
        PMPI_Send(&t0, 1, MPI_INT64_T, 0, kTag, MPI_COMM_WORLD);
        std::int64_t t1 = 0;
        PMPI_Recv(&t1, 1, MPI_INT64_T, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        std::int64_t t2 = now_ns();
        if (t2 - t0 < best_rtt) {
          best_rtt = t2 - t0;
          mine.local_ns = t0 + (t2 - t0) / 2;
          mine.offset_ns = mine.local_ns - t1;
          mine.uncertainty_ns = best_rtt / 2;
        }
      }
    }
  }
  return mine;
}

std::int64_t ClockAlignment::offset_at(std::int64_t local_ns) const {
  std::int64_t span = end_.local_ns - start_.local_ns;
  if (span <= 0) return start_.offset_ns;
  // Exact integer interpolation (128-bit so hours of nanoseconds cannot overflow).
  __extension__ using I128 = __int128;
  I128 num = static_cast<I128>(end_.offset_ns - start_.offset_ns) *
             static_cast<I128>(local_ns - start_.local_ns);
  return start_.offset_ns + static_cast<std::int64_t>(num / span);
}

std::int64_t ClockAlignment::residual_ns() const {
  return std::max(start_.uncertainty_ns, end_.uncertainty_ns);
}

double ClockAlignment::drift_ppm() const {
  std::int64_t span = end_.local_ns - start_.local_ns;
  if (span <= 0) return 0;
  return 1e6 * static_cast<double>(end_.offset_ns - start_.offset_ns) / static_cast<double>(span);
}

}  // namespace dagsgd::runtime
