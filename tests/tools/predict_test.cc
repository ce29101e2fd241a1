// dagsgd predict as a user runs it: text and JSON, determinism, and bad input with exit code 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_runner.h"

namespace dagsgd {
namespace {

using testing::run_cli;

const std::string kBase =
    "predict --network resnet50 --batch 64 --gpu v100 --nodes 8 --gpus-per-node 4 "
    "--intra pcie3 --inter 10gbe --algorithm auto";
const std::string kScenario = kBase + " --overlap wfbp";

TEST(PredictCli, JsonHasTheDocumentedFields) {
  auto r = run_cli(kScenario + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"iteration_time_s", "throughput_samples_per_s", "speedup", "efficiency",
                        "breakdown", "critical_path", "bottleneck"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  for (const char* k :
       {"forward", "backward", "comm_total", "comm_exposed", "update", "io", "h2d"}) {
    EXPECT_TRUE(j["breakdown"].contains(k)) << k;
  }
  double t = j["iteration_time_s"];
  EXPECT_GT(t, 0);
  EXPECT_NEAR(j["throughput_samples_per_s"].get<double>(), 64.0 * 32 / t, 1e-3 * 64 * 32 / t);
  EXPECT_GT(j["speedup"].get<double>(), 0);
  EXPECT_LE(j["efficiency"].get<double>(), 1.0 + 1e-9);
  EXPECT_EQ(j["workers"], 32);
}

TEST(PredictCli, SameInputSameBytes) {
  const std::string mg =
      "predict --network googlenet --batch 32 --gpu p100 --nodes 4 --gpus-per-node 2 "
      "--overlap mgwfbp --json";
  auto a = run_cli(mg);
  auto b = run_cli(mg);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
}

TEST(PredictCli, FasterFabricIsNotSlower) {
  auto slow = nlohmann::json::parse(run_cli(kScenario + " --json").out);
  auto fast = nlohmann::json::parse(
      run_cli("predict --network resnet50 --batch 64 --gpu v100 --nodes 8 --gpus-per-node 4 "
              "--intra nvlink2 --inter ib-edr --overlap wfbp --json")
          .out);
  EXPECT_LE(fast["iteration_time_s"].get<double>(), slow["iteration_time_s"].get<double>());
  // fp16 halves the bytes: communication does not grow.
  auto half = nlohmann::json::parse(run_cli(kScenario + " --precision fp16 --json").out);
  EXPECT_LT(half["breakdown"]["comm_total"].get<double>(),
            slow["breakdown"]["comm_total"].get<double>());
}

TEST(PredictCli, TextSaysWhatLimitsTheIteration) {
  auto r = run_cli(kScenario);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("iteration time"), std::string::npos);
  EXPECT_NE(r.out.find("Bottleneck: "), std::string::npos);
  EXPECT_NE(r.out.find("Critical path"), std::string::npos);
}

// Effects around the wire (docs/gpu-effects.md): on by default for GPUs, each a JSON entry,
// switched off by name; a bad job-effects file names the file and the key.
TEST(PredictCli, EffectsAreOnByDefaultAndSwitchable) {
  auto on = run_cli(kScenario + " --json");
  ASSERT_EQ(on.code, 0) << on.err;
  auto j = nlohmann::json::parse(on.out);
  ASSERT_TRUE(j["effects"].contains("stragglers")) << on.out;
  EXPECT_GT(j["effects"]["stragglers"]["time_s"].get<double>(), 0);
  ASSERT_TRUE(j["effects"].contains("interference")) << on.out;  // WFBP: backward beside comm
  EXPECT_GT(j["effects"]["interference"]["time_s"].get<double>(), 0);
  auto off = nlohmann::json::parse(
      run_cli(kScenario + " --no-effects stragglers,interference --json").out);
  EXPECT_TRUE(off["effects"].empty());
  EXPECT_LT(off["iteration_time_s"].get<double>(), j["iteration_time_s"].get<double>());
  auto cv0 = nlohmann::json::parse(
      run_cli(kScenario + " --noise-cv 0 --no-effects interference --json").out);
  EXPECT_EQ(cv0["iteration_time_s"], off["iteration_time_s"]);
  auto bad = run_cli(kScenario + " --no-effects sunspots");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown effect 'sunspots'"), std::string::npos) << bad.err;
  const std::string file = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-fx.json";
  std::ofstream(file) << R"({"format": "dagsgd-job-effects", "version": 1,
                            "noise": {"iteration_cv": 2}})";
  auto range = run_cli(kScenario + " --effects " + file);
  EXPECT_EQ(range.code, 2);
  EXPECT_NE(range.err.find("'noise.iteration_cv'"), std::string::npos) << range.err;
  EXPECT_NE(range.err.find(file), std::string::npos) << range.err;
  // A file's slowdown stands in for the bundled one.
  std::ofstream(file) << R"({"format": "dagsgd-job-effects", "version": 1,
                            "interference": {"compute_slowdown": 2}})";
  auto twice = nlohmann::json::parse(run_cli(kScenario + " --effects " + file + " --json").out);
  EXPECT_GT(twice["effects"]["interference"]["time_s"].get<double>(),
            j["effects"]["interference"]["time_s"].get<double>());
  std::filesystem::remove(file);
}

TEST(PredictCli, StepTimeScalesComputeOnOneGpu) {
  auto r = run_cli("predict --network resnet50 --batch 64 --gpu v100 --step-time 0.2529 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  // One GPU, prefetched input: the iteration is the measured step.
  EXPECT_NEAR(j["iteration_time_s"].get<double>(), 0.2529, 1e-6);
}

// A node's input pipeline that delivers fewer samples than its GPUs consume sets the pace: each
// GPU loads batch x gpus-per-node / RATE per batch, overlapped with the previous iteration, so
// the job trains at most at nodes x RATE. A rate above what the GPUs consume changes nothing.
TEST(PredictCli, InputRateCapsEachNodeAtWhatItsPipelineDelivers) {
  const std::string base =
      "predict --network resnet50 --batch 64 --gpu v100 --nodes 2 --gpus-per-node 4 --intra "
      "nvlink2 --inter ib-edr --overlap wfbp --step-time 0.2 --json";
  auto free = nlohmann::json::parse(run_cli(base).out);
  const double unlimited = free["throughput_samples_per_s"].get<double>();
  ASSERT_GT(unlimited, 0);
  // A pipeline at half what a node's GPUs consume.
  const double rate = unlimited / 2 / 2;
  auto r = run_cli(base + " --input-rate " + std::to_string(rate));
  ASSERT_EQ(r.code, 0) << r.err;
  auto capped = nlohmann::json::parse(r.out);
  // Input-bound: a batch's load and then its copy to the GPU set the period.
  const double io = capped["breakdown"]["io"].get<double>();
  EXPECT_NEAR(io, 64.0 * 4 / rate, 1e-9);
  EXPECT_NEAR(capped["iteration_time_s"].get<double>(),
              io + capped["breakdown"]["h2d"].get<double>(), 1e-9);
  EXPECT_LE(capped["throughput_samples_per_s"].get<double>(), 2 * rate);
  EXPECT_EQ(capped["bound"], "input-bound");
  EXPECT_NE(capped["scenario"]["input"].get<std::string>().find("samples/s per node"),
            std::string::npos);
  // Without prefetching the load adds to the iteration instead of hiding under it.
  auto serial = nlohmann::json::parse(
      run_cli(base + " --prefetch off --input-rate " + std::to_string(rate)).out);
  EXPECT_GT(serial["iteration_time_s"].get<double>(),
            capped["iteration_time_s"].get<double>() + 0.1);
  // Ten times what the GPUs consume: the same prediction as without a limit.
  auto ample =
      nlohmann::json::parse(run_cli(base + " --input-rate " + std::to_string(unlimited * 10)).out);
  EXPECT_NEAR(ample["throughput_samples_per_s"].get<double>(), unlimited, 1e-9 * unlimited);
  for (const char* bad : {"0", "-5", "nan", "inf"}) {
    auto b = run_cli(base + " --input-rate " + bad);
    EXPECT_EQ(b.code, 2) << bad << "\n" << b.err;
    EXPECT_NE(b.err.find("--input-rate"), std::string::npos) << bad << "\n" << b.err;
  }
  // whatif sweeps a network spec with the same flag.
  EXPECT_NE(run_cli("whatif --help").out.find("--input-rate"), std::string::npos);
}

TEST(PredictCli, SparsityAndElasticAveragingCutCommunication) {
  // One group each (no overlap), so the comparison is of bytes, not of per-layer startups:
  // 1% of the elements as (value, index) pairs, allgathered, move far fewer bytes.
  const std::string none = kBase + " --overlap none --json";
  auto dense = nlohmann::json::parse(run_cli(none).out);
  auto topk = run_cli(none + " --topk 0.01");
  ASSERT_EQ(topk.code, 0) << topk.err;
  auto sparse = nlohmann::json::parse(topk.out);
  EXPECT_LT(sparse["breakdown"]["comm_total"].get<double>(),
            dense["breakdown"]["comm_total"].get<double>() / 2);
  // EASGD every 4 iterations: a quarter of one whole-model exchange per iteration, no overlap
  // (and no stragglers, which the workers' meetings would add: docs/gpu-effects.md).
  auto e = run_cli(kScenario + " --sync easgd:4,0.5 --no-effects stragglers --json");
  ASSERT_EQ(e.code, 0) << e.err;
  auto easgd = nlohmann::json::parse(e.out);
  const double comm = easgd["breakdown"]["comm_total"].get<double>();
  EXPECT_GT(comm, 0);
  EXPECT_EQ(easgd["breakdown"]["comm_exposed"].get<double>(), comm);
  EXPECT_NEAR(easgd["iteration_time_s"].get<double>(),
              easgd["single_gpu_iteration_time_s"].get<double>() + comm, 1e-6);
}

TEST(PredictCli, LayerProfileFromBcaffeLog) {
  const std::string log = std::string(DAGSGD_SHARED_DATA) + "/published/b-caffe/tmp4comm.log";
  auto r = run_cli(
      "predict --network googlenet-caffe --gpu k80 --nodes 4 --inter 10gbe-bcaffe-k80 "
      "--algorithm ring --json --layer-profile " +
      log);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["scenario"]["compute"].get<std::string>().find("layer profile"), std::string::npos);
  EXPECT_GT(j["breakdown"]["backward"].get<double>(), 0);
  // The profile's tensors do not fit another network: exit 2, naming the tensor and layer.
  auto bad = run_cli("predict --network resnet50 --layer-profile " + log);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("tensor"), std::string::npos) << bad.err;
}

TEST(PredictCli, BadInputIsExitCodeTwoWithAClearMessage) {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : {
           Case{"predict --network nosuchnet", "resnet50"},
           Case{"predict --network resnet50 --gpu z80", "v100"},
           Case{"predict --network resnet50 --inter 3gbe", "10gbe"},
           Case{"predict --network resnet50 --batch -4", "--batch"},
           Case{"predict --network resnet50 --batch abc", "--batch"},
           Case{"predict --network resnet50 --overlap fast", "mgwfbp"},
           Case{"predict --network resnet50 --algorithm magic", "ring"},
           Case{"predict --network resnet50 --precision fp8", "fp16"},
           Case{"predict --network resnet50 --sync easgd:0,0.5", "TAU"},
           Case{"predict --network resnet50 --topk 2", "--topk"},
           Case{"predict --network resnet50 --step-time 0", "--step-time"},
           Case{"predict --network resnet50 --no-such-flag", "no-such-flag"},
           Case{"predict", "--network"},
       }) {
    auto r = run_cli(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find("dagsgd: error:"), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
  }
}

// Issue 13, classes 2, 5 and 7: numbers no scenario can have (NaN, beyond the longest duration,
// more workers than the cost models take, a fabric of 1e-300 Gbit/s) are refused naming the
// flag or the file and field, never an abort, a silently ignored flag or a run out of memory.
TEST(PredictCli, HostileNumbersExitTwoNamingTheFlagOrField) {
  const std::string fabric = (std::filesystem::temp_directory_path() /
                              ("dagsgd-slow-" + std::to_string(::getpid()) + ".json"))
                                 .string();
  std::ofstream(fabric)
      << R"({"fabrics": [{"name": "slow", "description": "a slow link", "source": "issue 13",
    "scope": "inter", "nominal_gbps": 1e-300, "achievable_gbps": 1e-300, "latency_us": 5}]})";
  struct Case {
    std::string args;
    std::string says;
  };
  for (const Case& c : {
           Case{"--network alexnet --io-time nan", "--io-time"},
           Case{"--network alexnet --io-time 1e10", "--io-time"},
           Case{"--network alexnet --io-time inf", "--io-time"},
           Case{"--network alexnet --io-time -1", "--io-time"},
           Case{"--network alexnet --step-time nan", "--step-time"},
           Case{"--network alexnet --step-time 1e300", "--step-time"},
           Case{"--network alexnet --topk nan", "--topk"},
           Case{"--network alexnet --nodes 0", "--nodes"},
           Case{"--network alexnet --gpus-per-node 2147483647", "--gpus-per-node"},
           Case{"--network alexnet --gpus-per-node 0", "--gpus-per-node"},
           // Counts say their range, also where CLI11 would only say "Could not convert".
           Case{"--network alexnet --batch -1",
                "--batch: must be a whole number from 1 to 2147483647, got '-1'"},
           Case{"--network alexnet --batch 1e3", "--batch: must be a whole number"},
           Case{"--network alexnet --nodes 2.0", "--nodes: must be a whole number"},
           Case{"--network alexnet --iterations 1",
                "--iterations: must be a whole number from 2 to 1000, got '1'"},
           Case{"--network alexnet --nodes 4 --inter slow --fabric-file " + fabric,
                "gbps' must be from 1e-06"},
           // 800,000 workers: more tasks than dagsgd simulates.
           Case{"--network resnet50 --nodes 100000 --gpus-per-node 8", "dagsgd simulates"},
       }) {
    auto r = run_cli("predict " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("dagsgd: error: ", 0), 0u) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\n" << r.out;
  }
  std::filesystem::remove(fabric);
}

// A flow-tier collective too large to build is refused at once, in one line, with the way out;
// the analytical tier prices the same job.
TEST(PredictCli, FlowTierRefusesAPatternBeyondItsLimit) {
  const std::string job =
      "predict --network resnet50 --gpu h100 --nodes 2048 --gpus-per-node 8 --algorithm ps "
      "--inter ib-ndr";
  auto r = run_cli(job + " --topology dgx-h100");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("dagsgd: error: the flow tier would hold 5.37e+08 transfers", 0), 0u)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("(--network-model analytic, no --topology)"), std::string::npos) << r.err;
  auto analytic = run_cli(job + " --network-model analytic --json");
  EXPECT_EQ(analytic.code, 0) << analytic.err;
}

// validate's counts say their range before anything runs (no root needed).
TEST(ValidateCli, CountsSayTheirRange) {
  for (const char* bad : {"0", "21", "2.5"}) {
    auto r = run_cli(std::string("validate --out /nonexistent/validate --repeats ") + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("--repeats: must be a whole number from 1 to 20, got '" +
                         std::string(bad) + "'"),
              std::string::npos)
        << r.err;
  }
  // Each rank count of the list is checked as one (CLI11 alone said "Could not convert").
  for (const char* bad : {"2,x", "0", "4,2e3"}) {
    auto r = run_cli(std::string("validate --out /nonexistent/validate --ranks ") + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.err;
    EXPECT_NE(r.err.find("--ranks: must be a whole number from 1 to"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace dagsgd
