// `dagsgd train --device` without a usable GPU (label `mpi`): every rank stops with exit 2 and
// rank 0 alone says why, in one line; no rank waits forever for another.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "common/cli_runner.h"

#include <array>
#include <cstdio>
#include <string>

namespace {

using dagsgd::testing::run;
using dagsgd::testing::RunResult;

// CUDA_VISIBLE_DEVICES="" hides every GPU, so this runs the same with or without one; `timeout`
// turns a hang into exit code 124.
std::string train_np(int np) {
  return "env CUDA_VISIBLE_DEVICES= timeout 120 mpirun --allow-run-as-root --oversubscribe -np " +
         std::to_string(np) + " " + DAGSGD_BINARY + " train";
}

int count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

#ifdef DAGSGD_HAVE_CUDA
const char* const kNoDevice = "dagsgd: error: --device cuda: no CUDA device (cudaGetDeviceCount: ";
#else
const char* const kNoDevice = "dagsgd: error: --device cuda: this build has no CUDA support";
#endif

TEST(TrainDevice, NoCudaDeviceIsOneLineFromRankZeroAndExitTwoOnEveryRank) {
  for (int np : {1, 2}) {
    RunResult r = run(train_np(np) + " --device cuda --iterations 3 --no-eval");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(count(r.out, "dagsgd: error:"), 1) << r.out;
    EXPECT_EQ(count(r.out, kNoDevice), 1) << r.out;
    EXPECT_EQ(r.out.find("epoch"), std::string::npos) << r.out;
  }
}

TEST(TrainDevice, TracedRunWithoutDeviceWritesNoTrace) {
  std::string dir = "/tmp/dagsgd-train-device-" + std::to_string(getpid());
  RunResult r = run(train_np(2) + " --device cuda --iterations 3 --trace " + dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(count(r.out, kNoDevice), 1) << r.out;
  RunResult ls = run("ls " + dir + "/rank-0.trace.json");
  EXPECT_NE(ls.code, 0) << ls.out;
  run("rm -rf " + dir);
}

TEST(TrainDevice, BadDeviceAndCnnOnCudaAreRefused) {
  RunResult bad = run(train_np(2) + " --device tpu");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_EQ(count(bad.out, "dagsgd: error: --device: unknown device 'tpu' (valid: cpu, cuda)"), 1)
      << bad.out;
  RunResult cnn = run(train_np(2) + " --device cuda --model cnn");
  EXPECT_EQ(cnn.code, 2) << cnn.out;
  EXPECT_EQ(count(cnn.out, "dagsgd: error:"), 1) << cnn.out;
#ifdef DAGSGD_HAVE_CUDA
  EXPECT_NE(cnn.out.find("--model cnn needs --device cpu"), std::string::npos) << cnn.out;
#endif
  RunResult easgd = run(train_np(1) + " --device cuda --sync easgd:2,0.5");
  EXPECT_EQ(easgd.code, 2) << easgd.out;
}

#ifdef DAGSGD_HAVE_CUDA
void write_text(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

TEST(TrainDevice, NetworkFilesTheGpuCannotRunAreRefusedBeforeLookingForADevice) {
  // The GPU fuses a relu into every fc but the last: "fc relu" and "fc fc" do not fit.
  const std::string fc784x32 = R"({"name": "hidden", "type": "fc", "params": [
    {"name": "weight", "shape": [32, 784]}, {"name": "bias", "shape": [32]}],
    "forward_flops": 50176, "activation_elements": 32})";
  const std::string fc784x10 = R"({"name": "hidden", "type": "fc", "params": [
    {"name": "weight", "shape": [10, 784]}, {"name": "bias", "shape": [10]}],
    "forward_flops": 15680, "activation_elements": 10})";
  const std::string fc32x10 = R"({"name": "out", "type": "fc", "params": [
    {"name": "weight", "shape": [10, 32]}, {"name": "bias", "shape": [10]}],
    "forward_flops": 640, "activation_elements": 10})";
  auto net = [](const std::string& layers) {
    return R"({"name": "t", "description": "test net", "source": "this test",
      "input_shape": [784], "layers": [)" +
           layers + "]}";
  };
  std::string base = "/tmp/dagsgd-train-device-net-" + std::to_string(getpid());
  write_text(base + "-relu-last.json",
             net(fc784x10 + R"(, {"name": "act", "type": "relu", "params": [],
                                         "forward_flops": 10, "activation_elements": 10})"));
  write_text(base + "-fc-fc.json", net(fc784x32 + ", " + fc32x10));
  RunResult relu_last = run(train_np(2) + " --device cuda --model " + base + "-relu-last.json");
  EXPECT_EQ(relu_last.code, 2) << relu_last.out;
  EXPECT_EQ(count(relu_last.out, "dagsgd: error:"), 1) << relu_last.out;
  EXPECT_NE(relu_last.out.find("it ends with relu 'act'"), std::string::npos) << relu_last.out;
  RunResult fc_fc = run(train_np(2) + " --device cuda --model " + base + "-fc-fc.json");
  EXPECT_EQ(fc_fc.code, 2) << fc_fc.out;
  EXPECT_NE(fc_fc.out.find("layer 'out' follows an fc but is no relu"), std::string::npos)
      << fc_fc.out;
  std::remove((base + "-relu-last.json").c_str());
  std::remove((base + "-fc-fc.json").c_str());
}

// The CUDA backend is a plug-in loaded on the first --device cuda (runtime/src/cuda_plugin.cc):
// one that cannot be found is one line naming it, exit 2 on every rank.
TEST(TrainDevice, MissingCudaPluginIsOneLineNamingIt) {
  const std::string lib = "/nonexistent/libdagsgd-cuda-backend.so";
  RunResult r = run("env DAGSGD_CUDA_BACKEND_LIB=" + lib + " " + train_np(2) +
                    " --device cuda --iterations 3 --no-eval");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(count(r.out, "dagsgd: error:"), 1) << r.out;
  EXPECT_EQ(count(r.out, "$DAGSGD_CUDA_BACKEND_LIB names '" + lib + "', which is not a file"), 1)
      << r.out;
}

// ... so the binary itself needs no CUDA library: every other command starts without loading
// them (they cost dagsgd --help 0.5 s and 26,000 page faults).
TEST(TrainDevice, TheBinaryLinksNoCudaLibrary) {
  RunResult r = run(std::string("ldd ") + DAGSGD_BINARY);
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* name : {"libcudart", "libcublas", "libcupti"}) {
    EXPECT_EQ(r.out.find(name), std::string::npos) << name << " in\n" << r.out;
  }
}
#endif

TEST(TrainDevice, CpuIsTheDefaultAndStillTrains) {
  RunResult r = run(train_np(2) + " --device cpu --iterations 3 --no-eval --widths 16");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("epoch 1: 3 iterations"), std::string::npos) << r.out;
}

}  // namespace
