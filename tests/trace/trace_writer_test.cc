// The trace writer produces valid Kineto-layout JSON, also when it was never closed.
#include "dagsgd/trace/trace_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "dagsgd/model/io.h"
#include "dagsgd/trace/manifest.h"

namespace dagsgd::trace {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-" + name;
}

TEST(TraceWriter, WritesKinetoLayout) {
  std::string path = temp_path("w.trace.json");
  auto w = TraceWriter::open(path, DistributedInfo{1, 4, "mpi"}, 123456789);
  ASSERT_TRUE(w.ok()) << w.error().message;
  Event e{"fc1", cat::kCpuOp, 'X', 1'234'567, 2'001, 7, 8};
  e.add(arg::kPhase, std::string("forward")).add(arg::kLayer, std::int64_t{3});
  e.add("ratio", 0.5).add("quote", std::string("a\"b\n"));
  w->write(e);
  Event f{"flow", cat::kAc2g, 's', 1000, 0, 7, 8, 42};
  w->write(f);
  ASSERT_TRUE(w->close().ok());

  auto text = model::read_file(path);
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["distributedInfo"]["rank"], 1);
  EXPECT_EQ(j["distributedInfo"]["world_size"], 4);
  EXPECT_EQ(j["baseTimeNanoseconds"], 123456789);
  ASSERT_EQ(j["traceEvents"].size(), 2u);
  const auto& ev = j["traceEvents"][0];
  EXPECT_EQ(ev["name"], "fc1");
  EXPECT_DOUBLE_EQ(ev["ts"].get<double>(), 1234.567);
  EXPECT_DOUBLE_EQ(ev["dur"].get<double>(), 2.001);
  EXPECT_EQ(ev["args"]["phase"], "forward");
  EXPECT_EQ(ev["args"]["layer"], 3);
  EXPECT_EQ(ev["args"]["quote"], "a\"b\n");
  EXPECT_EQ(j["traceEvents"][1]["id"], 42);
}

TEST(TraceWriter, UnclosedFileIsCompleteUpToLastFlush) {
  std::string path = temp_path("partial.trace.json");
  {
    auto w = TraceWriter::open(path, DistributedInfo{}, 0);
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 3; ++i) w->write(Event{"e" + std::to_string(i), cat::kCpuOp, 'X', i, 1});
    w->flush();
    auto text = model::read_file(path);
    ASSERT_TRUE(text.ok());
    // Repairing the tail, as a reader does, gives the three events.
    auto j = nlohmann::json::parse(*text + "]}");
    EXPECT_EQ(j["traceEvents"].size(), 3u);
  }
}

TEST(Manifest, RoundTripsAndComputesStats) {
  RunManifest m;
  m.kind = "train";
  m.ranks = 2;
  m.hosts = {"a", "b"};
  m.iterations.warmup = 1;
  m.iterations.times_s = {9.0, 1.0, 2.0, 3.0, 4.0};
  compute_stats(m.iterations);
  EXPECT_DOUBLE_EQ(m.iterations.mean_s, 2.5);
  EXPECT_DOUBLE_EQ(m.iterations.p50_s, 2.5);
  auto back = manifest_from_json(manifest_to_json(m), "m");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->ranks, 2);
  EXPECT_EQ(back->hosts[1], "b");
  EXPECT_DOUBLE_EQ(back->iterations.mean_s, 2.5);
  auto bad = manifest_from_json("{\"ranks\": 0}", "manifest 'x'");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("manifest 'x'"), std::string::npos);
  EXPECT_TRUE(back->machines.empty());  // not recorded: left out of the file, read back empty
  EXPECT_EQ(manifest_to_json(m).find("machines"), std::string::npos);
}

// The batch a run recorded is read here, once, for every workload that needs it.
TEST(Manifest, RecordedBatch) {
  RunManifest m;
  auto none = recorded_batch(m);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  m.config["batch"] = "64";
  auto b = recorded_batch(m);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->value_or(0), 64);
  for (const char* bad : {"", "0", "-3", "64x", "2000000000"}) {
    m.config["batch"] = bad;
    auto e = recorded_batch(m);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.error().message, std::string("manifest: config 'batch' is not a positive "
                                             "integer ('") +
                                     bad + "')");
  }
}

TEST(Manifest, MachinesAndCpusPerRank) {
  RunManifest m;
  m.ranks = 2;
  m.machines = {"boot-a", "boot-a"};
  m.cpus = {2, 2};
  auto back = manifest_from_json(manifest_to_json(m), "m");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->machines, m.machines);
  EXPECT_EQ(back->cpus, m.cpus);
  auto short_list = manifest_from_json(R"({"ranks": 2, "cpus": [2]})", "manifest 'y'");
  ASSERT_FALSE(short_list.ok());
  EXPECT_NE(short_list.error().message.find("manifest 'y': 'cpus' has 1 entries for 2 ranks"),
            std::string::npos)
      << short_list.error().message;
  auto zero = manifest_from_json(R"({"ranks": 1, "cpus": [0]})", "manifest 'z'");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("'cpus'[0] must be an integer from 1 to"), std::string::npos);
}

}  // namespace
}  // namespace dagsgd::trace
