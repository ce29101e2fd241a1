// `dagsgd validate --repeats`: which run of a configuration is predicted (the median), how far its
// repeats spread, and where the table and validation.json say so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "dagsgd/reports/validation_report.h"
#include "dagsgd/sim/validation.h"
#include "dagsgd/trace/osu_log.h"

namespace dagsgd::reports {
namespace {

using sim::choose_median_repeat;

// One micro-benchmark log is taken as it is, several become their median beside the first, a
// failed repeat is the error; a configuration measured once is that run, failed or not.
TEST(ValidationRepeats, BenchmarkLogsAndRunsOfRepeats) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("dagsgd-repeats-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string a = (dir / "emu_p2.log").string();
  const std::string b = (dir / "emu_p2.r1.log").string();
  std::ofstream(a) << "# Size  Avg Latency(us)\n4 10.0\n8 20.0\n";
  std::ofstream(b) << "# Size  Avg Latency(us)\n4 12.0\n8 18.0\n";
  auto one = sim::merge_benchmark_repeats({a}, 10);
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_EQ(*one, a);
  auto both = sim::merge_benchmark_repeats({a, b}, 10);
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(*both, (dir / "emu_p2.median.log").string());
  auto merged = trace::read_latency_log(*both);
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  auto failed = sim::merge_benchmark_repeats({a, model::Error{"benchmark failed"}}, 10);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "benchmark failed");
  sim::Validator validator(true, "flow");
  std::vector<std::string> problems;
  const sim::MeasuredRun crashed{"emu-600m", 2,   "wfbp", "mlp-wide", "nowhere",
                                 false,      0.0, 0.0,    0,          "crashed"};
  auto run = validator.median_of_repeats({crashed}, problems);
  EXPECT_EQ(run.error, "crashed");
  EXPECT_TRUE(run.repeats.empty());
  EXPECT_TRUE(problems.empty());
  fs::remove_all(dir);
}

TEST(ValidationRepeats, TheMedianRunOfThoseThatSucceeded) {
  EXPECT_EQ(choose_median_repeat({0.30, 0.10, 0.20}, {true, true, true}), 2);
  EXPECT_EQ(choose_median_repeat({0.5}, {true}), 0);
  // An even count takes the lower of the two middle runs.
  EXPECT_EQ(choose_median_repeat({0.4, 0.1, 0.3, 0.2}, {true, true, true, true}), 3);
  // A failed repeat takes no part, whatever its number says.
  EXPECT_EQ(choose_median_repeat({0.30, 0.00, 0.20, 0.10}, {true, false, true, true}), 2);
  EXPECT_EQ(choose_median_repeat({0.1, 0.2}, {false, false}), -1);
  EXPECT_EQ(choose_median_repeat({}, {}), -1);
  // Ties keep the earlier repeat.
  EXPECT_EQ(choose_median_repeat({0.2, 0.2, 0.2}, {true, true, true}), 1);
  EXPECT_EQ(choose_median_repeat({0.1, 0.2, 0.2}, {true, true, true}), 1);
}

sim::MeasuredRun run(const std::string& profile, const std::string& model, double mean_s,
                     std::vector<double> repeats) {
  sim::MeasuredRun r;
  r.profile = profile;
  r.ranks = 2;
  r.overlap = "wfbp";
  r.model = model;
  r.ok = true;
  r.mean_s = mean_s;
  r.run_dir = "runs/" + profile;
  for (std::size_t i = 0; i < repeats.size(); ++i) {
    r.repeats.push_back({r.run_dir + (i == 0 ? "" : ".r" + std::to_string(i + 1)), repeats[i]});
  }
  return r;
}

TEST(ValidationRepeats, SpreadIsTheFarthestRepeatFromTheMedian) {
  EXPECT_DOUBLE_EQ(sim::repeat_spread(run("a", "cnn", 0.10, {0.10, 0.08, 0.13})), 0.3);
  EXPECT_DOUBLE_EQ(sim::repeat_spread(run("a", "cnn", 0.10, {})), 0.0);
  const std::vector<sim::MeasuredRun> runs{run("a", "cnn", 0.10, {0.10, 0.08, 0.13}),
                                           run("b", "cnn", 0.20, {0.21, 0.20, 0.19}),
                                           run("c", "mlp-wide", 1.0, {})};
  const auto s = sim::summarize_repeats(runs);
  EXPECT_EQ(s.configurations, 2);  // "c" ran once
  EXPECT_NEAR(s.mean_spread, (0.3 + 0.05) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(s.worst_spread, 0.3);
  EXPECT_EQ(s.worst, "a p2 wfbp cnn");
  EXPECT_EQ(sim::summarize_repeats({run("c", "cnn", 1.0, {})}).configurations, 0);
}

// The trace predicted from is the repeat whose slowest rank computes the median time, which need
// not be the repeat of median iteration: on a slow link a rank slowed by the machine hides in the
// wait for the data (the grid of docs/validation.md, "Repeats").
TEST(ValidationRepeats, TheTraceIsTheRepeatOfMedianCompute) {
  sim::MeasuredRun r = run("emu-100m", "cnn", 0.0720, {0.0713, 0.0721, 0.0720});
  r.repeats[0].compute_s = 0.0172;
  r.repeats[1].compute_s = 0.0178;
  r.repeats[2].compute_s = 0.0294;
  r.run_dir = r.repeats[2].run_dir;  // the repeat of median iteration
  sim::choose_repeat_trace(r);
  EXPECT_EQ(r.run_dir, "runs/emu-100m.r2");
  EXPECT_DOUBLE_EQ(r.mean_s, 0.0720);  // the measurement stays the median iteration
  sim::MeasuredRun none = run("emu-100m", "cnn", 0.07, {});
  sim::choose_repeat_trace(none);
  EXPECT_EQ(none.run_dir, "runs/emu-100m");
}

TEST(ValidationRepeats, TheTableAndTheJsonSayHowFarTheRepeatsLie) {
  ValidationReport rep;
  rep.repeats = 3;
  rep.measured = {run("emu-600m", "cnn", 0.10, {0.10, 0.08, 0.13}),
                  run("emu-250m", "cnn", 0.20, {0.21, 0.20, 0.19})};
  const std::string table = validation_table(rep);
  EXPECT_NE(table.find("repeats: 3 runs per configuration"), std::string::npos) << table;
  EXPECT_NE(table.find("17.5% of the median on average, 30.0% at worst (emu-600m p2 wfbp cnn)"),
            std::string::npos)
      << table;
  const auto doc = nlohmann::json::parse(validation_json(rep));
  EXPECT_EQ(doc["repeats"], 3);
  ASSERT_EQ(doc["measured"][0]["repeats"].size(), 3u);
  EXPECT_EQ(doc["measured"][0]["repeats"][2]["run_dir"], "runs/emu-600m.r3");
  EXPECT_DOUBLE_EQ(doc["measured"][0]["repeat_spread"].get<double>(), 0.3);
  EXPECT_TRUE(doc["measured"][0]["repeats"][1].contains("slowest_rank_compute_s"));
  EXPECT_EQ(doc["repeatability"]["configurations"], 2);
  EXPECT_DOUBLE_EQ(doc["repeatability"]["worst_spread"].get<double>(), 0.3);

  // One run per configuration: no repeats anywhere, repeatability null.
  rep.repeats = 1;
  rep.measured = {run("emu-600m", "cnn", 0.10, {})};
  EXPECT_EQ(validation_table(rep).find("repeats:"), std::string::npos);
  const auto one = nlohmann::json::parse(validation_json(rep));
  EXPECT_TRUE(one["repeatability"].is_null());
  EXPECT_FALSE(one["measured"][0].contains("repeats"));
}

// A grid of other exchanges than allreduce names them in the table, the JSON, the replay files
// and the repeats' worst; a grid of allreduce alone keeps the table it had.
TEST(ValidationExchanges, TheTableNamesTheExchangeWhenAGridHasOthers) {
  ValidationReport rep;
  rep.measured = {run("emu-600m", "mlp-wide", 0.30, {}), run("emu-250m", "mlp-wide", 0.60, {})};
  sim::ValidationPrediction p;
  p.source = 0;
  p.target = 1;
  p.mode = "profile";
  p.ok = true;
  p.measured_s = 0.60;
  p.predicted_s = 0.57;
  p.error = -0.05;
  rep.predictions = {p};
  const std::string plain = validation_table(rep);
  EXPECT_EQ(plain.find("exchange"), std::string::npos) << plain;
  EXPECT_EQ(validation_replay_file(rep.measured, p),
            "predictions/replay_emu-600m_to_emu-250m_p2_wfbp_mlp-wide_profile.json");
  for (auto& m : rep.measured) m.exchange = "rsag";
  const std::string table = validation_table(rep);
  EXPECT_NE(table.find("overlap exchange  model"), std::string::npos) << table;
  EXPECT_NE(table.find("wfbp    rsag      mlp-wide"), std::string::npos) << table;
  EXPECT_EQ(validation_replay_file(rep.measured, p),
            "predictions/replay_emu-600m_to_emu-250m_p2_wfbp_rsag_mlp-wide_profile.json");
  const auto doc = nlohmann::json::parse(validation_json(rep));
  EXPECT_EQ(doc["measured"][1]["exchange"], "rsag");
  EXPECT_EQ(doc["predictions"][0]["exchange"], "rsag");
  rep.measured = {run("emu-600m", "cnn", 0.10, {0.10, 0.08, 0.13})};
  rep.measured[0].exchange = "asa";
  EXPECT_EQ(sim::summarize_repeats(rep.measured).worst, "emu-600m p2 wfbp asa cnn");
}

}  // namespace
}  // namespace dagsgd::reports
