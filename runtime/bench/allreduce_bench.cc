// dagsgd-allreduce-bench: MPI_Allreduce latency from --min-bytes to --max-bytes (doubling),
// printed in the OSU micro-benchmark table format so `dagsgd calibrate` reads it like
// osu_allreduce. With --concurrent K, what K non-blocking allreduces in flight at once take
// against one alone (another table, which calibrate does not read as a latency curve).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench_args.h"

namespace {

struct Options : dagsgd::bench::SizeSweep {
  Options() : SizeSweep{4, 1 << 20, 100, 10} {}
  long concurrent = 1;
  long gap_us = 0;
  bool nonblocking = false;
  bool in_place = false;
  bool back_to_back = false;
};

constexpr const char* kUsage =
    "usage: dagsgd-allreduce-bench [--min-bytes N] [--max-bytes N] [--iterations N] "
    "[--warmup N] [--nonblocking] [--in-place] [--back-to-back] [--gap-us N] [--concurrent K]\n"
    "  Times MPI_Allreduce (MPI_FLOAT, MPI_SUM) for sizes min..max bytes, doubling; sizes are\n"
    "  multiples of 4 up to 1 GiB. Defaults: 4 .. 1048576 bytes, 100 iterations (1..1000000)\n"
    "  after 10 warm-up ones (0..1000000).\n"
    "  --nonblocking times MPI_Iallreduce + MPI_Wait instead: Open MPI runs non-blocking\n"
    "  collectives with other algorithms (libnbc) than blocking ones, and the training runtime\n"
    "  issues MPI_Iallreduce. --in-place passes MPI_IN_PLACE as the runtime does (Open MPI 4.1's\n"
    "  in-place MPI_Iallreduce is several times slower on large messages).\n"
    "  --back-to-back leaves out the barrier OSU puts before each call: every rank issues its\n"
    "  calls one after another, as a training loop does, and its latency is its mean time per\n"
    "  call in that stream; Min and Max are then the fastest and the slowest rank's mean.\n"
    "  --gap-us N (0..10000000) makes each rank compute (arithmetic on a 64 KiB buffer, the core\n"
    "  busy) for N us before each call, outside the timed part, as a training loop computes\n"
    "  between its collectives.\n"
    "  --concurrent K (2..64, with --nonblocking) issues K MPI_Iallreduce of each size back to\n"
    "  back, each on its own buffer, and waits for all (MPI_Waitall), as a runtime with gradient\n"
    "  groups in flight does; per size it prints one alone, the K together and together / (K x\n"
    "  alone): 1 when the library runs them one after another, 1/K when they overlap fully.\n";

// Returns "" or the error.
std::string parse(int argc, char** argv, Options& o, bool& help) {
  std::string error = dagsgd::bench::parse_args(
      argc, argv,
      dagsgd::bench::sweep_options(o, {{"--concurrent", &o.concurrent}, {"--gap-us", &o.gap_us}}),
      {{"--nonblocking", &o.nonblocking},
       {"--in-place", &o.in_place},
       {"--back-to-back", &o.back_to_back}},
      help);
  if (!error.empty() || help) return error;
  if (o.min_bytes % 4 != 0) {
    return "--min-bytes must be a multiple of 4 (got " + std::to_string(o.min_bytes) + ")";
  }
  error = dagsgd::bench::check_counts(o, 4);
  if (!error.empty()) return error;
  if (o.concurrent < 1 || o.concurrent > 64) {
    return "--concurrent must be in 1..64 (got " + std::to_string(o.concurrent) + ")";
  }
  if (o.concurrent > 1 && o.max_bytes > (std::int64_t{4} << 30) / (2 * o.concurrent)) {
    return "--concurrent " + std::to_string(o.concurrent) + " x --max-bytes " +
           std::to_string(o.max_bytes) + " needs more than 4 GiB of buffers per rank";
  }
  if (o.gap_us > 10'000'000) {
    return "--gap-us must be in 0..10000000 (got " + std::to_string(o.gap_us) + ")";
  }
  if (o.concurrent > 1 && o.gap_us > 0) {
    return "--gap-us goes with the latency table; it does not go with --concurrent";
  }
  if (o.concurrent > 1 && o.back_to_back) {
    return "--back-to-back times one allreduce at a time; it does not go with --concurrent";
  }
  if (o.concurrent > 1 && !o.nonblocking) {
    return "--concurrent " + std::to_string(o.concurrent) +
           " needs --nonblocking (blocking allreduces cannot be in flight together)";
  }
  return "";
}

// Keeps this rank's core computing for `us` microseconds: multiply-adds over a 64 KiB buffer
// (what a layer's computation does to the core and its cache), checking the clock between passes.
void compute_for(long us) {
  if (us <= 0) return;
  static std::vector<float> work(16384, 1.0f);
  const double until = MPI_Wtime() + static_cast<double>(us) * 1e-6;
  do {
    for (float& v : work) v = v * 0.999f + 0.001f;
  } while (MPI_Wtime() < until);
}

// This rank's time of each timed iteration of `step` (seconds), after the warm-up ones; a
// barrier before the first and after each, as OSU's benchmarks do (`barriers`), or before the
// first only (--back-to-back); --gap-us of computation before each step, not timed.
template <typename Step>
std::vector<double> iteration_times(const Options& o, Step step, bool barriers = true) {
  std::vector<double> times(static_cast<std::size_t>(o.iterations));
  MPI_Barrier(MPI_COMM_WORLD);
  for (long i = 0; i < o.warmup + o.iterations; ++i) {
    compute_for(o.gap_us);
    const double t0 = MPI_Wtime();
    step();
    const double t1 = MPI_Wtime();
    if (i >= o.warmup) times[static_cast<std::size_t>(i - o.warmup)] = t1 - t0;
    if (barriers) MPI_Barrier(MPI_COMM_WORLD);
  }
  return times;
}

// Per iteration the `op` (MPI_MAX: the slowest rank, MPI_MIN: the fastest) over ranks, averaged
// over the iterations, in us (valid on rank 0).
double reduced_mean_us(const std::vector<double>& times, MPI_Op op) {
  std::vector<double> reduced(times.size());
  MPI_Reduce(times.data(), reduced.data(), static_cast<int>(times.size()), MPI_DOUBLE, op, 0,
             MPI_COMM_WORLD);
  double sum = 0;
  for (double t : reduced) sum += t;
  return sum * 1e6 / static_cast<double>(times.size());
}

// --concurrent K: one MPI_Iallreduce alone, then K issued back to back and waited for together.
void concurrency_table(const Options& o, const dagsgd::bench::World& w) {
  const auto k = static_cast<std::size_t>(o.concurrent);
  const auto elements = static_cast<std::size_t>(o.max_bytes / 4);
  std::vector<std::vector<float>> bufs(k, std::vector<float>(elements, 1.0f));
  std::vector<std::vector<float>> recvs(o.in_place ? 0 : k, std::vector<float>(elements, 0.0f));
  if (w.rank == 0) {
    std::printf(
        "# dagsgd allreduce concurrency benchmark, %d ranks, %ld iterations, %ld concurrent "
        "MPI_Iallreduce + MPI_Waitall%s\n",
        w.size, o.iterations, o.concurrent, o.in_place ? ", in place" : "");
    std::printf(
        "# times of the slowest rank, mean over iterations; ratio = together / (%ld x alone)\n",
        o.concurrent);
    std::printf("# Size          Alone(us)     Together(us)      Ratio  Iterations\n");
    std::fflush(stdout);
  }
  std::vector<MPI_Request> requests(k, MPI_REQUEST_NULL);
  for (long bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const int count = static_cast<int>(bytes / 4);
    auto issue = [&](std::size_t n) {
      for (std::size_t j = 0; j < n; ++j) {
        const void* in = o.in_place ? MPI_IN_PLACE : bufs[j].data();
        float* out = o.in_place ? bufs[j].data() : recvs[j].data();
        MPI_Iallreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &requests[j]);
      }
      MPI_Waitall(static_cast<int>(n), requests.data(), MPI_STATUSES_IGNORE);
    };
    const double alone = reduced_mean_us(iteration_times(o, [&] { issue(1); }), MPI_MAX);
    const double together = reduced_mean_us(iteration_times(o, [&] { issue(k); }), MPI_MAX);
    if (w.rank == 0) {
      std::printf("%-10ld%17.2f%17.2f%11.3f%12ld\n", bytes, alone, together,
                  together / (static_cast<double>(k) * alone), o.iterations);
      std::fflush(stdout);
    }
  }
}

// One allreduce at a time: the OSU table calibrate reads.
void latency_table(const Options& o, const dagsgd::bench::World& w) {
  std::vector<float> send(static_cast<std::size_t>(o.max_bytes / 4), 1.0f);
  std::vector<float> recv(send.size(), 0.0f);
  if (w.rank == 0) {
    std::printf(
        "# dagsgd allreduce latency benchmark (OSU format), %d ranks, %ld iterations%s%s%s%s\n",
        w.size, o.iterations, o.nonblocking ? ", MPI_Iallreduce + MPI_Wait" : "",
        o.in_place ? ", in place" : "",
        o.back_to_back ? ", back to back (Min, Max: the fastest, the slowest rank's mean)" : "",
        o.gap_us > 0
            ? (", " + std::to_string(o.gap_us) + " us of computation before each call").c_str()
            : "");
    // OSU's full table (-f). Min and Max here are per iteration: the mean over iterations of
    // the fastest and of the slowest rank's time (when the last rank has its result); back to
    // back, where iterations of different ranks do not line up, the extremes of the ranks' means.
    std::printf("# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n");
    std::fflush(stdout);
  }
  for (long bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const int count = static_cast<int>(bytes / 4);
    const auto times = iteration_times(
        o,
        [&] {
          // In place, the buffer is reduced over and over; the values do not matter.
          const void* in = o.in_place ? MPI_IN_PLACE : send.data();
          float* out = o.in_place ? send.data() : recv.data();
          if (o.nonblocking) {
            MPI_Request request = MPI_REQUEST_NULL;
            MPI_Iallreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
          } else {
            MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
          }
        },
        !o.back_to_back);
    // The average rank's mean time (one 8-byte reduction of each rank's mean), then the
    // slowest's and the fastest's (the calls docs/tracing.md lists).
    double mine = 0;
    for (double t : times) mine += t;
    mine *= 1e6 / static_cast<double>(times.size());
    double sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    const double avg = sum / w.size;
    double slowest = 0;
    double fastest = 0;
    if (o.back_to_back) {
      MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      MPI_Reduce(&mine, &fastest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    } else {
      slowest = reduced_mean_us(times, MPI_MAX);
      fastest = reduced_mean_us(times, MPI_MIN);
    }
    if (w.rank == 0) {
      std::printf("%-10ld%18.2f%18.2f%18.2f%12ld\n", bytes, avg, fastest, slowest, o.iterations);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options o;
  bool help = false;
  std::string error = parse(argc, argv, o, help);
  const dagsgd::bench::World w = dagsgd::bench::world();
  if (help || !error.empty()) {
    return dagsgd::bench::finish_with_usage("dagsgd-allreduce-bench", error, help, kUsage, w);
  }
  if (o.concurrent > 1) {
    concurrency_table(o, w);
  } else {
    latency_table(o, w);
  }
  MPI_Finalize();
  return 0;
}
