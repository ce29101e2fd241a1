// Interference and iteration noise measured on hand-built Kineto traces whose answers are worked
// out by hand (sim/job_effects.h).
#include "dagsgd/sim/job_effects.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/temp.h"
#include "dagsgd/model/io.h"

namespace dagsgd::sim {
namespace {

const char* const kNccl = "ncclKernel_AllReduce_RING_LL_Sum_float";

// A kernel on `device`, stream `stream`, from `ts` for `dur` (us), launched with `grid` blocks
// of 256 threads (0: no shape recorded).
std::string kernel(const std::string& name, int device, int stream, long ts, long dur,
                   int grid = 0) {
  const std::string shape =
      grid > 0 ? ",\"grid\":[" + std::to_string(grid) + ", 1, 1],\"block\":[256, 1, 1]" : "";
  return "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + name +
         "\",\"pid\":" + std::to_string(device) + ",\"tid\":" + std::to_string(stream) +
         ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
         ",\"args\":{\"device\":" + std::to_string(device) +
         ",\"stream\":" + std::to_string(stream) + shape + "}}";
}

std::string trace_text(int rank, int world, const std::vector<std::string>& events) {
  std::string s = "{\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":" + std::to_string(rank) +
                  ",\"world_size\":" + std::to_string(world) + "},\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events.size(); ++i) s += (i > 0 ? ",\n" : "") + events[i];
  return s + "\n]}";
}

trace::ImportedRun import(const std::vector<std::string>& texts) {
  const std::string dir = testing::fresh_test_dir("dagsgd-effects");
  std::vector<std::string> files;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    files.push_back(dir + "/rank-" + std::to_string(r) + ".json");
    EXPECT_TRUE(model::write_file(files.back(), texts[r], true).ok());
  }
  auto run = trace::import_run(files, trace::ImportOptions{});
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  return std::move(*run);
}

// Device 0: gemm (100 us) and relu (50 us) alone; then beside an NCCL kernel [1000, 1200] gemm
// takes 125 us and relu 60 us; a gemm on device 1 at the same time is alone (100 us). Beside the
// second NCCL kernel [2080, 2300] a gemm overlaps it for 20 of its 100 us (partial: left out)
// and a softmax that never ran alone is unmatched. The third NCCL kernel (150 us) runs alone.
trace::ImportedRun interference_run() {
  return import({trace_text(
      0, 1,
      {kernel("gemm", 0, 7, 0, 100), kernel("gemm", 0, 7, 200, 100), kernel("relu", 0, 7, 400, 50),
       kernel(kNccl, 0, 20, 1000, 200), kernel("gemm", 0, 7, 1000, 125),
       kernel("relu", 0, 7, 1130, 60), kernel("gemm", 1, 7, 1000, 100),
       kernel(kNccl, 0, 20, 2080, 220), kernel("gemm", 0, 7, 2000, 100),
       kernel("softmax", 0, 7, 2150, 40), kernel(kNccl, 0, 20, 3000, 150)})});
}

TEST(JobEffects, ComputeSlowdownIsTimeWeightedOverKernelsSeenBothWays) {
  const OverlapSlowdown s = measure_interference(interference_run());
  // (125 + 60) / (100 + 50): each beside kernel against its own name's mean alone.
  EXPECT_DOUBLE_EQ(s.slowdown, 185.0 / 150.0);
  EXPECT_EQ(s.samples, 2);
  EXPECT_EQ(s.kernels, 2);
  EXPECT_EQ(s.alone, 4);  // gemm twice on device 0, once on device 1; relu once
  EXPECT_EQ(s.partial, 1);
  EXPECT_EQ(s.unmatched, 1);
  EXPECT_EQ(s.beside, 185000);
  EXPECT_EQ(s.seen, 8);  // every compute kernel of the trace
}

TEST(JobEffects, CommunicationKernelsBesideCompute) {
  const OverlapSlowdown s = measure_comm_slowdown(interference_run());
  // The first NCCL kernel is covered by compute for 185 of its 200 us; the second for 60 of
  // 220 (partial); the third runs alone.
  EXPECT_DOUBLE_EQ(s.slowdown, 200.0 / 150.0);
  EXPECT_EQ(s.samples, 1);
  EXPECT_EQ(s.alone, 1);
  EXPECT_EQ(s.partial, 1);
}

TEST(JobEffects, OneNameWithTwoShapesIsTwoKernels) {
  // gemm on 8 blocks takes 100 us alone, on 16 blocks 200 us alone and 250 us beside NCCL: the
  // slowdown is 250 / 200, not 250 / 150 (the name's mean over both shapes).
  auto run =
      import({trace_text(0, 1,
                         {kernel("gemm", 0, 7, 0, 100, 8), kernel("gemm", 0, 7, 200, 200, 16),
                          kernel(kNccl, 0, 20, 1000, 300), kernel("gemm", 0, 7, 1000, 250, 16)})});
  const OverlapSlowdown s = measure_interference(run);
  EXPECT_DOUBLE_EQ(s.slowdown, 250.0 / 200.0);
  EXPECT_EQ(s.kernels, 1);
  EXPECT_EQ(s.alone, 1);
}

TEST(JobEffects, NoCommunicationNoInterference) {
  auto run = import({trace_text(0, 1, {kernel("gemm", 0, 7, 0, 100)})});
  const OverlapSlowdown s = measure_interference(run);
  EXPECT_FALSE(s.measured());
  EXPECT_EQ(s.slowdown, 0);
  EXPECT_EQ(s.alone, 0);  // alone counts only names that were also measured beside
  EXPECT_EQ(s.seen, 1);
  EXPECT_EQ(measure_comm_slowdown(run).seen, 0);
}

// `compute[r][k]` us of one kernel per rank r in iteration k (ProfilerStep#k, 1000 us each),
// launched from the CPU thread.
std::vector<std::string> noise_job(const std::vector<std::vector<long>>& compute) {
  std::vector<std::string> texts;
  const int world = static_cast<int>(compute.size());
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> ev;
    for (std::size_t k = 0; k < compute[static_cast<std::size_t>(r)].size(); ++k) {
      const long t0 = 1000 * static_cast<long>(k);
      const std::string corr = std::to_string(k + 1);
      ev.push_back("{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" +
                   std::to_string(k) + "\",\"pid\":9,\"tid\":1,\"ts\":" + std::to_string(t0) +
                   ",\"dur\":1000}");
      ev.push_back(
          "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\","
          "\"pid\":9,\"tid\":1,\"ts\":" +
          std::to_string(t0 + 10) + ",\"dur\":5,\"args\":{\"correlation\":" + corr + "}}");
      ev.push_back(
          "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,"
          "\"ts\":" +
          std::to_string(t0 + 20) +
          ",\"dur\":" + std::to_string(compute[static_cast<std::size_t>(r)][k]) +
          ",\"args\":{\"correlation\":" + corr + ",\"stream\":7,\"device\":0}}");
    }
    texts.push_back(trace_text(r, world, ev));
  }
  return texts;
}

IterationNoise noise_of(const std::vector<std::vector<long>>& compute) {
  const trace::ImportedRun run = import(noise_job(compute));
  auto dag = trace::build_trace_dag(run);
  EXPECT_TRUE(dag.ok()) << (dag.ok() ? "" : dag.error().message);
  return measure_noise(*dag);
}

TEST(JobEffects, NoiseOverRanksAndIterations) {
  // Iteration 0: 90, 100, 110 us; iteration 1: 190, 200, 210 us. Overall mean 150; deviations
  // +-40, +-50, +-60 -> sample variance 15400 / 5; within each iteration +-10 and 0 -> pooled
  // variance (200 + 200) / (2 + 2) = 100.
  const IterationNoise n = noise_of({{90, 190}, {100, 200}, {110, 210}});
  EXPECT_EQ(n.iterations, 2);
  EXPECT_EQ(n.ranks, 3);
  EXPECT_EQ(n.samples, 6);
  EXPECT_EQ(n.mean, 150000);
  EXPECT_NEAR(n.iteration_cv, std::sqrt(15400.0 / 5) / 150, 1e-12);
  EXPECT_NEAR(n.rank_cv, 10.0 / 150, 1e-12);
  EXPECT_TRUE(n.measured());
  EXPECT_TRUE(n.rank_measured());
}

TEST(JobEffects, TooFewSamplesAreNotMeasured) {
  const IterationNoise one = noise_of({{100}});
  EXPECT_EQ(one.samples, 1);
  EXPECT_FALSE(one.measured());
  EXPECT_EQ(one.iteration_cv, 0);
  // One rank: the spread over iterations is measured, the spread across ranks is not.
  const IterationNoise single_rank = noise_of({{100, 120}});
  EXPECT_TRUE(single_rank.measured());
  EXPECT_NEAR(single_rank.iteration_cv, std::sqrt(200.0) / 110, 1e-12);
  EXPECT_FALSE(single_rank.rank_measured());
  EXPECT_EQ(single_rank.rank_cv, 0);
}

}  // namespace
}  // namespace dagsgd::sim
