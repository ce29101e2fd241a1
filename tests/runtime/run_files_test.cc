// The names and ids that tie a run directory together: rank trace names both ways, the run id in
// run.manifest and in a rank trace's distributedInfo, and make_run_id().
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/runtime/rank_trace.h"
#include "dagsgd/trace/manifest.h"
#include "dagsgd/trace/trace_repair.h"

namespace dagsgd::runtime {
namespace {

TEST(RankTraceName, ParsesWhatRankTraceNameWritesAndNothingElse) {
  for (int r : {0, 1, 9, 10, 123456}) {
    EXPECT_EQ(trace::parse_rank_trace_name(trace::rank_trace_name(r)), r);
  }
  for (const char* name :
       {"rank-.trace.json", "rank-x.trace.json", "rank-1.trace.json.gz", "rank-01.trace.json",
        "rank--1.trace.json", "rank-1.cupti.trace.json", "manifest.json", "run.manifest",
        "xrank-1.trace.json", "rank-99999999999.trace.json", "rank-1 .trace.json"}) {
    EXPECT_FALSE(trace::parse_rank_trace_name(name).has_value()) << name;
  }
}

TEST(RunId, ManifestWritesItAndReadsOldManifestsWithout) {
  trace::RunManifest m;
  m.ranks = 2;
  m.run_id = make_run_id();
  auto back = trace::manifest_from_json(trace::manifest_to_json(m), "m");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->run_id, m.run_id);
  auto old = trace::manifest_from_json(R"({"ranks": 1})", "old");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->run_id, "");
  auto bad = trace::manifest_from_json(R"({"ranks": 1, "run_id": 5})", "manifest 'z'");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("manifest 'z': 'run_id'"), std::string::npos);
}

TEST(RunId, FreshIdsDiffer) {
  std::string a = make_run_id();
  std::string b = make_run_id();
  EXPECT_NE(a, b);
  EXPECT_GE(a.size(), 20u);
}

TEST(RankTrace, HeaderCarriesRankSizeAndRunIdAndClosesWithTheClockRecord) {
  std::filesystem::path dir = ::testing::TempDir();
  RankTraceConfig c;
  c.path = (dir / "rank-2.trace.json").string();
  c.rank = 2;
  c.world_size = 4;
  c.base_ns = 1'000;
  c.start = ClockSample{5'000, 100, 7};
  c.host = "node3";
  c.os_pid = 99;
  c.run_id = "run \"x\"";
  auto w = open_rank_trace(c);
  ASSERT_TRUE(w.ok()) << w.error().message;
  // Already on disk and repairable before anything else is written (a rank killed at once).
  auto early = model::read_file(c.path);
  ASSERT_TRUE(early.ok());
  auto fixed = trace::repair_truncated_trace(*early, c.path);
  ASSERT_TRUE(fixed.ok()) << fixed.error().message;
  auto j = nlohmann::json::parse(fixed->text);
  EXPECT_EQ(j["distributedInfo"]["rank"], 2);
  EXPECT_EQ(j["distributedInfo"]["world_size"], 4);
  EXPECT_EQ(j["distributedInfo"]["run_id"], "run \"x\"");
  EXPECT_EQ(j["traceEvents"][2]["name"], "dagsgd_rank_info");
  EXPECT_EQ(j["traceEvents"][2]["args"]["os_pid"], 99);
  EXPECT_EQ(to_trace_ns(c, 6'100), 5'000);
  ClockSample end{15'000, 300, 9};
  w->write(clock_sync_event(c, &end, "finish", 0, 0));
  ASSERT_TRUE(w->close().ok());
  auto done = nlohmann::json::parse(*model::read_file(c.path));
  const auto& sync = done["traceEvents"].back();
  EXPECT_EQ(sync["name"], "dagsgd_clock_sync");
  EXPECT_EQ(sync["args"]["ended_by"], "finish");
  EXPECT_EQ(sync["args"]["drift_correction_ns"], -200);
  EXPECT_EQ(sync["args"]["residual_ns"], 9);
}

}  // namespace
}  // namespace dagsgd::runtime
