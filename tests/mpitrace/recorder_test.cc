// The tracer's recording path without MPI (event layout, time axis, drift metadata, signal-time
// flush) and `dagsgd collect`'s bad-usage errors.
#include "dagsgd/mpitrace/recorder.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"

namespace dagsgd::mpitrace {
namespace {

using testing::fresh_dir;
using testing::read_trace;
using testing::run;

// `dagsgd collect ARGS`, both output streams together.
testing::CommandResult collect(const std::string& args) {
  return run(std::string(DAGSGD_BINARY) + " collect " + args);
}

// `dagsgd collect ARGS`, expected to exit with `exit_code` and to say `message` (if any); its
// output.
std::string collect_fails(const std::string& args, int exit_code, const std::string& message = "") {
  auto r = collect(args);
  EXPECT_EQ(r.exit_code, exit_code) << args << "\n" << r.output;
  if (!message.empty()) {
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
  return r.output;
}

RecorderConfig config_in(const std::string& dir) {
  std::filesystem::create_directories(dir);
  RecorderConfig c;
  c.path = dir + "/rank-1.trace.json";
  c.rank = 1;
  c.world_size = 4;
  c.base_ns = 1'000'000;
  c.start = runtime::ClockSample{2'000'000, 500, 40};
  c.host = "node7";
  c.os_pid = 42;
  return c;
}

const nlohmann::json* find_event(const nlohmann::json& j, const std::string& name, char ph) {
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] == name && e["ph"] == std::string(1, ph)) return &e;
  }
  return nullptr;
}

TEST(Recorder, WritesCallsAndAsyncSpansOnRankZerosClock) {
  std::string dir = fresh_dir("recorder");
  auto rec = Recorder::open(config_in(dir));
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  const CallInfo ar{
      .name = "MPI_Allreduce", .collective = "allreduce", .bytes = 4096, .comm_size = 4};
  (*rec)->record_call(ar, 3'000'500, 3'010'500, 0);
  const CallInfo is{
      .name = "MPI_Isend", .collective = "send", .bytes = 64, .comm_size = 4, .peer = 2, .tag = 9};
  (*rec)->record_async(is, 3'020'500, 3'050'500, 0, 7, "MPI_Wait");
  const CallInfo wait{.name = "MPI_Wait", .collective = "wait", .bytes = 64};
  (*rec)->record_call(wait, 3'040'500, 3'050'500, 0, 1);
  EXPECT_EQ((*rec)->spans(), 3);
  runtime::ClockSample end{12'000'000, 1'500, 60};
  ASSERT_TRUE((*rec)->finish(&end, "finalize").ok());

  auto j = read_trace(dir + "/rank-1.trace.json");
  EXPECT_EQ(j["distributedInfo"]["rank"], 1);
  EXPECT_EQ(j["distributedInfo"]["world_size"], 4);
  EXPECT_EQ(j["baseTimeNanoseconds"], 1'000'000);
  const auto* a = find_event(j, "MPI_Allreduce", 'X');
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*a)["cat"], "cpu_op");
  EXPECT_EQ((*a)["pid"], 1);
  EXPECT_EQ((*a)["tid"], 0);
  // ts = local - start offset - base = 3'000'500 - 500 - 1'000'000 ns = 2000 us.
  EXPECT_DOUBLE_EQ((*a)["ts"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ((*a)["dur"].get<double>(), 10.0);
  EXPECT_EQ((*a)["args"]["collective"], "allreduce");
  EXPECT_EQ((*a)["args"]["bytes"], 4096);
  EXPECT_EQ((*a)["args"]["comm_size"], 4);
  EXPECT_EQ((*a)["args"]["phase"], "comm");
  EXPECT_FALSE((*a)["args"].contains("peer"));
  // PyTorch's communication args, which HTA parses (hta/configs/default_event_args.py:176-205).
  EXPECT_EQ((*a)["args"]["Collective name"], "allreduce");
  EXPECT_EQ((*a)["args"]["Group size"], 4);

  const auto* s = find_event(j, "MPI_Isend", 'X');
  ASSERT_NE(s, nullptr);
  EXPECT_EQ((*s)["tid"], kAsyncTidBase);
  EXPECT_EQ((*s)["args"]["peer"], 2);
  EXPECT_EQ((*s)["args"]["tag"], 9);
  EXPECT_EQ((*s)["args"]["request"], 7);
  EXPECT_EQ((*s)["args"]["completed_by"], "MPI_Wait");
  EXPECT_DOUBLE_EQ((*s)["dur"].get<double>(), 30.0);
  const auto* w = find_event(j, "MPI_Wait", 'X');
  ASSERT_NE(w, nullptr);
  EXPECT_EQ((*w)["args"]["requests"], 1);
  EXPECT_FALSE((*w)["args"].contains("comm_size"));
  EXPECT_FALSE((*w)["args"].contains("Collective name"));

  const auto* info = find_event(j, "dagsgd_rank_info", 'M');
  ASSERT_NE(info, nullptr);
  EXPECT_EQ((*info)["args"]["host"], "node7");
  const auto* clock = find_event(j, "dagsgd_clock_sync", 'M');
  ASSERT_NE(clock, nullptr);
  const auto& c = (*clock)["args"];
  EXPECT_EQ(c["ended_by"], "finalize");
  EXPECT_EQ(c["drift_t0_ns"], 2'000'000 - 500 - 1'000'000);
  EXPECT_EQ(c["drift_t1_ns"], 12'000'000 - 500 - 1'000'000);
  EXPECT_EQ(c["drift_correction_ns"], 500 - 1'500);
  EXPECT_EQ(c["residual_ns"], 60);
  EXPECT_DOUBLE_EQ(c["drift_ppm"].get<double>(), 100.0);
  EXPECT_EQ(c["spans"], 3);
}

// The reader's drift formula (docs/tracing.md) applied to a written ts gives exactly rank 0's
// clock as the linear ClockAlignment between the two samples computes it.
TEST(Recorder, DocumentedDriftCorrectionMatchesClockAlignment) {
  std::string dir = fresh_dir("drift");
  RecorderConfig config = config_in(dir);
  auto rec = Recorder::open(config);
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  const CallInfo b{.name = "MPI_Barrier", .collective = "barrier"};
  const std::int64_t local = 9'000'000;
  (*rec)->record_call(b, local, local + 1000, 0);
  runtime::ClockSample end{12'000'000, -2'500, 60};
  ASSERT_TRUE((*rec)->finish(&end, "finalize").ok());
  auto j = read_trace(dir + "/rank-1.trace.json");
  const auto* e = find_event(j, "MPI_Barrier", 'X');
  const auto* clock = find_event(j, "dagsgd_clock_sync", 'M');
  ASSERT_NE(e, nullptr);
  ASSERT_NE(clock, nullptr);
  double ts = (*e)["ts"].get<double>() * 1000;  // ns
  double t0 = (*clock)["args"]["drift_t0_ns"].get<double>();
  double t1 = (*clock)["args"]["drift_t1_ns"].get<double>();
  double c = (*clock)["args"]["drift_correction_ns"].get<double>();
  double corrected = ts + c * (ts - t0) / (t1 - t0);
  runtime::ClockAlignment align(config.start);
  align.set_end(end);
  EXPECT_NEAR(corrected, static_cast<double>(align.to_global(local) - config.base_ns), 1.0);
}

TEST(Recorder, SignalFlushLeavesValidJsonAndStopsRecording) {
  std::string dir = fresh_dir("signal");
  auto rec = Recorder::open(config_in(dir));
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  const CallInfo b{.name = "MPI_Barrier", .collective = "barrier", .comm_size = 4};
  (*rec)->record_call(b, 3'000'000, 3'000'100, 0);
  (*rec)->flush_from_signal(/*close=*/true);
  (*rec)->record_call(b, 4'000'000, 4'000'100, 0);  // after the "death": not written
  auto text = model::read_file(dir + "/rank-1.trace.json");
  ASSERT_TRUE(text.ok());
  auto j = nlohmann::json::parse(*text, nullptr, false);  // no repair needed
  ASSERT_FALSE(j.is_discarded());
  int barriers = 0;
  for (const auto& e : j["traceEvents"]) barriers += e["name"] == "MPI_Barrier" ? 1 : 0;
  EXPECT_EQ(barriers, 1);
}

TEST(Recorder, PeriodicFlushLeavesRepairableTrace) {
  std::string dir = fresh_dir("flush");
  auto rec = Recorder::open(config_in(dir));
  ASSERT_TRUE(rec.ok()) << rec.error().message;
  const CallInfo b{.name = "MPI_Barrier", .collective = "barrier"};
  for (int i = 0; i < 5; ++i) (*rec)->record_call(b, 3'000'000 + i, 3'000'100 + i, 0);
  (*rec)->flush();
  // The file as a SIGKILLed rank leaves it: no closing bracket.
  auto j = read_trace(dir + "/rank-1.trace.json");
  int barriers = 0;
  for (const auto& e : j["traceEvents"]) barriers += e["name"] == "MPI_Barrier" ? 1 : 0;
  EXPECT_EQ(barriers, 5);
}

TEST(Recorder, UnwritableTraceIsAnError) {
  RecorderConfig c;
  c.path = "/nonexistent-dir/rank-0.trace.json";
  auto rec = Recorder::open(c);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.error().message.find("/nonexistent-dir/rank-0.trace.json"), std::string::npos);
}

TEST(CollectUsage, NoCommandAfterSeparatorExits2) {
  std::string dir = fresh_dir("usage-nocmd");
  collect_fails("--out " + dir + " --", 2, "no command given");
  collect_fails("--out " + dir, 2);
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(CollectUsage, ExistingOutWithoutForceExits2) {
  std::string dir = fresh_dir("usage-exists");
  std::filesystem::create_directories(dir);
  collect_fails("--out " + dir + " -- true", 2, "--force");
}

TEST(CollectUsage, MissingOutExits2) { collect_fails("-- true", 2); }

TEST(CollectUsage, MissingTracerLibraryIsAClearError) {
  std::string dir = fresh_dir("usage-nolib");
  auto r = run("DAGSGD_MPITRACE_LIB=/nonexistent/libx.so " + std::string(DAGSGD_BINARY) +
               " collect --out " + dir + " -- true");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/libx.so"), std::string::npos) << r.output;
}

TEST(CollectUsage, NonMpiProgramLeavesNoTraceAndFails) {
  std::string dir = fresh_dir("usage-nompi");
  const std::string output = collect_fails("--out " + dir + " -- true", 1, "no rank wrote a trace");
  EXPECT_FALSE(std::filesystem::exists(dir)) << output;
}

// The benchmark's flags: each bad value is one line naming the flag, exit 2 (as a singleton).
TEST(BenchUsage, BadCountsExit2NamingTheFlag) {
  for (const char* flags :
       {"--iterations 0", "--iterations 99999999999999999999", "--iterations 2000000",
        "--warmup 5000000", "--min-bytes 6", "--min-bytes 0", "--max-bytes 4294967296",
        "--iterations x", "--iterations", "--bogus 1", "--concurrent 0", "--concurrent 65",
        "--concurrent 2", "--concurrent 64 --nonblocking --max-bytes 1073741824",
        "--back-to-back --concurrent 2 --nonblocking", "--gap-us 10000001",
        "--gap-us 5 --concurrent 2 --nonblocking"}) {
    std::string flag = flags;
    flag = flag.substr(0, flag.find(' '));
    auto r = run(std::string(DAGSGD_ALLREDUCE_BENCH) + " " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags << "\n" << r.output;
    EXPECT_NE(r.output.find("dagsgd-allreduce-bench: error:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(flag), std::string::npos) << flags << "\n" << r.output;
  }
}

// A collect that fails before any rank wrote leaves no directory it made (a rerun would need
// --force), and a directory the user had stays.
TEST(CollectUsage, FailedCollectLeavesNoDirectoryItMade) {
  std::string dir = fresh_dir("usage-cleanup");
  std::string output =
      collect_fails("--out " + dir + "/a/b -- false", 1, "the command exited with status 1");
  EXPECT_FALSE(std::filesystem::exists(dir)) << output;
  output = collect_fails("--out " + dir + " -- /nonexistent/prog", 1);
  EXPECT_FALSE(std::filesystem::exists(dir)) << output;
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(model::write_file(dir + "/notes.txt", "mine", true).ok());
  collect_fails("--force --out " + dir + " -- false", 1);
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.txt"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/run.manifest"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dagsgd::mpitrace
