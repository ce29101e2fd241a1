// A freshly traced 2-rank `dagsgd train` run, analyzed and replayed (label mpi): the replay with
// modeled communication reproduces the measured iteration within a tolerance, and with measured
// communication almost exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli_runner.h"

namespace {

using dagsgd::testing::run_cli;
namespace fs = std::filesystem;

TEST(ReplayMpi, TracedTwoRankRunReplaysWithinTolerance) {
  std::string dir = (fs::temp_directory_path() / "dagsgd-replay-mpi-run").string();
  fs::remove_all(dir);
  std::string cmd = "mpirun --allow-run-as-root --oversubscribe -np 2 " +
                    std::string(DAGSGD_BINARY) +
                    " train --model mlp --iterations 40 --overlap wfbp --no-eval --trace " + dir +
                    " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);

  auto modeled = run_cli("replay --json " + dir);
  ASSERT_EQ(modeled.code, 0) << modeled.err;
  auto m = nlohmann::json::parse(modeled.out);
  EXPECT_EQ(m["source"], "dagsgd-train");
  EXPECT_EQ(m["ranks"], 2);
  EXPECT_EQ(m["iterations"], 40);
  EXPECT_EQ(m["comm"]["source"], "run");
  EXPECT_EQ(m["comm"]["modeled_collectives"], 3 * 40);  // mlp: 3 layers with parameters
  // The manifest's mean is what replay compares against.
  auto manifest = nlohmann::json::parse(dagsgd::testing::slurp(dir + "/manifest.json"));
  EXPECT_NEAR(m["measured_iteration_s"].get<double>(),
              manifest["iterations"]["mean_s"].get<double>(), 1e-6);
  EXPECT_LT(std::abs(m["error"].get<double>()), 0.10) << modeled.out;

  auto measured = run_cli("replay --json --comm measured " + dir);
  ASSERT_EQ(measured.code, 0) << measured.err;
  auto c = nlohmann::json::parse(measured.out);
  EXPECT_LT(std::abs(c["error"].get<double>()), 0.02) << measured.out;

  auto analyzed = run_cli("analyze --json " + dir);
  ASSERT_EQ(analyzed.code, 0) << analyzed.err;
  auto a = nlohmann::json::parse(analyzed.out);
  EXPECT_EQ(a["ranks"].size(), 2u);
  EXPECT_EQ(a["dag"]["mode"], "ssgd");
  EXPECT_EQ(a["stragglers"]["collectives"], 3 * 40);
  // Per rank, the parts never exceed the iteration.
  for (const auto& r : a["ranks"]) {
    double w = r["iteration_s"].get<double>();
    EXPECT_LE(r["compute_s"].get<double>(), w * 1.0001);
    EXPECT_LE(r["comm_exposed_s"].get<double>() + r["overlap_s"].get<double>(),
              r["comm_total_s"].get<double>() * 1.0001 + 1e-9);
  }
  fs::remove_all(dir);
}

}  // namespace
