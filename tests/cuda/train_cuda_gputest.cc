// GPU test (label gpu): `mpirun -np 2 dagsgd train --device cuda --trace DIR` learns, and each
// rank's trace holds CUPTI kernels attributed to every layer's forward and backward, h2d copies,
// ac2g flows and the collectives, on the same clock as the CPU spans. Skips without a GPU.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "common/cli_runner.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "dagsgd/runtime/cuda/cuda_ops.h"

namespace {

namespace fs = std::filesystem;

using dagsgd::testing::run;
using dagsgd::testing::RunResult;

double number_after(const std::string& out, const std::string& what) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(what + " ([0-9.]+)"))) return -1;
  return std::stod(m[1].str());
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// Trains 2 ranks on the one GPU and checks the run; `extra` adds flags, `groups` is the number
// of collectives per iteration that gives.
void train_and_check(std::string extra, int iters, int groups) {
#ifndef DAGSGD_BINARY
  (void)extra;
  (void)iters;
  (void)groups;
  GTEST_SKIP() << "built without MPI: no dagsgd train";
#else
  if (dagsgd::runtime::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device";
  fs::path dir = fs::temp_directory_path() / ("dagsgd-cuda-train-" + std::to_string(getpid()));
  fs::remove_all(dir);
  // tools/gpu-check points this at the data where the Debian package is not installed.
  if (const char* data = std::getenv("DAGSGD_FASHION_MNIST"); data != nullptr && *data != 0) {
    extra += std::string(" --data ") + data;
  }
  RunResult r = run("timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 " +
                    std::string(DAGSGD_BINARY) + " train --model mlp --device cuda --iterations " +
                    std::to_string(iters) + " --trace " + dir.string() + " " + extra);
  ASSERT_EQ(r.code, 0) << r.out;
  std::printf("%s", r.out.c_str());
  // Training works: the mean loss over the run is well below ln(10) = 2.30 (where an untrained
  // 10-class net starts) and the final test loss is below that mean.
  double train_loss = number_after(r.out, "train loss");
  double test_loss = number_after(r.out, "test loss");
  double accuracy = number_after(r.out, "test accuracy");
  EXPECT_GT(train_loss, 0) << r.out;
  EXPECT_LT(train_loss, 1.8) << r.out;
  EXPECT_LT(test_loss, train_loss) << r.out;
  EXPECT_GT(accuracy, 60.0) << r.out;

  auto manifest = read_json(dir / "run.manifest");
  EXPECT_EQ(manifest["config"]["device"], "cuda");
  EXPECT_EQ(manifest["config"]["backend"], "cuda-cublas");
  const std::set<std::string> layers = {"fc1", "fc2", "fc3"};
  for (int rank = 0; rank < 2; ++rank) {
    auto t = read_json(dir / ("rank-" + std::to_string(rank) + ".trace.json"));
    std::map<int, std::pair<double, double> > step;            // iteration -> [start, end] (us)
    std::map<std::string, int> kernels;                        // "layer phase" -> count
    std::vector<std::tuple<int, double, double> > attributed;  // iteration, start, end
    int h2d_copies = 0;
    int flows_s = 0;
    int flows_f = 0;
    int collectives = 0;
    int runtime_calls = 0;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] == "M") continue;
      EXPECT_EQ(e["pid"], rank);
      std::string cat = e.value("cat", "");
      if (e["ph"] == "s" || e["ph"] == "f") {
        EXPECT_EQ(cat, "ac2g");
        (e["ph"] == "s" ? flows_s : flows_f) += 1;
        continue;
      }
      const auto& args = e["args"];
      double ts = e["ts"].get<double>();
      double end = ts + e["dur"].get<double>();
      if (cat == "user_annotation") {
        step[args["iteration"].get<int>()] = {ts, end};
      } else if (cat == "kernel" || cat == "gpu_memcpy") {
        EXPECT_GE(e["tid"].get<std::int64_t>(), 100000);
        if (!args.contains("layer")) continue;  // evaluation runs unattributed
        std::string phase = args["phase"];
        int it = args["iteration"];
        if (it >= 0) attributed.emplace_back(it, ts, end);
        if (cat == "kernel") ++kernels[args["layer"].get<std::string>() + " " + phase];
        if (cat == "gpu_memcpy" && phase == "h2d" && it >= 0) ++h2d_copies;
      } else if (cat == "cuda_runtime") {
        ++runtime_calls;
      } else if (cat == "cpu_op" && e["tid"].get<std::int64_t>() >= 1 &&
                 e["tid"].get<std::int64_t>() < 90000) {
        EXPECT_EQ(args["phase"], "comm");
        ++collectives;
      }
    }
    ASSERT_EQ(step.size(), static_cast<std::size_t>(iters));
    for (const auto& l : layers) {
      EXPECT_GE(kernels[l + " forward"], iters) << "rank " << rank << " " << l;
      EXPECT_GE(kernels[l + " backward"], iters) << "rank " << rank << " " << l;
    }
    EXPECT_GE(kernels["loss forward"], iters);
    EXPECT_GE(kernels["all update"], iters);
    EXPECT_GE(h2d_copies, 2 * iters);  // images and labels (at least one record per copy)
    EXPECT_GT(runtime_calls, 0);
    EXPECT_GT(flows_s, 0);
    EXPECT_GE(flows_f, flows_s);
    EXPECT_EQ(collectives, groups * iters);
    // Same clock as the CPU spans: the GPU work of iteration i lies inside ProfilerStep#i (the
    // iteration's end waits for the device). 50 us of slack for the clock conversions.
    int outside = 0;
    for (const auto& [it, start, end] : attributed) {
      auto s = step.at(it);
      if (start < s.first - 50 || end > s.second + 50) ++outside;
    }
    EXPECT_EQ(outside, 0) << "rank " << rank << ": of " << attributed.size() << " activities";
  }
  fs::remove_all(dir);
#endif
}

TEST(TrainCudaGpu, TwoRanksOneGpuTracedRun) { train_and_check("", 50, 1); }

TEST(TrainCudaGpu, TwoRanksWaitFreeBackpropFp16) {
  train_and_check("--overlap wfbp --precision fp16", 30, 3);
}

}  // namespace
