// `dagsgd analyze` and `dagsgd replay` as a user runs them: every shared Kineto trace, JSON
// fields, the timeline file, and exit codes for bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_runner.h"

namespace {

using dagsgd::testing::run_cli;
namespace fs = std::filesystem;

const std::string kKineto = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/";

std::string tmp(const std::string& name) {
  return (fs::temp_directory_path() / ("dagsgd-analyze-" + name)).string();
}

TEST(AnalyzeCli, EverySharedKinetoTrace) {
  for (const std::string& args :
       {kKineto + "nccl_data.json.gz", kKineto + "event_sync_trace.json.gz",
        kKineto + "sampled_rank-0.json.gz " + kKineto + "sampled_rank-1.json.gz"}) {
    auto r = run_cli("analyze " + args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.err;
    EXPECT_NE(r.out.find("Critical path"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Bottleneck: "), std::string::npos) << r.out;
    auto j = run_cli("analyze --json " + args);
    ASSERT_EQ(j.code, 0) << j.err;
    auto doc = nlohmann::json::parse(j.out);
    EXPECT_GT(doc["measured_iteration_s"].get<double>(), 0);
    EXPECT_FALSE(doc["ranks"].empty());
    EXPECT_TRUE(doc["critical_path"]["composition_s"].is_object());
    EXPECT_TRUE(doc.contains("if_comm_free"));
  }
}

TEST(ReplayCli, JsonFieldsAndTimeline) {
  std::string tl = tmp("timeline.json");
  fs::remove(tl);
  auto r = run_cli("replay --json --timeline " + tl + " " + kKineto + "nccl_data.json.gz");
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  double m = doc["measured_iteration_s"].get<double>();
  double p = doc["predicted_iteration_s"].get<double>();
  EXPECT_NEAR(doc["error"].get<double>(), (p - m) / m, 1e-12);
  EXPECT_TRUE(doc["measured_breakdown"].is_array());
  EXPECT_TRUE(doc["predicted_breakdown"].is_array());
  // The timeline is Chrome-trace JSON with one span per simulated task.
  auto t = nlohmann::json::parse(dagsgd::testing::slurp(tl));
  EXPECT_GT(t["traceEvents"].size(), 1000u);
  // It is not replaced without --force.
  auto again = run_cli("replay --timeline " + tl + " " + kKineto + "nccl_data.json.gz");
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  auto forced = run_cli("replay --force --timeline " + tl + " " + kKineto + "nccl_data.json.gz");
  EXPECT_EQ(forced.code, 0) << forced.err;
  fs::remove(tl);
}

// Issue 37: nccl_data has NCCL kernels beside compute kernels on its one GPU, three iterations
// and one rank of two.
TEST(AnalyzeCli, JobEffectsOfTheNcclTrace) {
  const std::string trace = kKineto + "nccl_data.json.gz";
  auto text = run_cli("analyze " + trace);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("Job effects"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Interference: compute kernels beside communication kernels on their "
                          "GPU: 1."),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("3 iteration(s) x 1 rank(s)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("across ranks within an iteration: not measurable"), std::string::npos)
      << text.out;
  auto json = run_cli("analyze --json " + trace);
  ASSERT_EQ(json.code, 0) << json.err;
  const auto effects = nlohmann::json::parse(json.out)["job_effects"];
  EXPECT_GE(effects["interference"]["compute_slowdown"].get<double>(), 1.0);
  EXPECT_GT(effects["interference"]["samples"].get<int>(), 100);
  EXPECT_EQ(effects["noise"]["iterations"], 3);
  EXPECT_EQ(effects["noise"]["ranks"], 1);
  EXPECT_TRUE(effects["noise"]["rank_cv"].is_null());

  // --effects-out: the job-effects file with what the text said; not replaced without --force.
  const std::string file = tmp("effects.json");
  fs::remove(file);
  ASSERT_EQ(run_cli("analyze --effects-out " + file + " " + trace).code, 0);
  const auto written = nlohmann::json::parse(dagsgd::testing::slurp(file));
  EXPECT_EQ(written["format"], "dagsgd-job-effects");
  EXPECT_EQ(written["version"], 1);
  EXPECT_EQ(written["source"], trace);
  EXPECT_EQ(written["interference"]["compute_slowdown"],
            effects["interference"]["compute_slowdown"]);
  EXPECT_EQ(written["noise"]["iteration_cv"], effects["noise"]["iteration_cv"]);
  auto again = run_cli("analyze --effects-out " + file + " " + trace);
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos) << again.err;
  EXPECT_EQ(run_cli("analyze --force --effects-out " + file + " " + trace).code, 0);
  fs::remove(file);
}

// nccl_data's NCCL kernels: 15 allreduces and 6 broadcasts of a 2-rank group on one node, so
// their bus bandwidth stands beside the intra-node fabric's; the SendRecv kernels of the
// sampled traces name no collective: kept at their traced durations and named in a replay.
TEST(AnalyzeCli, CollectivesByType) {
  auto json =
      run_cli("analyze --json --intra nvlink2 --inter ib-edr " + kKineto + "nccl_data.json.gz");
  ASSERT_EQ(json.code, 0) << json.err;
  const auto rows = nlohmann::json::parse(json.out)["collectives"];
  ASSERT_EQ(rows.size(), 2u) << rows;
  EXPECT_EQ(rows[0]["type"], "allreduce");
  EXPECT_EQ(rows[0]["count"], 15);
  EXPECT_EQ(rows[1]["type"], "broadcast");
  EXPECT_EQ(rows[1]["count"], 6);
  for (const auto& r : rows) {
    EXPECT_GT(r["bus_bandwidth_bytes_per_s"].get<double>(), 0) << r;
    EXPECT_NEAR(r["fabric_bandwidth_bytes_per_s"].get<double>(), 120e9, 1e3) << r;  // nvlink2
  }
  auto text = run_cli("analyze " + kKineto + "nccl_data.json.gz");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("Collectives by type"), std::string::npos) << text.out;
  auto half = run_cli("analyze --intra nvlink2 " + kKineto + "nccl_data.json.gz");
  EXPECT_EQ(half.code, 2);
  EXPECT_NE(half.err.find("--intra and --inter go together"), std::string::npos) << half.err;

  auto replay = run_cli("replay --intra pcie3 --inter 10gbe " + kKineto +
                        "sampled_rank-0.json.gz " + kKineto + "sampled_rank-1.json.gz");
  ASSERT_EQ(replay.code, 0) << replay.err;
  EXPECT_NE(replay.out.find("Kept at their traced durations, the model cannot price them: 20 "
                            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t: no plan in the model"),
            std::string::npos)
      << replay.out;
}

TEST(ReplayCli, TargetFabricChangesCommunicationOnly) {
  auto base = run_cli("replay --json " + kKineto + "nccl_data.json.gz");
  auto slow = run_cli("replay --json --intra 10gbe --inter 10gbe " + kKineto + "nccl_data.json.gz");
  ASSERT_EQ(base.code, 0) << base.err;
  ASSERT_EQ(slow.code, 0) << slow.err;
  auto b = nlohmann::json::parse(base.out);
  auto s = nlohmann::json::parse(slow.out);
  EXPECT_EQ(s["comm"]["source"], "fabric");
  EXPECT_EQ(b["measured_iteration_s"], s["measured_iteration_s"]);
  EXPECT_GT(s["predicted_iteration_s"].get<double>(), b["predicted_iteration_s"].get<double>());
}

// A rank trace as `dagsgd train` writes it: three iterations of io, forward, backward, the wait
// for one gradient allreduce (on the communication thread) and the update.
std::string train_rank_trace(int rank) {
  std::string t = R"({"schemaVersion":1,"distributedInfo":{"backend":"mpi","rank":)" +
                  std::to_string(rank) + R"(,"world_size":2,"run_id":"r-by-file"},)" +
                  R"("traceEvents":[)" + "\n" +
                  R"({"ph":"M","name":"dagsgd_rank_info","pid":0,"tid":0,"args":{"world_size":2}})";
  auto span = [&](const std::string& name, int ts, int dur, const std::string& args, int tid = 0) {
    t += ",\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name +
         "\",\"pid\":" + std::to_string(rank) + ",\"tid\":" + std::to_string(tid) +
         ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) + ",\"args\":{" +
         args + "}}";
  };
  for (int it = 0; it < 3; ++it) {
    const int base = 10 + 1000 * it;
    const std::string i = "\"iteration\":" + std::to_string(it);
    t += ",\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" +
         std::to_string(it) + "\",\"pid\":" + std::to_string(rank) +
         ",\"tid\":0,\"ts\":" + std::to_string(base) + ",\"dur\":900,\"args\":{" + i + "}}";
    span("io", base, 50, "\"phase\":\"io\"," + i);
    span("forward fc1", base + 50, 100, "\"phase\":\"forward\",\"layer\":0," + i);
    span("backward fc1", base + 150, 200, "\"phase\":\"backward\",\"layer\":0," + i);
    span("comm_wait", base + 350, 400, "\"phase\":\"comm\"," + i);
    span("allreduce bucket 0", base + 350, 390,
         "\"phase\":\"comm\",\"collective\":\"allreduce\",\"bytes\":102400,\"comm_size\":2,"
         "\"bucket\":0," +
             i,
         1);
    span("update", base + 750, 20, "\"phase\":\"update\"," + i);
  }
  return t + "\n]}\n";
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A run's rank traces are read with its manifest: given one by one beside it they are the run;
// without it, analyze and replay refuse them naming the file rather than read them as Kineto
// traces (which found no collective and no compute).
TEST(TraceCli, RankTracesWithoutTheirManifestAreRefused) {
  const std::string run = tmp("by-file-run");
  const std::string away = tmp("by-file-away");
  fs::remove_all(run);
  fs::remove_all(away);
  fs::create_directories(run);
  fs::create_directories(away);
  write_text(
      run + "/manifest.json",
      R"({"tool":"dagsgd","run_id":"r-by-file","kind":"train","ranks":2,)"
      R"("iterations":{"warmup":1,"times_s":[0.0009,0.0009,0.0009]},"traces":["rank-0.trace.json","rank-1.trace.json"],)"
      R"("status":"ok"})");
  for (int r = 0; r < 2; ++r) {
    const std::string name = "/rank-" + std::to_string(r) + ".trace.json";
    write_text(run + name, train_rank_trace(r));
    write_text(away + name, train_rank_trace(r));
  }
  auto dir = run_cli("analyze --json " + run);
  ASSERT_EQ(dir.code, 0) << dir.err;
  const auto whole = nlohmann::json::parse(dir.out);
  EXPECT_EQ(whole["dag"]["collectives"], 3);
  EXPECT_EQ(whole["dag"]["warmup"], 1);
  auto files =
      run_cli("analyze --json " + run + "/rank-0.trace.json " + run + "/rank-1.trace.json");
  ASSERT_EQ(files.code, 0) << files.err;
  EXPECT_EQ(nlohmann::json::parse(files.out)["dag"], whole["dag"]);
  auto one = run_cli("analyze " + run + "/rank-1.trace.json");
  EXPECT_EQ(one.code, 2);
  EXPECT_NE(one.err.find(run + "/manifest.json' names 2 rank trace(s)"), std::string::npos)
      << one.err;
  for (const std::string& cmd : std::vector<std::string>{
           "analyze ", "replay ", "export --format chakra --out " + tmp("by-file-x") + " "}) {
    for (const std::string& paths : std::vector<std::string>{
             away + "/rank-0.trace.json " + away + "/rank-1.trace.json", away}) {
      auto r = run_cli(cmd + paths);
      EXPECT_EQ(r.code, 2) << cmd << paths << "\n" << r.out;
      EXPECT_EQ(r.err.rfind("dagsgd: error: '" + away +
                                "/rank-0.trace.json' is a rank trace "
                                "written by dagsgd train or collect",
                            0),
                0u)
          << r.err;
    }
  }
  fs::remove_all(run);
  fs::remove_all(away);
}

TEST(TraceCli, ExitCodes) {
  EXPECT_EQ(run_cli("analyze").code, 2);
  auto missing = run_cli("analyze /nonexistent/trace.json");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/trace.json"), std::string::npos);
  std::string bad = tmp("not-a-trace.json");
  ASSERT_EQ(std::system(("echo '{\"hello\": 1}' > " + bad).c_str()), 0);
  auto notrace = run_cli("replay " + bad);
  EXPECT_EQ(notrace.code, 2);
  EXPECT_NE(notrace.err.find("not a trace"), std::string::npos) << notrace.err;
  EXPECT_EQ(notrace.err.rfind("dagsgd: error: ", 0), 0u);
  // --strict: nccl_data has 88 flows that start but never end.
  EXPECT_EQ(run_cli("analyze " + kKineto + "nccl_data.json.gz").code, 0);
  auto strict = run_cli("analyze --strict " + kKineto + "nccl_data.json.gz");
  EXPECT_EQ(strict.code, 2);
  EXPECT_NE(strict.err.find("unmatched flow"), std::string::npos) << strict.err;
  auto fabric =
      run_cli("replay --intra nosuchfabric --inter 10gbe " + kKineto + "event_sync_trace.json.gz");
  EXPECT_EQ(fabric.code, 2);
  EXPECT_NE(fabric.err.find("nosuchfabric"), std::string::npos) << fabric.err;
  EXPECT_EQ(run_cli("replay --intra 10gbe " + kKineto + "event_sync_trace.json.gz").code, 2);
  EXPECT_EQ(run_cli("replay --comm sometimes " + kKineto + "event_sync_trace.json.gz").code, 2);
  auto cpus = run_cli("replay --cpus 2 " + kKineto + "event_sync_trace.json.gz");
  EXPECT_EQ(cpus.code, 2);
  EXPECT_NE(cpus.err.find("computation runs on GPUs"), std::string::npos) << cpus.err;
  EXPECT_EQ(run_cli("replay --cpus 0 " + kKineto + "event_sync_trace.json.gz").code, 2);
  // Issue 13, class 12: these were replaced by the run's own layout.
  for (const char* per_node : {"0", "-3", "2147483647"}) {
    auto r = run_cli("replay --intra nvlink2 --inter ib-edr --gpus-per-node " +
                     std::string(per_node) + " " + kKineto + "event_sync_trace.json.gz");
    EXPECT_EQ(r.code, 2) << per_node;
    EXPECT_NE(r.err.find("--gpus-per-node"), std::string::npos) << r.err;
  }
  auto ignored = run_cli("replay --gpus-per-node 2 " + kKineto + "event_sync_trace.json.gz");
  EXPECT_EQ(ignored.code, 2);
  EXPECT_NE(ignored.err.find("--gpus-per-node"), std::string::npos) << ignored.err;
  EXPECT_EQ(run_cli("replay --algorithm tree " + kKineto + "event_sync_trace.json.gz").code, 2);
  auto algo = run_cli("replay --intra 10gbe --inter 10gbe --algorithm nope " + kKineto +
                      "event_sync_trace.json.gz");
  EXPECT_EQ(algo.code, 2);
  EXPECT_NE(algo.err.find("ring"), std::string::npos) << algo.err;
  fs::remove(bad);
}

}  // namespace
