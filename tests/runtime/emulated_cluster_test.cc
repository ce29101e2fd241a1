// The experiments `dagsgd validate` runs, resolved from names without running any: unknown names
// list the valid ones, --quick's grid, the order of the runs and the profiles as fabrics.
#include "dagsgd/runtime/emulated_cluster.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "dagsgd/model/hardware.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::runtime {
namespace {

// Settings whose tools exist (any file will do: nothing is run).
ExperimentSettings settings() {
  ExperimentSettings s;
  s.cluster = model::data_path("hardware/emucluster_profiles.json");
  s.bench = s.cluster;
  return s;
}

TEST(EmulatedCluster, UnknownNamesListTheValidOnes) {
  ExperimentSettings s = settings();
  ExperimentNames n;
  n.profiles = {"emu-600m", "emu-1g"};
  auto g = resolve_experiments(n, s);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("unknown profile 'emu-1g'"), std::string::npos);
  EXPECT_NE(g.error().message.find("emu-100m"), std::string::npos) << g.error().message;
  n = ExperimentNames{};
  n.models = {"resnet"};
  g = resolve_experiments(n, s);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("mlp-wide"), std::string::npos) << g.error().message;
  n = ExperimentNames{};
  n.profiles = {"emu-600m"};
  g = resolve_experiments(n, s);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("at least two profiles"), std::string::npos);
  n = ExperimentNames{};
  n.overlaps = {"mgwfbp"};
  EXPECT_FALSE(resolve_experiments(n, s).ok());
}

TEST(EmulatedCluster, QuickGridAndTheOrderOfRuns) {
  ExperimentSettings s = settings();
  ExperimentNames n;
  n.quick = true;
  auto g = resolve_experiments(n, s);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(s.iterations, 15);
  EXPECT_EQ(s.warmup, 3);
  EXPECT_EQ(s.profiles_file, model::data_path("hardware/emucluster_profiles.json"));
  const auto runs = g->runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id(), "emu-600m_p2_wfbp_mlp-wide");
  EXPECT_EQ(runs[1].id(), "emu-100m_p2_wfbp_mlp-wide");

  // The full default grid: per model, rank count and overlap, every profile in a row.
  s = settings();
  g = resolve_experiments(ExperimentNames{}, s);
  ASSERT_TRUE(g.ok()) << g.error().message;
  const auto all = g->runs();
  ASSERT_EQ(all.size(), 2u * 2u * 2u * 3u);
  EXPECT_EQ(all[0].id(), "emu-600m_p2_none_cnn");
  EXPECT_EQ(all[2].id(), "emu-100m_p2_none_cnn");
  EXPECT_EQ(all[3].id(), "emu-600m_p2_wfbp_cnn");
  EXPECT_EQ(all.back().id(), "emu-100m_p4_wfbp_mlp-wide");
}

TEST(EmulatedCluster, ProfilesLoadBackAsFabrics) {
  ExperimentSettings s = settings();
  auto g = resolve_experiments(ExperimentNames{}, s);
  ASSERT_TRUE(g.ok()) << g.error().message;
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("profiles-" + std::to_string(::getpid()) + ".json"))
                               .string();
  ASSERT_TRUE(write_profile_fabrics(path, g->profiles).ok());
  auto catalog = model::HardwareCatalog::load_default();
  ASSERT_TRUE(catalog.ok());
  ASSERT_TRUE(catalog->add_fabric_file(path).ok());
  auto f = catalog->fabric("emu-250m-profile");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_DOUBLE_EQ(f->achievable_bandwidth, 0.25e9 / 8);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dagsgd::runtime
