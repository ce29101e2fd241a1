// Software stacks on the command line: `calibrate --stack --link` fits a stack on the B-Caffe OSU
// logs and writes a file that `predict --stack FILE` takes; stacks change predictions; bad flags
// and files exit 2 with a message that says where.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli_runner.h"
#include "common/text.h"
#include "dagsgd/model/io.h"

namespace {

using dagsgd::testing::run_cli;

const std::string kBcaffeDir = std::string(DAGSGD_SHARED_DATA) + "/published/b-caffe/";
const std::string kLogs =
    kBcaffeDir + "allreduce2.log " + kBcaffeDir + "allreduce4.log " + kBcaffeDir + "allreduce8.log";

using dagsgd::testing::contains;

std::string stack_temp_dir() {
  std::string d = ::testing::TempDir() + "/stack-cli-" + std::to_string(::getpid());
  ::mkdir(d.c_str(), 0755);
  return d;
}

double iteration_s(const std::string& args) {
  auto r = run_cli("predict " + args + " --json");
  EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("iteration_time_s")) return 0;
  return j["iteration_time_s"].get<double>();
}

// The bundled openmpi-4.1-tcp values are what the command in their source produces.
TEST(StackCli, CalibrateReproducesTheBundledOpenMpiStack) {
  auto r = run_cli("calibrate " + kLogs + " --link 10gbe --stack openmpi-4.1-tcp --no-step --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["link"], "10gbe");
  EXPECT_EQ(j["link_class"], "inter");
  EXPECT_EQ(j["bandwidth_limit"], "connection");
  EXPECT_NEAR(j["per_message_us"].get<double>(), 8.54, 0.01);
  EXPECT_NEAR(j["connection_gbps"].get<double>(), 4.34, 0.01);
  EXPECT_EQ(j["points"].size(), 3u * 266u);
  const auto& lib = j["stack"]["library"];
  EXPECT_TRUE(contains(lib["per_message_us"]["source"].get<std::string>(),
                       "transfer calibration on link '10gbe'"))
      << lib["per_message_us"].dump();
  EXPECT_TRUE(
      contains(lib["per_message_us"]["source"].get<std::string>(), "--stack openmpi-4.1-tcp"));
}

TEST(StackCli, CalibratedStackFileDrivesPredict) {
  const std::string dir = stack_temp_dir();
  const std::string out = dir + "/site.json";
  std::remove(out.c_str());
  auto r = run_cli("calibrate " + kLogs + " --link 10gbe --stack openmpi-4.1-tcp --name site " +
                   "--out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "per-connection limit")) << r.out;
  EXPECT_TRUE(contains(r.out, "wrote '" + out + "'")) << r.out;
  // Refuses to overwrite without --force.
  auto again = run_cli("calibrate " + kLogs + " --link 10gbe --stack openmpi-4.1-tcp --out " + out);
  EXPECT_EQ(again.code, 2) << again.err;

  // The same what-if on the bare links and through the calibrated stack: the stack's per-message
  // cost and per-connection limit make the 10 GbE cluster slower, and a faster fabric helps less.
  const std::string job = "--network resnet50 --gpu v100 --nodes 8 --batch 32 --overlap wfbp ";
  const double bare = iteration_s(job + "--inter 10gbe");
  const double stacked = iteration_s(job + "--inter 10gbe --stack " + out);
  EXPECT_GT(stacked, bare);
  const double stacked_25 = iteration_s(job + "--inter 25gbe --stack " + out);
  EXPECT_LT(stacked_25, stacked);
}

TEST(StackCli, FrameworkGroupingIsTheDefaultOverlap) {
  auto r = run_cli(
      "predict --network resnet50 --gpu v100 --nodes 4 --gpus-per-node 8 --inter ib-edr --intra "
      "nvlink2 --batch 64 --stack pytorch-ddp-nccl-2.7-ib");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "bucket:25,1")) << r.out;
  EXPECT_TRUE(contains(r.out, "pytorch-ddp-nccl-2.7-ib")) << r.out;
}

TEST(StackCli, ListsEveryStackAsTextAndJson) {
  auto r = run_cli("stack list");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"apex-ddp-bert-nccl-2.7-ib", "horovod-0.9-openmpi-4.1-verbs",
                           "tf-2.3-keras-nccl-2.7-ib", "PyTorch DDP 1.5-1.10", "socket (TCP)",
                           "pytorch-ddp+nccl-2.7-socket", "horovod-0.21-nccl-2.7-ib"}) {
    EXPECT_TRUE(contains(r.out, name)) << name << "\n" << r.out;
  }
  auto j = run_cli("stack list --json");
  ASSERT_EQ(j.code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << j.out;
  EXPECT_EQ(doc["stacks"].size(), 18u);
  EXPECT_EQ(doc["stacks"][0]["name"], "apex-ddp-bert-nccl-2.7-ib");
  for (const char* key : {"framework", "library", "transport", "changes", "source"}) {
    EXPECT_TRUE(doc["stacks"][0].contains(key)) << key;
  }
  bool horovod = false;
  for (const auto& s : doc["short_names"]) {
    horovod = horovod || (s["name"] == "horovod" && s["stack"] == "horovod-0.21-nccl-2.7-ib");
  }
  EXPECT_TRUE(horovod) << doc["short_names"].dump();
}

// A short name predicts exactly what its sourced stack does; a composition predicts with its
// own library, and `stack show` writes it as a file predict takes.
TEST(StackCli, ShortAndComposedNamesWorkWhereStacksDo) {
  const std::string job =
      "--network vgg16 --gpu v100 --nodes 4 --gpus-per-node 8 --inter 100gbe --intra nvlink2 "
      "--batch 64 ";
  EXPECT_EQ(iteration_s(job + "--stack pytorch-ddp"),
            iteration_s(job + "--stack pytorch-ddp-nccl-2.7-ib"));
  const double composed = iteration_s(job + "--stack pytorch-ddp+nccl-2.7-socket");
  EXPECT_GT(composed, iteration_s(job + "--stack pytorch-ddp"));  // sockets cap 100 GbE
  const std::string file = stack_temp_dir() + "/composed.json";
  auto show = run_cli("stack show pytorch-ddp+nccl-2.7-socket");
  ASSERT_EQ(show.code, 0) << show.err;
  ASSERT_TRUE(dagsgd::model::write_file(file, show.out, true).ok());
  EXPECT_EQ(iteration_s(job + "--stack " + file), composed);
  auto unknown = run_cli("predict " + job + "--stack pytorch");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_TRUE(contains(unknown.err, "unknown stack 'pytorch'")) << unknown.err;
  EXPECT_TRUE(contains(unknown.err, "pytorch-ddp, ")) << unknown.err;
  EXPECT_EQ(run_cli("stack show nccl-3").code, 2);
}

TEST(StackCli, BadInputExitsTwo) {
  const std::string dir = stack_temp_dir();
  ASSERT_TRUE(dagsgd::model::write_file(dir + "/nosource.json",
                                        R"({"schema": "dagsgd-stack/1", "name": "n", )"
                                        R"("description": "d", "base": "openmpi-4.1-tcp", )"
                                        R"("library": {"per_message_us": {"value": 2}}})",
                                        true)
                  .ok());
  const std::string calibrate = "calibrate " + kLogs;
  const std::string predict = "predict --network resnet50 --gpu v100 --nodes 2 --inter 10gbe";
  // Each command line, and what its message must say.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {calibrate + " --stack openmpi-4.1-tcp", "--stack needs --link"},
      {calibrate + " --link 10gbe", "--link applies to a stack fit"},
      {calibrate + " --link 10gbe --stack openmpi-4.1-tcp --algorithm ring",
       "--algorithm applies to a fabric fit"},
      {calibrate + " --link 10gbe --stack openmpi-4.1-tcp --call bcast", "unknown call 'bcast'"},
      {calibrate + " --link 7gbe --stack openmpi-4.1-tcp", "7gbe"},
      {predict + " --stack mpich-9", "mpich-9"},
      {predict + " --stack mpich-9", "openmpi-4.1-tcp"},
      {predict + " --stack " + dir + "/nosource.json",
       "nosource.json': library.per_message_us: missing 'source'"},
      {predict + " --overlap framework", "no stack given"},
  };
  for (const auto& [args, what] : cases) {
    auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_TRUE(contains(r.err, what)) << args << "\n" << r.err;
  }
}

}  // namespace
