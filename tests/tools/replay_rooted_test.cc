// A rooted collective replayed onto a calibrated fabric: under Open MPI's in-place
// MPI_Iallreduce (libnbc's binomial reduce + broadcast, rooted at rank 0) the root has its result
// when the reduction is in, and a curve that reports the fastest rank's latency says when. The
// flow tier lets rank 0 go on then, while rank 1 waits for the broadcast.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/cli_runner.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/manifest.h"

namespace {

using dagsgd::testing::run_cli;
namespace fs = std::filesystem;

// One iteration of 2 ranks, one gradient group of 4000 bytes. Rank 0 (the root) issues its
// collective 30 us after rank 1, so the join starts at its arrival and rank 0's update ends the
// iteration.
std::string rooted_run(const std::string& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  dagsgd::trace::RunManifest m;
  m.kind = "train";
  m.ranks = 2;
  m.hosts = {"h0", "h1"};
  m.traces = {dagsgd::trace::rank_trace_name(0), dagsgd::trace::rank_trace_name(1)};
  m.iterations.times_s = {0.0003};
  EXPECT_TRUE(dagsgd::trace::write_manifest(dir, m).ok());
  for (int r = 0; r < 2; ++r) {
    const long late = r == 0 ? 30 : 0;
    std::string s = R"({"distributedInfo":{"backend":"mpi","rank":)" + std::to_string(r) +
                    R"(,"world_size":2},"traceEvents":[)"
                    "\n";
    auto span = [&](const std::string& name, const std::string& phase, long ts, long dur,
                    const std::string& extra = "", int tid = 0) {
      s += R"({"ph":"X","cat":"cpu_op","name":")" + name + R"(","pid":)" + std::to_string(r) +
           R"(,"tid":)" + std::to_string(tid) + R"(,"ts":)" + std::to_string(ts) + R"(,"dur":)" +
           std::to_string(dur) + R"(,"args":{"phase":")" + phase + R"(","iteration":0)" + extra +
           "}},\n";
    };
    s += R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":)" + std::to_string(r) +
         R"(,"tid":0,"ts":0,"dur":300,"args":{"iteration":0}},)"
         "\n";
    span("io", "io", 0, 10);
    span("fc1", "forward", 10, 40 + late, R"(,"layer":0)");
    span("fc1", "backward", 50 + late, 50, R"(,"layer":0)");
    span("collective", "comm", 100 + late, 150 - late,
         R"(,"bucket":0,"collective":"allreduce","bytes":4000)", 1);
    span("comm_issue", "comm", 100 + late, 5);
    span("comm_wait", "comm", 105 + late, 145 - late);
    span("update", "update", 250, 10);
    s += R"({"ph":"X","cat":"cpu_op","name":"end","pid":0,"tid":9,"ts":0,"dur":0}]})";
    EXPECT_TRUE(
        dagsgd::model::write_file(dir + "/" + dagsgd::trace::rank_trace_name(r), s, true).ok());
  }
  return dir;
}

// A calibrated entry: 8 Gbit/s line rate, the average rank 100-1100 us, the slowest 1.5x and,
// with `fastest`, the fastest 0.5x of it.
std::string fabric(const std::string& dir, const std::string& name, bool fastest) {
  const std::string f = dir + "/" + name + ".json";
  std::ofstream(f) << R"({"name": ")" << name << R"(", "description": "test", "scope": "both",)"
                   << R"( "nominal_gbps": 8, "achievable_gbps": 8, "latency_us": 10,)"
                   << R"( "source": "test", "allreduce_measured": [{"ranks": 2,)"
                   << R"( "sizes_bytes": [1000, 1000000], "latency_us": [100, 1100],)"
                   << R"( "max_latency_us": [150, 1650])"
                   << (fastest ? R"(, "min_latency_us": [50, 550])" : "") << "}]}";
  return f;
}

double predicted_s(const std::string& dir, const std::string& name, bool fastest,
                   const std::string& flags) {
  auto r = run_cli("replay --json " + dir + " --intra " + name + " --inter " + name +
                   " --fabric-file " + fabric(dir, name, fastest) + " --gpus-per-node 1 " + flags);
  EXPECT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("predicted_iteration_s")) return 0;
  EXPECT_EQ(j["comm"]["algorithm"], "measured") << r.out;
  return j["predicted_iteration_s"].get<double>();
}

TEST(ReplayRooted, TheRootGoesOnWhenTheFastestRankIsDone) {
  const std::string dir =
      rooted_run(::testing::TempDir() + "/rooted-" + std::to_string(::getpid()));
  const std::string flow = "--stack openmpi-4.1-tcp --network-model flow";
  const double last = predicted_s(dir, "spread", false, flow);
  const double first = predicted_s(dir, "rooted", true, flow);
  // At 4000 bytes the curve says 103 us for the average rank, 154.5 for the slowest and 51.5 for
  // the fastest: the root's update starts (154.5 - 51.5) us earlier.
  EXPECT_NEAR(last - first, 103e-6, 2e-6) << last << " vs " << first;
  // The analytical tier has no transfers to split: the fastest rank changes nothing there.
  const std::string analytic = "--stack openmpi-4.1-tcp --network-model analytic";
  EXPECT_DOUBLE_EQ(predicted_s(dir, "spread", false, analytic),
                   predicted_s(dir, "rooted", true, analytic));
  fs::remove_all(dir);
}

TEST(ReplayRooted, AFastestRankSlowerThanTheAverageIsRefused) {
  const std::string dir = ::testing::TempDir() + "/rooted-bad-" + std::to_string(::getpid());
  fs::create_directories(dir);
  const std::string f = dir + "/bad.json";
  std::ofstream(f) << R"({"name": "bad", "description": "test", "scope": "both",)"
                   << R"( "nominal_gbps": 8, "achievable_gbps": 8, "latency_us": 10,)"
                   << R"( "source": "test", "allreduce_measured": [{"ranks": 2,)"
                   << R"( "sizes_bytes": [1000, 1000000], "latency_us": [100, 1100],)"
                   << R"( "min_latency_us": [50, 1200]}]})";
  auto r = run_cli("predict --network alexnet --nodes 2 --inter bad --fabric-file " + f);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("min_latency_us[1] must be <= latency_us[1], got 1200"), std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

}  // namespace
