// The experiments `dagsgd validate` runs, resolved from names without running any: unknown names
// list the valid ones, --quick's grid, the order of the runs and the profiles as fabrics.
#include "dagsgd/runtime/emulated_cluster.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "dagsgd/model/hardware.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/trace/manifest.h"

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
  n = ExperimentNames{};
  n.exchanges = {"allreduce", "ring"};
  g = resolve_experiments(n, s);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("unknown exchange 'ring'"), std::string::npos)
      << g.error().message;
  EXPECT_NE(g.error().message.find("rsag"), std::string::npos) << g.error().message;
  // A parameter server's spans stay measured in replay: nothing to predict, said so.
  n.exchanges = {"ps"};
  g = resolve_experiments(n, s);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("--exchange 'ps'"), std::string::npos) << g.error().message;
  n.exchanges = {};
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
  EXPECT_EQ(runs[1].id(), "emu-250m_p2_wfbp_mlp-wide");
  // The first repeat keeps the plain name, so a grid measured once reads as its first repeat.
  EXPECT_EQ(runs[1].dir_name(0), "emu-250m_p2_wfbp_mlp-wide");
  EXPECT_EQ(runs[1].dir_name(2), "emu-250m_p2_wfbp_mlp-wide.r3");

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
  // The shaper's burst travels with the link: 1 ms of 250 Mbit/s and one 64 KiB GSO segment.
  EXPECT_EQ(f->burst_bytes, 31250 + 65536);
  std::filesystem::remove(path);
}

// Each profile's burst is what tools/emucluster shapes its links to (the script prints it from
// the same bucket rule shape() uses), so the predictions price the links the runs had.
TEST(EmulatedCluster, ProfilesStateTheBurstTheShaperGives) {
  auto profiles = load_cluster_profiles(model::data_path("hardware/emucluster_profiles.json"));
  ASSERT_TRUE(profiles.ok()) << profiles.error().message;
  ASSERT_GE(profiles->size(), 3u);
  for (const auto& p : *profiles) {
    const std::string cmd =
        std::string(DAGSGD_SOURCE_DIR) + "/tools/emucluster burst " + p.tc_rate + " 2>&1";
    FILE* f = ::popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[128] = {};
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    const int status = ::pclose(f);
    ASSERT_EQ(status, 0) << cmd << ": " << std::string(buf, n);
    EXPECT_EQ(std::stoll(std::string(buf, n)), p.burst_bytes) << p.name;
  }
  // A profile file without it is refused, naming the profile and the command that gives it.
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("noburst-" + std::to_string(::getpid()) + ".json"))
                               .string();
  std::ofstream(path) << R"({"profiles": [{"name": "x", "tc_rate": "100mbit", "rate_gbps": 0.1,
                             "latency_us": 8, "source": "s"}]})";
  auto bad = load_cluster_profiles(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("('x'): 'burst_bytes' missing"), std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("tools/emucluster burst 100mbit"), std::string::npos);
  std::filesystem::remove(path);
}

std::string temp_dir(const std::string& name) {
  const auto dir =
      std::filesystem::path(::testing::TempDir()) / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// `validate --reuse` without grid flags re-predicts the grid OUT/grid.json records.
TEST(EmulatedCluster, TheGridReadsBackFromItsFile) {
  ExperimentSettings s = settings();
  ExperimentNames n;
  n.profiles = {"emu-400m", "emu-150m"};
  n.ranks = {3};
  n.overlaps = {"wfbp"};
  n.models = {"mlp-mid", "fc-small"};
  s.iterations = 30;
  s.warmup = 5;
  s.batch = 32;
  s.bench_iterations = 7;
  s.repeats = 3;
  auto g = resolve_experiments(n, s);
  ASSERT_TRUE(g.ok()) << g.error().message;
  const std::string dir = temp_dir("grid");
  const std::string path = dir + "/" + kGridFile;
  ASSERT_TRUE(write_grid(path, *g, s).ok());

  ExperimentSettings back = settings();
  ExperimentNames names;
  auto read = read_grid(path, names, back);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_TRUE(*read);
  EXPECT_EQ(names.profiles, n.profiles);
  EXPECT_EQ(names.ranks, n.ranks);
  EXPECT_EQ(names.overlaps, n.overlaps);
  EXPECT_EQ(names.models, n.models);
  EXPECT_EQ(back.iterations, 30);
  EXPECT_EQ(back.warmup, 5);
  EXPECT_EQ(back.batch, 32);
  EXPECT_EQ(back.bench_iterations, 7);
  EXPECT_EQ(back.repeats, 3);
  EXPECT_EQ(back.cluster, s.cluster);  // not part of the grid: left as it was

  // No file: nothing read, nothing changed.
  names = ExperimentNames{};
  read = read_grid(dir + "/none.json", names, back);
  ASSERT_TRUE(read.ok());
  EXPECT_FALSE(*read);
  EXPECT_EQ(names.ranks, (std::vector<int>{2, 4}));

  // A damaged file names itself and the field; the names stay the defaults.
  std::ofstream(path) << R"({"profiles": ["emu-600m"], "ranks": [2], "overlaps": ["none"],
                            "models": ["cnn"], "iterations": "many", "warmup": 4, "batch": 64,
                            "ranks_per_host": 1, "bench_iterations": 10})";
  read = read_grid(path, names, back);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find(path), std::string::npos) << read.error().message;
  EXPECT_NE(read.error().message.find("'iterations'"), std::string::npos) << read.error().message;
  EXPECT_EQ(names.profiles.size(), 3u);
  std::ofstream(path) << R"({"profiles": ["emu-600m"], "ranks": [2], "overlaps": ["none"],
                            "models": ["cnn"], "iterations": 20, "warmup": 4, "batch": 0,
                            "ranks_per_host": 1, "bench_iterations": 10})";
  read = read_grid(path, names, back);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find("'batch' missing or not an integer >= 1"), std::string::npos)
      << read.error().message;
  // A grid file from before --repeats measured each configuration once.
  std::ofstream(path) << R"({"profiles": ["emu-600m"], "ranks": [2], "overlaps": ["none"],
                            "models": ["cnn"], "iterations": 20, "warmup": 4, "batch": 64,
                            "ranks_per_host": 1, "bench_iterations": 10})";
  read = read_grid(path, names, back);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(back.repeats, 1);
  std::ofstream(path) << R"({"profiles": ["emu-600m"], "ranks": [2], "overlaps": ["none"],
                            "models": ["cnn"], "iterations": 20, "warmup": 4, "batch": 64,
                            "ranks_per_host": 1, "bench_iterations": 10, "repeats": 0})";
  read = read_grid(path, names, back);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find("'repeats' is not an integer from 1 to 20"),
            std::string::npos)
      << read.error().message;
  std::ofstream(path) << "[1, 2";
  EXPECT_FALSE(read_grid(path, names, back).ok());
  std::filesystem::remove_all(dir);
}

TEST(EmulatedCluster, ExchangesAreADimensionOfTheGrid) {
  ExperimentSettings s = settings();
  ExperimentNames n;
  n.quick = true;
  n.exchanges = {"allreduce", "rsag"};
  auto g = resolve_experiments(n, s);
  ASSERT_TRUE(g.ok()) << g.error().message;
  const auto runs = g->runs();
  ASSERT_EQ(runs.size(), 4u);
  // Allreduce runs keep the names grids had before the dimension; the profiles stay innermost.
  EXPECT_EQ(runs[0].id(), "emu-600m_p2_wfbp_mlp-wide");
  EXPECT_EQ(runs[1].id(), "emu-250m_p2_wfbp_mlp-wide");
  EXPECT_EQ(runs[2].id(), "emu-600m_p2_wfbp_rsag_mlp-wide");
  EXPECT_EQ(runs[3].id(), "emu-250m_p2_wfbp_rsag_mlp-wide");
  EXPECT_EQ(runs[3].exchange, "rsag");

  const std::string dir = temp_dir("exchanges");
  const std::string path = dir + "/" + kGridFile;
  ASSERT_TRUE(write_grid(path, *g, s).ok());
  ExperimentSettings back = settings();
  ExperimentNames names;
  auto read = read_grid(path, names, back);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(names.exchanges, n.exchanges);
  // A grid file from before the dimension measured allreduce.
  std::ofstream(path) << R"({"profiles": ["emu-600m"], "ranks": [2], "overlaps": ["none"],
                            "models": ["cnn"], "iterations": 20, "warmup": 4, "batch": 64,
                            "ranks_per_host": 1, "bench_iterations": 10})";
  names.exchanges = {"asa"};
  read = read_grid(path, names, back);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(names.exchanges, (std::vector<std::string>{"allreduce"}));
  std::ofstream(path) << R"({"profiles": ["emu-600m"], "ranks": [2], "overlaps": ["none"],
                            "models": ["cnn"], "iterations": 20, "warmup": 4, "batch": 64,
                            "ranks_per_host": 1, "bench_iterations": 10, "exchanges": []})";
  read = read_grid(path, names, back);
  ASSERT_FALSE(read.ok());
  EXPECT_NE(read.error().message.find("'exchanges'"), std::string::npos) << read.error().message;
  std::filesystem::remove_all(dir);
}

// Two validates on one directory: the second is refused while the first holds it.
TEST(EmulatedCluster, OneValidatePerDirectory) {
  ExperimentSettings s = settings();
  s.out = temp_dir("lock");
  Experiments first(s);
  ASSERT_TRUE(first.make_directories().ok());
  ASSERT_TRUE(first.lock_out().ok());
  Experiments second(s);
  auto refused = second.lock_out();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("in use by another `dagsgd validate`"), std::string::npos)
      << refused.error().message;
  {
    Experiments copy = first;  // a copy shares the lock; the last one to go releases it
    first = Experiments(s);
    EXPECT_FALSE(Experiments(s).lock_out().ok());
  }
  EXPECT_TRUE(second.lock_out().ok());
  std::filesystem::remove_all(s.out);
}

// A grid that reuses what a fresh OUT holds: `models`, 2 ranks, no overlap, on emu-600m and
// emu-250m.
ExperimentNames reused_grid(ExperimentSettings& s, const std::string& dir,
                            std::vector<std::string> models) {
  s.out = temp_dir(dir);
  s.reuse = true;
  ExperimentNames n;
  n.profiles = {"emu-600m", "emu-250m"};
  n.ranks = {2};
  n.overlaps = {"none"};
  n.models = std::move(models);
  return n;
}

// Short-iteration models train more iterations per run; a reused run of another length (a
// directory measured before, or with other settings) is refused, not measured as if it fit.
TEST(EmulatedCluster, ShortIterationModelsRunLongerAndReusedRunsMustFit) {
  ExperimentSettings s = settings();
  const ExperimentNames n = reused_grid(s, "reuse", {"cnn", "mlp-wide"});
  auto g = resolve_experiments(n, s);
  ASSERT_TRUE(g.ok()) << g.error().message;
  Experiments e(s);
  ASSERT_TRUE(e.make_directories().ok());
  const auto runs = g->runs();
  ASSERT_EQ(runs.size(), 4u);
  ASSERT_EQ(runs[0].model->name, "cnn");
  ASSERT_EQ(runs[2].model->name, "mlp-wide");
  EXPECT_EQ(e.run_iterations(runs[0]), 4 * s.iterations);
  EXPECT_EQ(e.run_iterations(runs[2]), s.iterations);

  // A run directory as `dagsgd train` leaves it, with `count` iterations (the first 4 warm-up).
  auto fake_run = [&](const ExperimentRun& run, int count) {
    trace::RunManifest m;
    m.kind = "train";
    m.ranks = 2;
    m.iterations.warmup = 4;
    m.iterations.times_s.assign(static_cast<std::size_t>(count), 0.05);
    trace::compute_stats(m.iterations);
    const std::string dir = s.out + "/runs/" + run.dir_name(0);
    std::filesystem::create_directories(dir);
    EXPECT_TRUE(trace::write_manifest(dir, m).ok());
  };
  fake_run(runs[0], 20);  // cnn measured with the plain --iterations
  fake_run(runs[2], 20);
  const Measurement stale = e.train(runs[0]);
  ASSERT_FALSE(stale.ok);
  EXPECT_NE(stale.error.find("holds 20 iterations (4 warm-up), this grid trains 80 (4 warm-up)"),
            std::string::npos)
      << stale.error;
  EXPECT_NE(stale.error.find(runs[0].dir_name(0)), std::string::npos) << stale.error;
  const Measurement fits = e.train(runs[2]);
  EXPECT_TRUE(fits.ok) << fits.error;
  EXPECT_DOUBLE_EQ(fits.mean_s, 0.05);
  // A reused run of another exchange is refused, not predicted as this grid's run (a manifest
  // without the key trained allreduce).
  ExperimentRun rsag = runs[2];
  rsag.exchange = "rsag";
  std::filesystem::create_directories(s.out + "/runs/" + rsag.dir_name(0));
  std::filesystem::copy(
      s.out + "/runs/" + runs[2].dir_name(0), s.out + "/runs/" + rsag.dir_name(0),
      std::filesystem::copy_options::overwrite_existing | std::filesystem::copy_options::recursive);
  const Measurement other = e.train(rsag);
  ASSERT_FALSE(other.ok);
  EXPECT_NE(other.error.find("trained --exchange allreduce, this grid's run trains rsag"),
            std::string::npos)
      << other.error;
  std::filesystem::remove_all(s.out);
}

// A reused micro-benchmark log must be timed as validate times it now, back to back; one timed
// between barriers (a grid measured before) is refused, naming it, not calibrated as if it were.
TEST(EmulatedCluster, ReusedBenchmarksMustRunBackToBack) {
  ExperimentSettings s = settings();
  const ExperimentNames n = reused_grid(s, "bench-reuse", {"cnn"});
  auto g = resolve_experiments(n, s);
  ASSERT_TRUE(g.ok()) << g.error().message;
  Experiments e(s);
  ASSERT_TRUE(e.make_directories().ok());
  const std::string log = s.out + "/bench/emu-600m_p2.log";
  const std::string rows =
      "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
      "32768              100.00             90.00            110.00          10\n";
  std::ofstream(log) << "# dagsgd allreduce latency benchmark (OSU format), 2 ranks, 10 "
                        "iterations, MPI_Iallreduce + MPI_Wait, in place\n"
                     << rows;
  auto old = e.benchmark(g->profiles[0], 2, 0);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message.find("'" + log + "' times its calls between barriers"),
            std::string::npos)
      << old.error().message;
  std::ofstream(log) << "# dagsgd allreduce latency benchmark (OSU format), 2 ranks, 10 "
                        "iterations, MPI_Iallreduce + MPI_Wait, in place, back to back (Min, "
                        "Max: the fastest, the slowest rank's mean)\n"
                     << rows;
  auto now = e.benchmark(g->profiles[0], 2, 0);
  ASSERT_TRUE(now.ok()) << now.error().message;
  EXPECT_EQ(*now, log);
  std::filesystem::remove_all(s.out);
}

}  // namespace
}  // namespace dagsgd::runtime
