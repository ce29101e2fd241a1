// dagsgd-pingpong-bench: MPI_Send/MPI_Recv round-trip times between rank pairs across hosts,
// the emulated cluster's natural point-to-point latency (docs/validation.md).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_args.h"

namespace {

struct Options : dagsgd::bench::SizeSweep {
  Options() : SizeSweep{4, 4, 1000, 100} {}
};

constexpr const char* kUsage =
    "usage: dagsgd-pingpong-bench [--min-bytes N] [--max-bytes N] [--iterations N] [--warmup N]\n"
    "  Rank r of the lower half sends N bytes to rank r + size/2 and waits for them back\n"
    "  (MPI_Send/MPI_Recv), for sizes min..max bytes, doubling; all pairs at once. With ranks\n"
    "  placed host by host (mpirun's default) the pairs cross hosts. Prints per size the median,\n"
    "  mean, minimum and 90th percentile round trip over every pair's iterations, in us.\n"
    "  Needs an even number of ranks. Defaults: 4 .. 4 bytes, 1000 iterations after 100 warm-up.\n";

// Returns "" or the error.
std::string parse(int argc, char** argv, Options& o, bool& help) {
  std::string error =
      dagsgd::bench::parse_args(argc, argv, dagsgd::bench::sweep_options(o, {}), {}, help);
  if (!error.empty() || help) return error;
  return dagsgd::bench::check_counts(o, 1);
}

double percentile(const std::vector<double>& sorted, double q) {
  auto k = static_cast<std::size_t>(std::lround(q * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(k, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const dagsgd::bench::World w = dagsgd::bench::world();
  const int rank = w.rank;
  const int size = w.size;
  Options o;
  bool help = false;
  std::string error = parse(argc, argv, o, help);
  if (error.empty() && !help && size % 2 != 0) {
    error = "needs an even number of ranks (got " + std::to_string(size) + ")";
  }
  if (help || !error.empty()) {
    return dagsgd::bench::finish_with_usage("dagsgd-pingpong-bench", error, help, kUsage, w);
  }
  const int half = size / 2;
  const bool initiator = rank < half;
  const int peer = initiator ? rank + half : rank - half;
  std::vector<char> buffer(static_cast<std::size_t>(o.max_bytes), 1);
  if (rank == 0) {
    std::printf("# dagsgd ping-pong round trip, %d pair(s), %ld iterations\n", half, o.iterations);
    std::printf("# Size    Median RTT(us)      Mean RTT(us)       Min RTT(us)       P90 RTT(us)\n");
    std::fflush(stdout);
  }
  for (long bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const int count = static_cast<int>(bytes);
    std::vector<double> times(static_cast<std::size_t>(o.iterations));
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < o.warmup + o.iterations; ++i) {
      double t0 = MPI_Wtime();
      if (initiator) {
        MPI_Send(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), count, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
      }
      if (i >= o.warmup) times[static_cast<std::size_t>(i - o.warmup)] = MPI_Wtime() - t0;
    }
    // Only the initiators' times are round trips; rank 0 gathers all and keeps those.
    std::vector<double> all(rank == 0 ? times.size() * static_cast<std::size_t>(size) : 0);
    MPI_Gather(times.data(), static_cast<int>(times.size()), MPI_DOUBLE, all.data(),
               static_cast<int>(times.size()), MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      all.resize(times.size() * static_cast<std::size_t>(half));
      std::sort(all.begin(), all.end());
      double sum = 0;
      for (double t : all) sum += t;
      std::printf("%-10ld%16.2f%18.2f%18.2f%18.2f\n", bytes, percentile(all, 0.5) * 1e6,
                  sum / static_cast<double>(all.size()) * 1e6, all.front() * 1e6,
                  percentile(all, 0.9) * 1e6);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
