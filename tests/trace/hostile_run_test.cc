// Run directories and traces whose structure is bad input: link loops where a run directory or
// its files go, and traces whose launches, flows and syncs close a loop in the task graph.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/temp.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::trace {
namespace {

namespace fs = std::filesystem;

// One Kineto rank: a step, two launches on one thread and a device sync between them, and the
// two kernels on one stream. `late_first` makes the first kernel on the stream the one the
// later launch started, so that the sync (which waits for the earlier launch's kernel, the
// stream's second op) comes after it in host order and before it through the stream: a loop.
std::string kineto_rank(bool late_first) {
  const std::string k1 = late_first ? "3" : "1";
  const std::string k2 = late_first ? "1" : "3";
  std::string s = "{\"traceEvents\":[\n";
  s +=
      R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":9,"tid":1,"ts":0,"dur":1000},)";
  s +=
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":9,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}},)";
  s +=
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":9,"tid":1,"ts":20,"dur":5},)";
  s +=
      R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":9,"tid":1,"ts":40,"dur":5,"args":{"correlation":3}},)";
  s +=
      R"({"ph":"X","cat":"kernel","name":"gemm_a","pid":0,"tid":7,"ts":100,"dur":50,"args":{"correlation":)" +
      k1 + R"(,"stream":7}},)";
  s +=
      R"({"ph":"X","cat":"kernel","name":"gemm_b","pid":0,"tid":7,"ts":200,"dur":50,"args":{"correlation":)" +
      k2 + R"(,"stream":7}})";
  s += "\n]}";
  return s;
}

TEST(HostileRun, TaskGraphLoopIsAnErrorNamingTheTrace) {
  const std::string dir = testing::fresh_test_dir("hostile-run");
  for (bool loop : {false, true}) {
    const std::string file = dir + (loop ? "/loop.json" : "/fine.json");
    ASSERT_TRUE(model::write_file(file, kineto_rank(loop), true).ok());
    auto run = import_run({file}, ImportOptions{});
    ASSERT_TRUE(run.ok()) << run.error().message;
    auto dag = build_trace_dag(*run);
    if (!loop) {
      EXPECT_TRUE(dag.ok()) << dag.error().message;
      continue;
    }
    ASSERT_FALSE(dag.ok());
    EXPECT_NE(dag.error().message.find("'" + file + "'"), std::string::npos) << dag.error().message;
    EXPECT_NE(dag.error().message.find("cycle"), std::string::npos) << dag.error().message;
  }
}

TEST(HostileRun, LinkLoopsAreErrorsNotExceptions) {
  const std::string dir = testing::fresh_test_dir("hostile-run");
  const fs::path a = fs::path(dir) / "a";
  const fs::path b = fs::path(dir) / "b";
  fs::create_symlink(b, a);
  fs::create_symlink(a, b);
  // The run directory itself, and a trace file given by name.
  for (const auto& p : {a, b / "rank-0.trace.json"}) {
    auto run = import_run({p.string()}, ImportOptions{});
    ASSERT_FALSE(run.ok()) << p;
    EXPECT_NE(run.error().message.find("cannot read '" + p.string() + "'"), std::string::npos)
        << run.error().message;
  }
  // A run directory whose manifest is a loop.
  const fs::path run_dir = fs::path(dir) / "run";
  fs::create_directories(run_dir);
  fs::create_symlink(run_dir / "manifest.json", run_dir / "manifest.json");
  auto run = import_run({run_dir.string()}, ImportOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("manifest.json"), std::string::npos) << run.error().message;
  // A directory of traces with a loop beside a good trace: the loop is not a trace, skipped.
  const fs::path traces = fs::path(dir) / "traces";
  fs::create_directories(traces);
  fs::create_symlink(traces / "x.json", traces / "x.json");
  ASSERT_TRUE(model::write_file((traces / "r.json").string(), kineto_rank(false), true).ok());
  auto listed = import_run({traces.string()}, ImportOptions{});
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed->ranks.size(), 1U);
}

// A minimal trace with `info` (a distributedInfo object's text) before or after traceEvents
// and `extra` after the root object.
std::string info_trace(const std::string& info, bool info_first, const std::string& extra = "") {
  const std::string events =
      R"("traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":10},)"
      "\n"
      R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5}])";
  const std::string di = R"("distributedInfo":)" + info;
  return "{" + (info_first ? di + "," + events : events + "," + di) + "}" + extra;
}

// Each import of `text` under the whole walk and under small windows (the two paths the
// reader takes), as files in `dir`.
std::vector<model::Expected<ImportedRun>> import_both_ways(const std::string& dir,
                                                           const std::string& text) {
  const std::string file = dir + "/t.json";
  EXPECT_TRUE(model::write_file(file, text, true).ok());
  std::vector<model::Expected<ImportedRun>> out;
  for (std::size_t window : {std::size_t{0}, std::size_t{64}}) {
    ImportOptions o;
    o.window_bytes = window;
    out.push_back(import_run({file}, o));
  }
  return out;
}

// A rank or world size that does not fit, wherever distributedInfo is, is an error naming the
// field: never a "truncated tail" with the last event dropped.
TEST(HostileRun, DistributedInfoOutOfRangeIsNamedWhereverItIs) {
  const std::string dir = testing::fresh_test_dir("hostile-run");
  for (const char* bad : {R"({"rank": 1e20})", R"({"rank": 99999999999999999999})",
                          R"({"rank": -1})", R"({"rank": 1048576})", R"({"rank": "two"})",
                          R"({"rank": 0, "world_size": 0})", R"({"world_size": 1e20})"}) {
    for (bool first : {true, false}) {
      for (auto& run : import_both_ways(dir, info_trace(bad, first))) {
        ASSERT_FALSE(run.ok()) << bad << (first ? " before" : " after") << " traceEvents";
        EXPECT_NE(run.error().message.find("'distributedInfo."), std::string::npos)
            << run.error().message;
      }
    }
  }
  for (auto& run : import_both_ways(dir, info_trace(R"({"rank": 3, "world_size": 4})", false))) {
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->ranks[0].rank, 3);
    EXPECT_EQ(run->ranks[0].events.size(), 2U);
    EXPECT_FALSE(run->report.files[0].truncated);
  }
}

// JSON after the trace's root object is an error with its line and column, not left unread.
TEST(HostileRun, SecondJsonDocumentIsAnError) {
  const std::string dir = testing::fresh_test_dir("hostile-run");
  const std::string info = R"({"rank": 0, "world_size": 1})";
  for (const char* extra : {"\n{\"traceEvents\":[]}", "[1]", " 5", "\n\n\"x\"", "}"}) {
    for (auto& run : import_both_ways(dir, info_trace(info, false, extra))) {
      ASSERT_FALSE(run.ok()) << extra;
      EXPECT_NE(run.error().message.find("line "), std::string::npos) << run.error().message;
    }
  }
  for (auto& run : import_both_ways(dir, info_trace(info, true, " \n\t\n"))) {
    EXPECT_TRUE(run.ok()) << run.error().message;
  }
}

// An args number beyond int64 in a range-checked field is a counted problem, like one just
// beyond the field's range.
TEST(HostileRun, ArgsNumbersBeyondInt64AreCounted) {
  const std::string dir = testing::fresh_test_dir("hostile-run");
  for (const char* value : {"1e20", "99999999999999999999", "-1e300", "125000000000001"}) {
    const std::string text =
        R"({"traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":10},)"
        "\n"
        R"({"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce","pid":0,"tid":7,"ts":1,"dur":5,"args":{"In msg nelems":)" +
        std::string(value) + "}}]}";
    for (auto& run : import_both_ways(dir, text)) {
      ASSERT_TRUE(run.ok()) << run.error().message;
      std::string first;
      for (const auto& p : run->report.files[0].problems) {
        if (p.kind == "bad args value") first = p.first;
      }
      EXPECT_NE(first.find("'In msg nelems'"), std::string::npos) << value << ": " << first;
    }
  }
}

// Device syncs on `streams` streams, `syncs` of them on one thread after one kernel per
// stream: their edges grow with the kernels, not with syncs x streams (each later sync waits
// for the kernels through the first one, which precedes it on the thread).
TEST(HostileRun, DeviceSyncEdgesAreLinearInTheOps) {
  const std::string dir = testing::fresh_test_dir("hostile-run");
  auto trace = [](int streams, int syncs) {
    std::string s = "{\"traceEvents\":[\n";
    s +=
        R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":9,"tid":1,"ts":0,"dur":1000000},)";
    for (int k = 0; k < streams; ++k) {
      const std::string c = std::to_string(k + 1);
      s += R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":9,"tid":1,"ts":)" +
           std::to_string(10 + k) + R"(,"dur":1,"args":{"correlation":)" + c + "}},\n";
      s += R"({"ph":"X","cat":"kernel","name":"k","pid":0,"tid":)" + std::to_string(100 + k) +
           R"(,"ts":)" + std::to_string(50000 + k) + R"(,"dur":5,"args":{"correlation":)" + c +
           "}},\n";
    }
    for (int i = 0; i < syncs; ++i) {
      s +=
          R"({"ph":"X","cat":"cuda_runtime","name":"cudaDeviceSynchronize","pid":9,"tid":1,"ts":)" +
          std::to_string(100000 + 10 * i) + R"(,"dur":5},)" + "\n";
    }
    s +=
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaGetDevice","pid":9,"tid":1,"ts":900000,"dur":1}]})";
    return s;
  };
  std::size_t edges_small = 0;
  for (int syncs : {1, 400}) {
    const std::string file = dir + "/syncs" + std::to_string(syncs) + ".json";
    ASSERT_TRUE(model::write_file(file, trace(400, syncs), true).ok());
    auto run = import_run({file}, ImportOptions{});
    ASSERT_TRUE(run.ok()) << run.error().message;
    auto dag = build_trace_dag(*run);
    ASSERT_TRUE(dag.ok()) << dag.error().message;
    if (syncs == 1) {
      edges_small = dag->dag.edge_count();
      continue;
    }
    // 399 more syncs add a few edges each (host order, gaps), not 400 each.
    EXPECT_LT(dag->dag.edge_count(), edges_small + 399 * 4) << edges_small;
  }
}

}  // namespace
}  // namespace dagsgd::trace
