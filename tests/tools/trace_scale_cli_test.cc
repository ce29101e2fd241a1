// A traced run at another scale as a user asks for it: `replay --gpus` and `whatif --gpus` on
// the bundled two-rank NCCL trace, what the output says the trace cannot, and the refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli_runner.h"
#include "common/nccl_trace.h"
#include "common/temp.h"
#include "dagsgd/model/io.h"

namespace dagsgd {
namespace {

using testing::run_cli;
using testing::slurp;
namespace fs = std::filesystem;

// One rank's Kineto trace of a job of two ranks: 15 allreduces and 6 broadcasts of both.
const std::string kNccl = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/nccl_data.json.gz";

// Exits 2 with one line that contains `words`.
void refused(const std::string& args, const std::string& words) {
  auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(words), std::string::npos) << args << "\n" << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

TEST(TraceScaleCli, ReplaySaysWhatTheTraceCannot) {
  const std::string scaled = "replay " + kNccl + " --intra pcie3 --inter 10gbe --gpus-per-node 8";
  auto text = run_cli(scaled + " --gpus 64");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("Scale: scaled from 2 traced ranks to 64: each traced rank's compute "
                          "stands for 32 GPUs; per-rank noise at 64 GPUs is not in the trace\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("21 grew with the job"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Change from the traced 2 ranks: "), std::string::npos);
  // --nodes says the same in whole nodes.
  auto nodes = run_cli(scaled + " --nodes 8");
  ASSERT_EQ(nodes.code, 0) << nodes.err;
  EXPECT_EQ(nodes.out, text.out);

  auto json = run_cli(scaled + " --gpus 64 --json");
  ASSERT_EQ(json.code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["scale"]["traced_ranks"], 2);
  EXPECT_EQ(j["scale"]["gpus"], 64);
  EXPECT_EQ(j["scale"]["gpus_per_traced_rank"], 32);
  EXPECT_EQ(j["scale"]["grown_collectives"], 21);
  EXPECT_EQ(j["scale"]["per_rank_noise_modeled"], false);
  EXPECT_TRUE(j["scale"]["kept_size_collectives"].empty());
  // More GPUs on 10GbE: a slower iteration than on the traced two.
  auto two = nlohmann::json::parse(run_cli(scaled + " --gpus 2 --json").out);
  EXPECT_FALSE(two.contains("scale")) << "the run's own ranks are not scaled";
  EXPECT_GT(j["predicted_iteration_s"].get<double>(), two["predicted_iteration_s"].get<double>());
}

TEST(TraceScaleCli, ReplayRefusesWhatCannotBeScaled) {
  const std::string base = "replay " + kNccl;
  refused(base + " --intra pcie3 --inter 10gbe --gpus 64 --comm measured",
          "--gpus: the traced durations of the collectives hold for the run's own ranks");
  refused(base + " --gpus 64", "--gpus scales the run onto a target fabric");
  refused(base + " --intra pcie3 --inter 10gbe --gpus 3",
          "--gpus 3: 3 GPUs is not a whole multiple of the run's 2 ranks");
  refused(base + " --intra pcie3 --inter 10gbe --gpus 64 --nodes 4 --gpus-per-node 8",
          "--gpus 64 and --nodes 4 disagree: 4 nodes of 8 GPUs are 32");
  // A single-GPU profile: no collective says what the exchange would be.
  const std::string dir = testing::fresh_test_dir("dagsgd-scale-cli");
  const std::string one = dir + "/rank0.json";
  ASSERT_TRUE(model::write_file(
                  one,
                  testing::kineto_rank(0, 1, 2000, 1200,
                                       testing::kineto_kernel(1, 100, 1000, "volta_sgemm", "")),
                  true)
                  .ok());
  refused("replay " + one + " --intra pcie3 --inter 10gbe --gpus 8",
          "records no collective that grows with the job");
}

TEST(TraceScaleCli, WhatifGivesOnePointPerCount) {
  const std::string out = testing::fresh_test_dir("dagsgd-scale-whatif") + "/report";
  const std::string sweep =
      "whatif " + kNccl + " --batch 32 --fabrics 10gbe,ib-edr --gpus 2,16,64 --gpus-per-node 8";
  auto r = run_cli(sweep + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(slurp(out + "/results.json"));
  EXPECT_EQ(j["workload"]["scaled"],
            "scaled from 2 traced ranks to 16, 64: each traced rank's compute stands for 8, 32 "
            "GPUs; per-rank noise at 16, 64 GPUs is not in the trace");
  EXPECT_EQ(j["workload"]["GPUs per node"], "8") << "the scaled counts' nodes";
  ASSERT_EQ(j["scenarios"].size(), 6u);
  auto exposed = [&](const std::string& fabric, int gpus) {
    for (const auto& s : j["scenarios"]) {
      if (s["fabric"] == fabric && s["gpus"] == gpus) {
        return s["breakdown"]["comm_exposed"].get<double>();
      }
    }
    ADD_FAILURE() << fabric << " " << gpus;
    return 0.0;
  };
  EXPECT_LT(exposed("10gbe", 2), exposed("10gbe", 16));
  EXPECT_LT(exposed("10gbe", 16), exposed("10gbe", 64));
  EXPECT_LT(exposed("ib-edr", 64), exposed("10gbe", 64));
  for (const auto& s : j["scenarios"]) {
    const double want = 32.0 * s["gpus"].get<int>() / s["iteration_time_s"].get<double>();
    EXPECT_NEAR(s["throughput_samples_per_s"].get<double>(), want, 1e-5 * want) << s["label"];
  }
  // Counts that do not fit: one line naming the flag and the value.
  refused(sweep.substr(0, sweep.find("--gpus")) + "--gpus 2,3 --out " + out + "-3",
          "--gpus 3: 3 GPUs is not a whole multiple of the run's 2 ranks");
  refused(
      sweep.substr(0, sweep.find("--gpus")) + "--gpus 12 --gpus-per-node 8 --out " + out + "-12",
      "--gpus 12: 12 GPUs do not fill whole nodes of 8 GPUs");
  EXPECT_FALSE(fs::exists(out + "-3"));
}

}  // namespace
}  // namespace dagsgd
