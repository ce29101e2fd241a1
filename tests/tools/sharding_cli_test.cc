// dagsgd predict and whatif with --sharding as a user runs them: memory per GPU, a job too
// large for the GPU refused with exit 2, and the whatif report's section per sharding level.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli_runner.h"

namespace dagsgd {
namespace {

using testing::run_cli;

const std::string kJob =
    "predict --network bert-large --batch 8 --gpu a100 --precision fp16 --nodes 2 "
    "--gpus-per-node 8 --intra nvlink3 --inter ib-hdr";

TEST(ShardingCli, PredictReportsMemoryPerGpuAndTheGathers) {
  auto none = run_cli(kJob + " --json");
  auto z3 = run_cli(kJob + " --sharding zero3 --json");
  ASSERT_EQ(none.code, 0) << none.err;
  ASSERT_EQ(z3.code, 0) << z3.err;
  auto a = nlohmann::json::parse(none.out);
  auto b = nlohmann::json::parse(z3.out);
  EXPECT_EQ(a["sharding"], "none");
  EXPECT_EQ(b["sharding"], "zero3");
  EXPECT_EQ(a["memory_per_gpu"]["parameter_allgathers_per_iteration"], 0);
  EXPECT_GT(b["memory_per_gpu"]["parameter_allgathers_per_iteration"].get<int>(), 0);
  // Mixed precision with Adam: 16 bytes per parameter unsharded, divided by 16 GPUs under
  // zero3 (the gathered units and the activations come on top).
  const double psi = a["memory_per_gpu"]["parameters_bytes"].get<double>() / 2;
  EXPECT_DOUBLE_EQ(a["memory_per_gpu"]["optimizer_state_bytes"].get<double>(), 12 * psi);
  EXPECT_DOUBLE_EQ(b["memory_per_gpu"]["optimizer_state_bytes"].get<double>(), 12 * psi / 16);
  EXPECT_DOUBLE_EQ(b["memory_per_gpu"]["parameters_bytes"].get<double>(), 2 * psi / 16);
  EXPECT_DOUBLE_EQ(b["memory_per_gpu"]["gpu_capacity_bytes"].get<double>(), 80.0 * (1 << 30));
  EXPECT_GT(b["breakdown"]["comm_total"].get<double>(), a["breakdown"]["comm_total"].get<double>());
  auto text = run_cli(kJob + " --sharding fsdp");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("Memory per GPU (fsdp"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("parameter all-gathers per iteration"), std::string::npos);
}

TEST(ShardingCli, BadLevelsAndJobsThatDoNotFitAreExitTwo) {
  auto bad = run_cli(kJob + " --sharding zero9");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("valid sharding levels: none, zero1, zero2, zero3, fsdp"),
            std::string::npos)
      << bad.err;
  // One layer of 2e9 parameters: 32 GB of fp32 model states with Adam on a 12 GiB K80.
  const std::string file = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-big.json";
  std::ofstream(file) << R"({"name": "big", "description": "one huge layer", "source": "test",
    "input_shape": [20000], "layers": [{"name": "fc", "type": "fc",
    "params": [{"name": "weight", "shape": [100000, 20000]}], "forward_flops": 4e9,
    "activation_elements": 100000}]})";
  const std::string job =
      "predict --network " + file + " --batch 1 --gpu k80 --nodes 16 --inter ib-edr";
  auto whole = run_cli(job);
  EXPECT_EQ(whole.code, 2) << whole.out;
  EXPECT_NE(whole.err.find("does not fit the GPU's memory"), std::string::npos) << whole.err;
  // Sharded over 16 GPUs: 2 GB of states plus the layer gathered whole (8 GB).
  auto sharded = run_cli(job + " --sharding zero3");
  EXPECT_EQ(sharded.code, 0) << sharded.err;
  std::filesystem::remove(file);
}

TEST(ShardingCli, WhatifComparesShardingLevelsPerFabric) {
  const auto out = std::filesystem::temp_directory_path() /
                   ("dagsgd-sharding-whatif-" + std::to_string(::getpid()));
  std::filesystem::remove_all(out);
  auto r = run_cli(
      "whatif --network resnet50 --batch 32 --gpu v100 --fabrics 10gbe,ib-edr --gpus 8 "
      "--gpus-per-node 4 --sharding none,zero2,zero3 --out " +
      out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream md(out / "report.md");
  const std::string report((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("## Sharding levels per fabric"), std::string::npos);
  for (const char* row : {"| 10gbe | 8 | zero2 |", "| ib-edr | 8 | zero3 |"}) {
    EXPECT_NE(report.find(row), std::string::npos) << row;
  }
  std::ifstream js(out / "results.json");
  auto j = nlohmann::json::parse(js);
  int sharded = 0;
  for (const auto& s : j["scenarios"]) sharded += s["sharding"] != "none" ? 1 : 0;
  EXPECT_EQ(sharded, 4);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace dagsgd
