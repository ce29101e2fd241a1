// What the MPI micro-benchmarks (dagsgd-allreduce-bench, dagsgd-pingpong-bench,
// dagsgd-cpu-share-bench) share: "--name N" / "--name=N" non-negative integers and value-less
// flags, the sizes and counts of a latency sweep, the rank's place, the usage exit.
#pragma once

#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

namespace dagsgd::bench {

struct IntOption {
  const char* name;
  long* target;
};

struct FlagOption {
  const char* name;
  bool* target;
};

// Returns "" or the error naming the option; -h / --help set `help` and stop.
inline std::string parse_args(int argc, char** argv, const std::vector<IntOption>& ints,
                              std::initializer_list<FlagOption> flags, bool& help) {
  auto valid = [&] {
    std::string v;
    for (const auto& o : ints) v += std::string(v.empty() ? "" : ", ") + o.name;
    for (const auto& f : flags) v += std::string(", ") + f.name;
    return v + ", --help";
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return "";
    }
    bool* flag = nullptr;
    for (const auto& f : flags) {
      if (arg == f.name) flag = f.target;
    }
    if (flag != nullptr) {
      *flag = true;
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
    for (const auto& o : ints) {
      if (arg == o.name) target = o.target;
    }
    if (target == nullptr) return "unknown option '" + arg + "' (valid: " + valid() + ")";
    char* end = nullptr;
    errno = 0;
    long v = std::strtol(value.c_str(), &end, 10);
    if (errno != 0 || end == value.c_str() || *end != '\0' || v < 0) {
      return "option '" + arg + "': '" + value + "' is not a non-negative integer";
    }
    *target = v;
  }
  return "";
}

// A latency sweep: message sizes from min_bytes to max_bytes, doubling; per size `warmup` untimed
// calls, then `iterations` timed ones.
struct SizeSweep {
  long min_bytes = 4;
  long max_bytes = 4;
  long iterations = 1;
  long warmup = 0;
};

// The sweep's options (--min-bytes, --max-bytes, --iterations, --warmup), then `more`.
inline std::vector<IntOption> sweep_options(SizeSweep& s, std::initializer_list<IntOption> more) {
  std::vector<IntOption> out = {{"--min-bytes", &s.min_bytes},
                                {"--max-bytes", &s.max_bytes},
                                {"--iterations", &s.iterations},
                                {"--warmup", &s.warmup}};
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

// Bounds of the counts: beyond them a run would not end in any useful time, and the per-iteration
// timing arrays (a few doubles per iteration) would not fit in memory.
constexpr long kMaxIterations = 1'000'000;
constexpr long kMaxBytes = 1L << 30;

// Returns "" or the error naming the option: sizes in min_size..1 GiB, min <= max, counts bounded.
inline std::string check_counts(const SizeSweep& s, long min_size) {
  const auto [min_bytes, max_bytes, iterations, warmup] = s;
  if (min_bytes < min_size || min_bytes > kMaxBytes) {
    return "--min-bytes must be in " + std::to_string(min_size) + ".." + std::to_string(kMaxBytes) +
           " (got " + std::to_string(min_bytes) + ")";
  }
  if (max_bytes < min_bytes) return "--max-bytes is below --min-bytes";
  if (max_bytes > kMaxBytes) return "--max-bytes is above 1 GiB";
  if (iterations < 1 || iterations > kMaxIterations) {
    return "--iterations must be in 1.." + std::to_string(kMaxIterations) + " (got " +
           std::to_string(iterations) + ")";
  }
  if (warmup > kMaxIterations) {
    return "--warmup must be in 0.." + std::to_string(kMaxIterations) + " (got " +
           std::to_string(warmup) + ")";
  }
  return "";
}

struct World {
  int rank = 0;
  int size = 1;
};

// This rank and the size of MPI_COMM_WORLD (MPI initialised).
inline World world() {
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  return w;
}

// After --help or a bad command line: rank 0 prints the error (if any) and the usage, every rank
// finalizes MPI; returns the exit code (0 for help, 2 for bad usage).
inline int finish_with_usage(const char* tool, const std::string& error, bool help,
                             const char* usage, const World& w) {
  if (w.rank == 0) {
    if (!error.empty()) std::fprintf(stderr, "%s: error: %s\n", tool, error.c_str());
    std::fputs(usage, help ? stdout : stderr);
  }
  MPI_Finalize();
  return help ? 0 : 2;
}

}  // namespace dagsgd::bench
