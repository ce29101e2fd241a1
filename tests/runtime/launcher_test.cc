// launcher_env(): the rank and size an MPI launcher exported, one list of launchers.
#include "dagsgd/runtime/launcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <utility>

namespace dagsgd::runtime {
namespace {

using Vars = std::initializer_list<std::pair<const char*, const char*>>;

// launcher_env() with exactly `vars` of the launchers' variables set (ctest may itself run under
// a launcher, so every other one is unset first).
std::optional<LauncherEnv> launcher_with(Vars vars) {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                        "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"}) {
    unsetenv(v);
  }
  for (const auto& [k, v] : vars) setenv(k, v, 1);
  return launcher_env();
}

void expect_rank_size(Vars vars, int rank, int size) {
  auto env = launcher_with(vars);
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->rank, rank);
  EXPECT_EQ(env->size, size);
}

TEST(LauncherEnv, NoLauncherIsNullopt) { EXPECT_FALSE(launcher_with({}).has_value()); }

TEST(LauncherEnv, EachLauncher) {
  expect_rank_size({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}}, 3, 8);
  expect_rank_size({{"PMI_RANK", "2"}, {"PMI_SIZE", "6"}}, 2, 6);
  expect_rank_size({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}}, 5, 16);
  // PMIx exports no size: another launcher's is taken.
  expect_rank_size({{"PMIX_RANK", "1"}, {"SLURM_NTASKS", "4"}}, 1, 4);
}

TEST(LauncherEnv, OpenMpiComesFirst) {
  expect_rank_size({{"SLURM_PROCID", "0"},
                    {"SLURM_NTASKS", "1"},
                    {"OMPI_COMM_WORLD_RANK", "2"},
                    {"OMPI_COMM_WORLD_SIZE", "3"}},
                   2, 3);
}

TEST(LauncherEnv, GarbageIsNoLauncherAndSizeIsAtLeastRankPlusOne) {
  EXPECT_FALSE(launcher_with({{"OMPI_COMM_WORLD_RANK", "x1"}}).has_value());
  EXPECT_FALSE(launcher_with({{"OMPI_COMM_WORLD_RANK", "-1"}}).has_value());
  EXPECT_FALSE(launcher_with({{"PMI_RANK", ""}}).has_value());
  expect_rank_size({{"OMPI_COMM_WORLD_RANK", "7"}, {"OMPI_COMM_WORLD_SIZE", "2"}}, 7, 8);
  expect_rank_size({{"OMPI_COMM_WORLD_RANK", "7"}}, 7, 8);
  launcher_with({});
}

}  // namespace
}  // namespace dagsgd::runtime
