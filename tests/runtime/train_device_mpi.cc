// `dagsgd train --device` without a usable GPU (label `mpi`): every rank stops with exit 2 and
// rank 0 alone says why, in one line; no rank waits forever for another.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct RunResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

RunResult run(const std::string& cmd) {
  RunResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p) != nullptr) r.out += buf.data();
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

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

TEST(TrainDevice, CpuIsTheDefaultAndStillTrains) {
  RunResult r = run(train_np(2) + " --device cpu --iterations 3 --no-eval --widths 16");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("epoch 1: 3 iterations"), std::string::npos) << r.out;
}

}  // namespace
