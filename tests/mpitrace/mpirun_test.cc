// The tracer under mpirun: every call of the bundled benchmark and of mpi_calls.cc is recorded
// with the right sizes; `dagsgd collect` writes a run directory, also when a rank is killed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "common/text.h"
#include "dagsgd/mpitrace/recorder.h"
#include "dagsgd/trace/manifest.h"
#include "dagsgd/trace/osu_log.h"
#include "test_util.h"

namespace dagsgd::mpitrace {
namespace {

using ::dagsgd::testing::contains;
using testing::fresh_dir;
using testing::mpirun;
using testing::read_trace;
using testing::run;

std::string traced(const std::string& dir) {
  return " -x LD_PRELOAD=" + std::string(DAGSGD_MPITRACE_LIB) + " -x DAGSGD_TRACE_DIR=" + dir;
}

// A fresh, existing directory for the traces of one test.
std::string trace_dir(const std::string& name) {
  std::string dir = fresh_dir(name);
  std::filesystem::create_directories(dir);
  return dir;
}

// `program ARGS` on `ranks` ranks, each tracing into `dir`.
testing::CommandResult run_traced(int ranks, const std::string& dir, const std::string& program,
                                  const std::string& args) {
  return run(mpirun(ranks) + traced(dir) + " " + program + " " + args);
}

// The allreduce benchmark called as the training runtime calls MPI (non-blocking, in place, one
// call after another), traced into `dir`.
testing::CommandResult run_as_the_runtime(int ranks, const std::string& dir,
                                          const std::string& args) {
  return run_traced(ranks, dir, DAGSGD_ALLREDUCE_BENCH,
                    "--nonblocking --in-place --back-to-back " + args);
}

std::string rank_trace_path(const std::string& dir, int rank) {
  return dir + "/rank-" + std::to_string(rank) + ".trace.json";
}

std::vector<nlohmann::json> spans(const nlohmann::json& trace, const std::string& name) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == name) out.push_back(e);
  }
  return out;
}

// Every span follows the documented layout (docs/tracing.md).
void expect_layout(const nlohmann::json& trace, int rank, int ranks) {
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["cat"], "cpu_op") << e;
    EXPECT_EQ(e["pid"], rank) << e;
    EXPECT_EQ(e["args"]["phase"], "comm") << e;
    EXPECT_TRUE(e["args"].contains("collective")) << e;
    EXPECT_TRUE(e["args"].contains("bytes")) << e;
    EXPECT_GE(e["dur"].get<double>(), 0.0) << e;
    if (e["args"].contains("comm_size")) {
      EXPECT_EQ(e["args"]["comm_size"], ranks) << e;
    }
  }
}

// --concurrent: K requests in flight against one alone, in a table of its own that calibrate
// does not take for a latency curve.
TEST(AllreduceBench, ConcurrentRequestsHaveTheirOwnTable) {
  auto r = run(mpirun(2) + " " + DAGSGD_ALLREDUCE_BENCH +
               " --nonblocking --in-place --concurrent 3 --min-bytes 4 --max-bytes 64 "
               "--iterations 3 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "3 concurrent MPI_Iallreduce + MPI_Waitall, in place"))
      << r.output;
  const std::string header = "Ratio  Iterations\n";
  const auto rows = r.output.find(header);
  const auto table = r.output.find("# dagsgd allreduce concurrency");
  ASSERT_NE(rows, std::string::npos) << r.output;
  ASSERT_NE(table, std::string::npos) << r.output;
  std::istringstream lines(r.output.substr(rows + header.size()));
  std::vector<long> sizes;
  long size = 0;
  double alone = 0;
  double together = 0;
  double ratio = 0;
  long iterations = 0;
  while (lines >> size >> alone >> together >> ratio >> iterations) {
    sizes.push_back(size);
    EXPECT_GT(alone, 0) << r.output;
    EXPECT_GT(together, 0) << r.output;
    // The ratio is computed before the times are rounded to 0.01 us for printing.
    EXPECT_NEAR(ratio, together / (3 * alone), 6e-4 + ratio * (0.006 / alone + 0.006 / together))
        << r.output;
    EXPECT_EQ(iterations, 3);
  }
  EXPECT_EQ(sizes, (std::vector<long>{4, 8, 16, 32, 64})) << r.output;

  const std::string dir = trace_dir("concurrent");
  const std::string log = dir + "/concurrent.log";
  {
    std::ofstream out(log);
    out << r.output.substr(table);
  }
  auto c = run(std::string(DAGSGD_BINARY) + " calibrate " + log);
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_TRUE(contains(c.output, log)) << c.output;
}

// --back-to-back: no barrier between calls (one before each size's first), and the same OSU
// table of each rank's mean per call, the fastest and the slowest rank's mean as Min and Max,
// which calibrate's log reader takes as any other OSU full table.
TEST(AllreduceBench, BackToBackIsAnOsuTableOfTheRanksMeans) {
  const std::string dir = trace_dir("back-to-back");
  auto r =
      run_as_the_runtime(3, dir, "--min-bytes 4096 --max-bytes 16384 --iterations 5 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto table = r.output.find("# dagsgd allreduce latency");
  ASSERT_NE(table, std::string::npos) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "3 ranks, 5 iterations, MPI_Iallreduce + MPI_Wait, in place, back to "
                       "back (Min, Max: the fastest, the slowest rank's mean)"))
      << r.output;
  // Whether a link can be fitted to it depends on the machine's noise: only the reading is
  // checked here.
  auto log = trace::parse_latency_log(r.output.substr(table), "back-to-back");
  ASSERT_TRUE(log.ok()) << log.error().message;
  EXPECT_EQ(log->format, "osu");
  std::vector<std::int64_t> sizes;
  for (const auto& p : log->points) {
    sizes.push_back(p.bytes);
    EXPECT_GT(p.min_latency_us, 0) << r.output;
    // The average of the ranks' means lies between the smallest and the largest of them.
    EXPECT_LE(p.min_latency_us, p.latency_us + 0.01) << r.output;
    EXPECT_LE(p.latency_us, p.max_latency_us + 0.01) << r.output;
  }
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{4096, 8192, 16384})) << r.output;
  for (int rank = 0; rank < 3; ++rank) {
    auto t = read_trace(rank_trace_path(dir, rank));
    ASSERT_TRUE(t.is_object());
    // Per size one barrier and three 8-byte reductions (the rank's mean, then its max and min).
    EXPECT_EQ(spans(t, "MPI_Barrier").size(), 3u) << "rank " << rank;
    auto reduces = spans(t, "MPI_Reduce");
    EXPECT_EQ(reduces.size(), 9u) << "rank " << rank;
    for (const auto& e : reduces) EXPECT_EQ(e["args"]["bytes"], 8);
  }
  std::filesystem::remove_all(dir);
}

// --gap-us: each rank computes that long before each call, outside the timed part; in the trace
// every call starts at least the gap after the previous one ended (the loop checks the clock, so
// the bound holds however loaded the machine is).
TEST(AllreduceBench, GapComputesBetweenTheCalls) {
  const std::string dir = trace_dir("gap");
  auto r = run_as_the_runtime(
      2, dir, "--gap-us 20000 --min-bytes 4096 --max-bytes 4096 --iterations 3 --warmup 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "back to back (Min, Max: the fastest, the slowest rank's mean), 20000 "
                       "us of computation before each call"))
      << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    auto t = read_trace(rank_trace_path(dir, rank));
    ASSERT_TRUE(t.is_object());
    auto issues = spans(t, "MPI_Iallreduce");
    auto waits = spans(t, "MPI_Wait");
    ASSERT_EQ(issues.size(), 4u) << "rank " << rank;  // the warm-up call and the 3 timed ones
    ASSERT_EQ(waits.size(), 4u) << "rank " << rank;
    for (std::size_t i = 1; i < issues.size(); ++i) {
      const double ended = waits[i - 1]["ts"].get<double>() + waits[i - 1]["dur"].get<double>();
      EXPECT_GE(issues[i]["ts"].get<double>() - ended, 20000.0) << "rank " << rank << " call " << i;
    }
  }
  std::filesystem::remove_all(dir);
}

// dagsgd-cpu-share-bench: the loop's median time with the waiting ranks sleeping and polling,
// and their ratio (its value depends on the machine's cores, so only its consistency is checked).
TEST(CpuShareBench, PrintsBothWaysAndTheirRatio) {
  auto r = run(mpirun(3) + " " + DAGSGD_CPU_SHARE_BENCH +
               " --compute-ranks 1 --spin-millions 2 --iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "# dagsgd cpu share: 1 computing rank(s), 2 waiting")) << r.output;
  std::map<std::string, double> values;
  std::istringstream lines(r.output);
  std::string key;
  double value = 0;
  while (lines >> key) {
    if (key == "sleeping_ms" || key == "polling_ms" || key == "ratio") {
      ASSERT_TRUE(lines >> value) << r.output;
      values[key] = value;
    } else {
      lines.ignore(1 << 20, '\n');
    }
  }
  ASSERT_EQ(values.size(), 3u) << r.output;
  EXPECT_GT(values["sleeping_ms"], 0) << r.output;
  EXPECT_GT(values["polling_ms"], 0) << r.output;
  // Printed to 0.1 ms and 0.01.
  EXPECT_NEAR(values["ratio"], values["polling_ms"] / values["sleeping_ms"],
              0.006 + values["ratio"] * 0.06 / values["sleeping_ms"])
      << r.output;

  auto all = run(mpirun(2) + " " + DAGSGD_CPU_SHARE_BENCH + " --compute-ranks 2");
  EXPECT_EQ(all.exit_code, 2) << all.output;
  EXPECT_TRUE(contains(all.output, "--compute-ranks must be in 1..1 (got 2)")) << all.output;
}

TEST(MpiTrace, RecordsEveryBenchmarkCallWithItsBytes) {
  std::string dir = trace_dir("bench");
  auto r = run_traced(2, dir, DAGSGD_ALLREDUCE_BENCH,
                      "--min-bytes 4 --max-bytes 64 --iterations 4 --warmup 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The OSU table that `dagsgd calibrate` reads.
  EXPECT_TRUE(contains(r.output,
                       "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  "
                       "Iterations\n4 "))
      << r.output;
  EXPECT_TRUE(contains(r.output, "\n64 ")) << r.output;
  std::string run_id;  // without collect, rank 0 makes one for all
  for (int rank = 0; rank < 2; ++rank) {
    auto t = read_trace(rank_trace_path(dir, rank));
    ASSERT_TRUE(t.is_object());
    EXPECT_EQ(t["distributedInfo"]["rank"], rank);
    if (rank == 0) run_id = t["distributedInfo"]["run_id"];
    EXPECT_FALSE(run_id.empty());
    EXPECT_EQ(t["distributedInfo"]["run_id"], run_id);
    expect_layout(t, rank, 2);
    std::map<std::int64_t, int> by_size;
    for (const auto& e : spans(t, "MPI_Allreduce")) {
      EXPECT_EQ(e["args"]["collective"], "allreduce");
      ++by_size[e["args"]["bytes"].get<std::int64_t>()];
    }
    std::map<std::int64_t, int> expected = {{4, 6}, {8, 6}, {16, 6}, {32, 6}, {64, 6}};
    EXPECT_EQ(by_size, expected) << "rank " << rank;
    // One barrier before each size and one after each of its 6 allreduces.
    auto barriers = spans(t, "MPI_Barrier");
    EXPECT_EQ(barriers.size(), 35u);
    for (const auto& e : barriers) EXPECT_EQ(e["args"]["bytes"], 0);
    // Per size: the mean latency (one double), then the slowest and fastest rank of each of
    // the 4 iterations (4 doubles each).
    auto reduces = spans(t, "MPI_Reduce");
    ASSERT_EQ(reduces.size(), 15u);
    for (std::size_t k = 0; k < reduces.size(); ++k) {
      EXPECT_EQ(reduces[k]["args"]["bytes"], k % 3 == 0 ? 8 : 32) << k;
      EXPECT_EQ(reduces[k]["args"]["root"], 0);
    }
    bool synced = false;
    for (const auto& e : t["traceEvents"]) {
      if (e["name"] == "dagsgd_clock_sync") {
        synced = true;
        EXPECT_EQ(e["args"]["ended_by"], "finalize");
        EXPECT_TRUE(e["args"].contains("drift_correction_ns"));
      }
    }
    EXPECT_TRUE(synced);
  }
}

std::int64_t arg_of(const nlohmann::json& e, const char* key) {
  return e["args"][key].get<std::int64_t>();
}

TEST(MpiTrace, RecordsPointToPointNonBlockingAndCompletions) {
  const int ranks = 3;
  const int iterations = 2;
  std::string dir = trace_dir("calls");
  auto r = run_traced(ranks, dir, DAGSGD_MPI_CALLS, "--iterations " + std::to_string(iterations));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < ranks; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto t = read_trace(rank_trace_path(dir, rank));
    ASSERT_TRUE(t.is_object());
    expect_layout(t, rank, ranks);
    const int next = (rank + 1) % ranks;
    const int prev = (rank + ranks - 1) % ranks;
    struct Expect {
      const char* name;
      std::int64_t bytes;
    };
    for (Expect x : {Expect{"MPI_Allreduce", 800},
                     Expect{"MPI_Reduce", 12},
                     {"MPI_Bcast", 7},
                     Expect{"MPI_Allgather", std::int64_t{8} * ranks},
                     Expect{"MPI_Alltoall", std::int64_t{8} * ranks},
                     Expect{"MPI_Reduce_scatter", std::int64_t{16} * ranks},
                     Expect{"MPI_Barrier", 0},
                     Expect{"MPI_Send", 32},
                     Expect{"MPI_Recv", 32},
                     Expect{"MPI_Isend", 64},
                     Expect{"MPI_Irecv", 64},
                     Expect{"MPI_Iallreduce", 40},
                     Expect{"MPI_Ibcast", 20},
                     Expect{"MPI_Iallgather", std::int64_t{4} * ranks},
                     Expect{"MPI_Ibarrier", 0},
                     Expect{"MPI_Waitall", 128},
                     Expect{"MPI_Wait", 40},
                     Expect{"MPI_Test", 20},
                     Expect{"MPI_Waitany", std::int64_t{4} * ranks},
                     Expect{"MPI_Testall", 0},
                     Expect{"MPI_Gather", std::int64_t{12} * ranks},
                     Expect{"MPI_Scatter", std::int64_t{16} * ranks},
                     Expect{"MPI_Alltoallv", std::int64_t{8} * ranks},
                     Expect{"MPI_Ialltoallv", std::int64_t{8} * ranks},
                     Expect{"MPI_Waitsome", std::int64_t{8} * ranks},
                     Expect{"MPI_Iallgatherv", std::int64_t{8} * ranks},
                     Expect{"MPI_Testany", std::int64_t{8} * ranks},
                     Expect{"MPI_Sendrecv", 24}}) {
      auto got = spans(t, x.name);
      EXPECT_EQ(got.size(), static_cast<std::size_t>(iterations)) << x.name;
      for (const auto& e : got) EXPECT_EQ(arg_of(e, "bytes"), x.bytes) << e;
    }
    for (const auto& e : spans(t, "MPI_Reduce")) EXPECT_EQ(arg_of(e, "root"), 0);
    for (const auto& e : spans(t, "MPI_Bcast")) EXPECT_EQ(arg_of(e, "root"), ranks - 1);
    for (const auto& e : spans(t, "MPI_Ibcast")) EXPECT_EQ(arg_of(e, "root"), 0);
    for (const auto& e : spans(t, "MPI_Send")) {
      EXPECT_EQ(arg_of(e, "peer"), next);
      EXPECT_EQ(arg_of(e, "tag"), 5);
    }
    // Received from MPI_ANY_SOURCE: the peer comes from the status.
    for (const auto& e : spans(t, "MPI_Recv")) EXPECT_EQ(arg_of(e, "peer"), prev);
    for (const auto& e : spans(t, "MPI_Isend")) EXPECT_EQ(arg_of(e, "peer"), next);
    for (const auto& e : spans(t, "MPI_Gather")) EXPECT_EQ(arg_of(e, "root"), 1);
    for (const auto& e : spans(t, "MPI_Sendrecv")) {
      EXPECT_EQ(arg_of(e, "peer"), next);
      EXPECT_EQ(arg_of(e, "source"), prev);
      EXPECT_EQ(arg_of(e, "recv_bytes"), 24);
    }
    for (const auto& e : spans(t, "MPI_Irecv")) EXPECT_EQ(arg_of(e, "peer"), prev);

    // Non-blocking spans: on async lanes, closed by the call that saw them complete, ending
    // when that call ended.
    std::map<std::string, std::string> completer = {
        {"MPI_Isend", "MPI_Waitall"},       {"MPI_Irecv", "MPI_Waitall"},
        {"MPI_Iallreduce", "MPI_Wait"},     {"MPI_Ibcast", "MPI_Test"},
        {"MPI_Iallgather", "MPI_Waitany"},  {"MPI_Ibarrier", "MPI_Testall"},
        {"MPI_Ialltoallv", "MPI_Waitsome"}, {"MPI_Iallgatherv", "MPI_Testany"}};
    for (const auto& [op, by] : completer) {
      auto ops = spans(t, op);
      auto waits = spans(t, by);
      ASSERT_EQ(ops.size(), waits.size()) << op;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        EXPECT_GE(ops[i]["tid"].get<int>(), kAsyncTidBase) << ops[i];
        EXPECT_EQ(ops[i]["args"]["completed_by"], by) << ops[i];
        double op_end = ops[i]["ts"].get<double>() + ops[i]["dur"].get<double>();
        double wait_end = waits[i]["ts"].get<double>() + waits[i]["dur"].get<double>();
        EXPECT_NEAR(op_end, wait_end, 0.002) << ops[i] << waits[i];
        EXPECT_LE(ops[i]["ts"].get<double>(), waits[i]["ts"].get<double>());
      }
    }
    for (const auto& e : spans(t, "MPI_Waitall")) EXPECT_EQ(arg_of(e, "requests"), 2);
    // Spans on one lane never overlap, so Perfetto nests them correctly.
    std::map<int, std::vector<std::pair<double, double>>> lanes;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] == "X" && e["tid"].get<int>() >= kAsyncTidBase) {
        double ts = e["ts"].get<double>();
        lanes[e["tid"].get<int>()].emplace_back(ts, ts + e["dur"].get<double>());
      }
    }
    for (auto& [lane, v] : lanes) {
      std::sort(v.begin(), v.end());
      for (std::size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i].first, v[i - 1].second);
    }
  }
}

// A rank whose trace cannot be created still joins the closing clock sample, so nobody hangs.
TEST(MpiTrace, RankWithoutTraceDoesNotBlockTheOthers) {
  std::string dir = fresh_dir("unwritable");
  std::filesystem::create_directories(dir + "/rank-1.trace.json");  // a directory: open fails
  auto r = run_traced(2, dir, DAGSGD_ALLREDUCE_BENCH, "--max-bytes 8 --iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "dagsgd-mpitrace: rank 1: cannot create trace")) << r.output;
  auto t = read_trace(dir + "/rank-0.trace.json");
  EXPECT_EQ(spans(t, "MPI_Allreduce").size(), 2u * 12u);
}

TEST(MpiTrace, CollectWritesARunDirectory) {
  std::string dir = fresh_dir("collect");
  std::string cmd = std::string(DAGSGD_BINARY) + " collect --out " + dir + " -- " + mpirun(2) +
                    " " + DAGSGD_ALLREDUCE_BENCH + " --max-bytes 256 --iterations 3";
  auto r = run(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto m = trace::read_manifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->kind, "collect");
  EXPECT_EQ(m->ranks, 2);
  EXPECT_EQ(m->status, "ok");
  ASSERT_EQ(m->hosts.size(), 2u);
  EXPECT_FALSE(m->hosts[0].empty());
  ASSERT_GE(m->command.size(), 2u);
  EXPECT_EQ(m->command.back(), "3");  // the user's command, without what collect injected
  EXPECT_GE(m->clock_residual_ns, 0.0);
  std::vector<std::string> names = {"rank-0.trace.json", "rank-1.trace.json"};
  EXPECT_EQ(m->traces, names);
  for (const auto& name : names) {
    std::string path = dir;
    path += "/" + name;
    auto t = nlohmann::json::parse(*model::read_file(path), nullptr, false);
    ASSERT_FALSE(t.is_discarded()) << name;  // complete, no repair needed
    EXPECT_FALSE(m->run_id.empty());
    EXPECT_EQ(t["distributedInfo"]["run_id"], m->run_id) << name;
    EXPECT_EQ(spans(t, "MPI_Allreduce").size(), 7u * 13u) << name;  // 4..256 B, 3+10 each
  }
  // Again over the same directory: refused without --force, replaced with it.
  EXPECT_EQ(run(cmd).exit_code, 2);
  auto again = run(std::string(DAGSGD_BINARY) + " collect --force --out " + dir + " -- " +
                   mpirun(2) + " " + DAGSGD_ALLREDUCE_BENCH + " --max-bytes 8 --iterations 1");
  EXPECT_EQ(again.exit_code, 0) << again.output;
  auto t = read_trace(dir + "/rank-0.trace.json");
  EXPECT_EQ(spans(t, "MPI_Allreduce").size(), 2u * 11u);
}

TEST(MpiTrace, CollectSurvivesAKilledRank) {
  std::string dir = fresh_dir("killed");
  auto r =
      run(std::string(DAGSGD_BINARY) + " collect --flush-ms 20 --out " + dir + " -- " + mpirun(3) +
          " " + DAGSGD_MPI_CALLS + " --iterations 1000000 --kill-rank 1 --kill-after 5");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "dagsgd: error: the command ")) << r.output;
  EXPECT_TRUE(contains(r.output, "traces kept: rank 0 (")) << r.output;
  auto m = trace::read_manifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->ranks, 3);
  EXPECT_NE(m->status, "ok");
  for (int rank : {0, 2}) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    // collect repaired the file in place if its writer died before closing it.
    std::string path = rank_trace_path(dir, rank);
    auto t = nlohmann::json::parse(*model::read_file(path), nullptr, false);
    ASSERT_FALSE(t.is_discarded());
    // The survivors completed the 5 iterations before the kill, then blocked on rank 1.
    auto allreduces = spans(t, "MPI_Allreduce");
    EXPECT_GE(allreduces.size(), 5u);
    for (const auto& e : allreduces) EXPECT_EQ(arg_of(e, "bytes"), 800);
    EXPECT_GE(spans(t, "MPI_Waitall").size(), 4u);
  }
}

// Request handles recycled between threads must not lose or mix up non-blocking spans.
TEST(MpiTrace, TracksRequestsOfConcurrentThreads) {
  const int iterations = 300;
  std::string dir = trace_dir("threads");
  auto r = run_traced(2, dir, DAGSGD_MPI_THREADS, "--iterations " + std::to_string(iterations));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto t = read_trace(rank_trace_path(dir, rank));
    for (const char* op : {"MPI_Isend", "MPI_Irecv"}) {
      auto got = spans(t, op);
      EXPECT_EQ(got.size(), 4u * iterations) << op;
      for (const auto& e : got) {
        EXPECT_EQ(arg_of(e, "bytes"), 400);
        EXPECT_EQ(arg_of(e, "peer"), rank ^ 1);
      }
    }
    auto waits = spans(t, "MPI_Waitall");
    EXPECT_EQ(waits.size(), 4u * iterations);
    std::map<int, int> per_thread;
    for (const auto& e : waits) {
      EXPECT_EQ(arg_of(e, "requests"), 2) << e;
      ++per_thread[e["tid"].get<int>()];
    }
    EXPECT_EQ(per_thread.size(), 4u);  // every thread on its own track
  }
}

// peer and root are world ranks, also on a sub-communicator that numbers the ranks differently.
TEST(MpiTrace, TranslatesSubCommunicatorRanksToWorldRanks) {
  const int ranks = 3;
  std::string dir = trace_dir("subcomm");
  auto r = run_traced(ranks, dir, DAGSGD_MPI_CALLS, "--iterations 0 --subcomm 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int rank = 0; rank < ranks; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    auto t = read_trace(rank_trace_path(dir, rank));
    const int sub = ranks - 1 - rank;
    auto world_of = [&](int s) { return ranks - 1 - s; };
    auto bcast = spans(t, "MPI_Bcast");
    ASSERT_EQ(bcast.size(), 1u);
    EXPECT_EQ(arg_of(bcast[0], "root"), ranks - 1);
    auto isend = spans(t, "MPI_Isend");
    ASSERT_EQ(isend.size(), 1u);
    EXPECT_EQ(arg_of(isend[0], "peer"), world_of((sub + 1) % ranks));
    auto irecv = spans(t, "MPI_Irecv");
    ASSERT_EQ(irecv.size(), 1u);
    EXPECT_EQ(arg_of(irecv[0], "peer"), world_of((sub + ranks - 1) % ranks));
  }
}

// A crashing rank (SIGSEGV, caught) keeps every event it completed (3 iterations of 28 calls), not
// just the flushed ones.
TEST(MpiTrace, CrashingRankKeepsItsCompletedEvents) {
  std::string dir = fresh_dir("segv");
  auto r = run(std::string(DAGSGD_BINARY) + " collect --flush-ms 0 --out " + dir + " -- " +
               mpirun(2) + " " + DAGSGD_MPI_CALLS +
               " --iterations 1000000 --kill-rank 1 --kill-after 3 --kill-signal 11");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "rank 1 (84 events")) << r.output;
  auto t = read_trace(dir + "/rank-1.trace.json");
  EXPECT_EQ(spans(t, "MPI_Allreduce").size(), 3u);
  EXPECT_EQ(spans(t, "MPI_Testall").size(), 3u);
}

// exit() without MPI_Finalize closes the traces, with no end clock sample.
TEST(MpiTrace, ExitWithoutFinalizeClosesTheTrace) {
  std::string dir = trace_dir("nofinalize");
  auto r = run_traced(2, dir, DAGSGD_MPI_CALLS, "--iterations 2 --finalize 0");
  for (int rank = 0; rank < 2; ++rank) {
    std::string path = rank_trace_path(dir, rank);
    auto t = nlohmann::json::parse(*model::read_file(path), nullptr, false);
    ASSERT_FALSE(t.is_discarded()) << path << "\n" << r.output;
    EXPECT_EQ(spans(t, "MPI_Allreduce").size(), 2u);
    const auto& last = t["traceEvents"].back();
    EXPECT_EQ(last["name"], "dagsgd_clock_sync");
    EXPECT_EQ(last["args"]["ended_by"], "exit");
    EXPECT_FALSE(last["args"].contains("drift_correction_ns"));
  }
}

}  // namespace
}  // namespace dagsgd::mpitrace
