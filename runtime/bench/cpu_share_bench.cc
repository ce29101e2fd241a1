// dagsgd-cpu-share-bench: whether ranks waiting in MPI take the CPU from ranks that compute on
// the same cores (the replay's host-CPU model, docs/validation.md "CPU contention").
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "bench_args.h"

namespace {

struct Options {
  long compute_ranks = -1;  // -1: half the ranks
  long spin_millions = 50;
  long iterations = 5;
};

constexpr const char* kUsage =
    "usage: dagsgd-cpu-share-bench [--compute-ranks K] [--spin-millions N] [--iterations N]\n"
    "  Ranks 0..K-1 run the same CPU loop (N million dependent multiply-adds) while the others\n"
    "  wait for them, in two ways, alternating, N iterations each:\n"
    "    sleeping: the waiting ranks test an MPI_Ibarrier every millisecond and sleep between\n"
    "              tests, so they take (almost) no CPU;\n"
    "    polling:  the waiting ranks wait in MPI_Barrier, as a training rank waits in MPI_Wait.\n"
    "  Prints the median time of the loop on a computing rank under each, and their ratio: with\n"
    "  K computing and W waiting ranks on C cores (K >= C), a ratio near (K + W) / K says that a\n"
    "  waiting rank takes a full share of the cores, near 1 that it takes none.\n"
    "  Defaults: K = half the ranks (at least 1), N = 50 million, 5 iterations. Needs 2 ranks.\n";

std::string parse(int argc, char** argv, Options& o, bool& help) {
  std::string error = dagsgd::bench::parse_args(argc, argv,
                                                {{"--compute-ranks", &o.compute_ranks},
                                                 {"--spin-millions", &o.spin_millions},
                                                 {"--iterations", &o.iterations}},
                                                {}, help);
  if (!error.empty() || help) return error;
  if (o.spin_millions < 1 || o.spin_millions > 100000) {
    return "--spin-millions must be in 1..100000 (got " + std::to_string(o.spin_millions) + ")";
  }
  if (o.iterations < 1 || o.iterations > 10000) {
    return "--iterations must be in 1..10000 (got " + std::to_string(o.iterations) + ")";
  }
  return "";
}

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The CPU loop: dependent floating-point multiply-adds the compiler cannot fold.
double spin(long millions) {
  volatile double x = 1.0;
  for (long i = 0; i < millions * 1000000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

// Waits for every rank without taking the CPU: test every millisecond, sleep between.
void sleeping_barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  int done = 0;
  for (;;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done != 0) return;
    timespec ms{0, 1000000};
    nanosleep(&ms, nullptr);
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const dagsgd::bench::World w = dagsgd::bench::world();
  Options o;
  bool help = false;
  std::string error = parse(argc, argv, o, help);
  if (error.empty() && !help) {
    if (o.compute_ranks < 0) o.compute_ranks = std::max(1, w.size / 2);
    if (w.size < 2) {
      error = "needs at least 2 ranks (got " + std::to_string(w.size) + ")";
    } else if (o.compute_ranks < 1 || o.compute_ranks >= w.size) {
      error = "--compute-ranks must be in 1.." + std::to_string(w.size - 1) + " (got " +
              std::to_string(o.compute_ranks) + ")";
    }
  }
  if (help || !error.empty()) {
    return dagsgd::bench::finish_with_usage("dagsgd-cpu-share-bench", error, help, kUsage, w);
  }
  const bool computes = w.rank < o.compute_ranks;
  std::vector<double> times[2];  // [0] sleeping, [1] polling: this rank's loop times
  double sink = 0;
  for (long i = 0; i < o.iterations; ++i) {
    for (int polling = 0; polling < 2; ++polling) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (computes) {
        const double t0 = now_s();
        sink += spin(o.spin_millions);
        times[polling].push_back(now_s() - t0);
      }
      if (polling != 0) {
        MPI_Barrier(MPI_COMM_WORLD);
      } else {
        sleeping_barrier();
      }
    }
  }
  // Rank 0 gathers the computing ranks' times (the others send none).
  double result[2] = {0, 0};
  for (int polling = 0; polling < 2; ++polling) {
    const int mine = static_cast<int>(times[polling].size());
    std::vector<int> counts(static_cast<std::size_t>(w.size));
    MPI_Gather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(counts.size(), 0);
    int total = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      offsets[r] = total;
      total += counts[r];
    }
    std::vector<double> all(static_cast<std::size_t>(std::max(total, 1)));
    MPI_Gatherv(times[polling].data(), mine, MPI_DOUBLE, all.data(), counts.data(), offsets.data(),
                MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (w.rank == 0) {
      all.resize(static_cast<std::size_t>(total));
      result[polling] = median(all);
    }
  }
  if (w.rank == 0) {
    std::printf(
        "# dagsgd cpu share: %ld computing rank(s), %ld waiting, %ld million multiply-adds,"
        " %ld iterations\n",
        o.compute_ranks, static_cast<long>(w.size) - o.compute_ranks, o.spin_millions,
        o.iterations);
    std::printf("sleeping_ms %.1f\npolling_ms %.1f\nratio %.2f\n", result[0] * 1e3, result[1] * 1e3,
                result[0] > 0 ? result[1] / result[0] : 0.0);
  }
  if (sink < 0) std::printf("%g\n", sink);  // keeps the loop's result alive
  MPI_Finalize();
  return 0;
}
