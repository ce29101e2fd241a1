// dagsgd-allreduce-bench: MPI_Allreduce latency from --min-bytes to --max-bytes (doubling),
// printed in the OSU micro-benchmark table format so `dagsgd calibrate` reads it like
// osu_allreduce.
#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  long min_bytes = 4;
  long max_bytes = 1 << 20;
  long iterations = 100;
  long warmup = 10;
  bool nonblocking = false;
  bool in_place = false;
};

// Bounds of the counts: beyond them a run would not end in any useful time, and the per-iteration
// timing arrays (3 doubles per iteration) would not fit in memory.
constexpr long kMaxIterations = 1'000'000;
constexpr long kMaxBytes = 1L << 30;

constexpr const char* kUsage =
    "usage: dagsgd-allreduce-bench [--min-bytes N] [--max-bytes N] [--iterations N] "
    "[--warmup N] [--nonblocking] [--in-place]\n"
    "  Times MPI_Allreduce (MPI_FLOAT, MPI_SUM) for sizes min..max bytes, doubling; sizes are\n"
    "  multiples of 4 up to 1 GiB. Defaults: 4 .. 1048576 bytes, 100 iterations (1..1000000)\n"
    "  after 10 warm-up ones (0..1000000).\n"
    "  --nonblocking times MPI_Iallreduce + MPI_Wait instead: Open MPI runs non-blocking\n"
    "  collectives with other algorithms (libnbc) than blocking ones, and the training runtime\n"
    "  issues MPI_Iallreduce. --in-place passes MPI_IN_PLACE as the runtime does (Open MPI 4.1's\n"
    "  in-place MPI_Iallreduce is several times slower on large messages).\n";

std::string check(const Options& o);

// Returns "" or the error; parses "--name N" and "--name=N".
std::string parse(int argc, char** argv, Options& o, bool& help) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return "";
    }
    if (arg == "--nonblocking" || arg == "--in-place") {
      (arg == "--nonblocking" ? o.nonblocking : o.in_place) = true;
      continue;
    }
    std::string value;
    auto eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return "option '" + arg + "' needs a value";
    }
    long* target = nullptr;
    if (arg == "--min-bytes") target = &o.min_bytes;
    if (arg == "--max-bytes") target = &o.max_bytes;
    if (arg == "--iterations") target = &o.iterations;
    if (arg == "--warmup") target = &o.warmup;
    if (target == nullptr) {
      return "unknown option '" + arg +
             "' (valid: --min-bytes, --max-bytes, --iterations, --warmup, --nonblocking, "
             "--in-place, --help)";
    }
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(value.c_str(), &end, 10);
    if (errno != 0 || end == value.c_str() || *end != '\0' || v < 0) {
      return arg + ": '" + value + "' is not a non-negative integer";
    }
    *target = v;
  }
  return check(o);
}

std::string check(const Options& o) {
  if (o.min_bytes < 4 || o.min_bytes % 4 != 0 || o.min_bytes > kMaxBytes) {
    return "--min-bytes must be a multiple of 4 in 4.." + std::to_string(kMaxBytes) + " (got " +
           std::to_string(o.min_bytes) + ")";
  }
  if (o.max_bytes < o.min_bytes) return "--max-bytes is below --min-bytes";
  if (o.max_bytes > kMaxBytes) return "--max-bytes is above 1 GiB";
  if (o.iterations < 1 || o.iterations > kMaxIterations) {
    return "--iterations must be in 1.." + std::to_string(kMaxIterations) + " (got " +
           std::to_string(o.iterations) + ")";
  }
  if (o.warmup > kMaxIterations) {
    return "--warmup must be in 0.." + std::to_string(kMaxIterations) + " (got " +
           std::to_string(o.warmup) + ")";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Options o;
  bool help = false;
  std::string error = parse(argc, argv, o, help);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (help || !error.empty()) {
    if (rank == 0) {
      if (!error.empty())
        std::fprintf(stderr, "dagsgd-allreduce-bench: error: %s\n", error.c_str());
      std::fputs(kUsage, help ? stdout : stderr);
    }
    MPI_Finalize();
    return help ? 0 : 2;
  }
  std::vector<float> send(static_cast<std::size_t>(o.max_bytes / 4), 1.0f);
  std::vector<float> recv(send.size(), 0.0f);
  if (rank == 0) {
    std::printf("# dagsgd allreduce latency benchmark (OSU format), %d ranks, %ld iterations%s%s\n",
                size, o.iterations, o.nonblocking ? ", MPI_Iallreduce + MPI_Wait" : "",
                o.in_place ? ", in place" : "");
    // OSU's full table (-f). Min and Max here are per iteration: the mean over iterations of
    // the fastest and of the slowest rank's time (when the last rank has its result).
    std::printf("# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n");
    std::fflush(stdout);
  }
  for (long bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    int count = static_cast<int>(bytes / 4);
    double total = 0;
    std::vector<double> times(static_cast<std::size_t>(o.iterations));
    MPI_Barrier(MPI_COMM_WORLD);
    for (long i = 0; i < o.warmup + o.iterations; ++i) {
      double t0 = MPI_Wtime();
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
      double t1 = MPI_Wtime();
      if (i >= o.warmup) {
        total += t1 - t0;
        times[static_cast<std::size_t>(i - o.warmup)] = t1 - t0;
      }
      MPI_Barrier(MPI_COMM_WORLD);
    }
    double mine = total * 1e6 / static_cast<double>(o.iterations);
    double sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    std::vector<double> slowest(times.size());
    std::vector<double> fastest(times.size());
    MPI_Reduce(times.data(), slowest.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, 0,
               MPI_COMM_WORLD);
    MPI_Reduce(times.data(), fastest.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MIN, 0,
               MPI_COMM_WORLD);
    if (rank == 0) {
      double max_sum = 0;
      double min_sum = 0;
      for (std::size_t k = 0; k < times.size(); ++k) {
        max_sum += slowest[k];
        min_sum += fastest[k];
      }
      const double n = static_cast<double>(o.iterations);
      std::printf("%-10ld%18.2f%18.2f%18.2f%12ld\n", bytes, sum / size, min_sum * 1e6 / n,
                  max_sum * 1e6 / n, o.iterations);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
