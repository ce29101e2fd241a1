// Hostile traces, run directories and logs (issue 13): numbers out of range are counted with the
// right words, run directories that mix runs or lie about their ranks are refused, and every
// error names the file and the place (classes 3, 8-11, 13-15, 17, and duplicate OSU sizes).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/text.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/units.h"
#include "dagsgd/trace/bcaffe_log.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/manifest.h"
#include "dagsgd/trace/osu_log.h"

namespace dagsgd::trace {
namespace {

namespace fs = std::filesystem;

using dagsgd::testing::contains;

// A fresh directory under the test's temp dir.
std::string fresh_dir(const std::string& name) {
  fs::path p = fs::path(::testing::TempDir()) / (std::to_string(::getpid()) + "-hostile-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write(const std::string& path, const std::string& text) {
  ASSERT_TRUE(model::write_file(path, text, true).ok()) << path;
}

// A rank trace in our writer's layout with two ranks' worth of allreduces.
std::string rank_trace(int rank, const std::string& run_id, int world = 2,
                       const std::string& extra_event = "") {
  std::string info = R"("distributedInfo":{"backend":"mpi","rank":)" + std::to_string(rank) +
                     R"(,"world_size":)" + std::to_string(world);
  if (!run_id.empty()) info += R"(,"run_id":")" + run_id + "\"";
  info += "}";
  return "{\"schemaVersion\":1," + info + ",\"traceEvents\":[\n" +
         R"({"ph":"X","cat":"cpu_op","name":"forward","pid":0,"tid":0,"ts":10.000,"dur":5.000,"args":{"phase":"forward","layer":0,"iteration":0}},)" +
         "\n" +
         R"({"ph":"X","cat":"cpu_op","name":"MPI_Allreduce","pid":0,"tid":0,"ts":20.000,"dur":5.000,"args":{"collective":"allreduce","bytes":64,"iteration":0}})" +
         extra_event + "\n]}\n";
}

RunManifest manifest(int ranks, const std::string& run_id) {
  RunManifest m;
  m.run_id = run_id;
  m.kind = "train";
  m.ranks = ranks;
  for (int r = 0; r < ranks; ++r) m.traces.push_back(rank_trace_name(r));
  return m;
}

std::string make_run(const std::string& name, const std::string& run_id, int ranks = 2) {
  const std::string dir = fresh_dir(name);
  EXPECT_TRUE(write_manifest(dir, manifest(ranks, run_id)).ok());
  for (int r = 0; r < ranks; ++r)
    write(dir + "/" + rank_trace_name(r), rank_trace(r, run_id, ranks));
  return dir;
}

std::map<std::string, const ImportProblem*> problems_of(const FileReport& rep) {
  std::map<std::string, const ImportProblem*> by;
  for (const auto& p : rep.problems) by[p.kind] = &p;
  return by;
}

FileReport import_text(const std::string& text, model::Expected<ImportedRank>& out) {
  FileReport rep;
  out = import_trace_text(text, "h.json", 0, rep);
  return rep;
}

// Class 3: ts 1e300 aborted analyze and replay; it is a counted problem, fatal under --strict.
// Also: a dur of 1e18 us is out of range, not "negative"; digits past int64 do not overflow.
TEST(HostileTrace, TimesOutOfRangeAreCountedWithTheRightWords) {
  const std::string text = R"({"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"ok","pid":0,"tid":0,"ts":10,"dur":5},
{"ph":"X","cat":"cpu_op","name":"far","pid":0,"tid":0,"ts":1e300,"dur":5},
{"ph":"X","cat":"cpu_op","name":"digits","pid":0,"tid":0,"ts":99999999999999999999999999.5,"dur":5},
{"ph":"X","cat":"cpu_op","name":"long","pid":0,"tid":0,"ts":20,"dur":1e18},
{"ph":"X","cat":"cpu_op","name":"long2","pid":0,"tid":0,"ts":20,"dur":1000000000000000000},
{"ph":"X","cat":"cpu_op","name":"neg","pid":0,"tid":0,"ts":20,"dur":-3},
{"ph":"X","cat":"cpu_op","name":"nodur","pid":0,"tid":0,"ts":30},
{"ph":"X","cat":"cpu_op","name":"args","pid":0,"tid":0,"ts":40,"dur":1,"args":{"layer":4294967297}}
]})";
  model::Expected<ImportedRank> r = model::Error{""};
  auto rep = import_text(text, r);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto by = problems_of(rep);
  ASSERT_TRUE(by.count("ts out of range"));
  EXPECT_EQ(by["ts out of range"]->count, 2);
  EXPECT_TRUE(contains(by["ts out of range"]->first, "event 1 ('far'): ts 1e300 us"))
      << by["ts out of range"]->first;
  ASSERT_TRUE(by.count("dur out of range"));
  EXPECT_EQ(by["dur out of range"]->count, 2);
  EXPECT_TRUE(contains(by["dur out of range"]->first, "event 3 ('long'): dur 1e18 us"))
      << by["dur out of range"]->first;
  ASSERT_TRUE(by.count("negative duration"));
  EXPECT_EQ(by["negative duration"]->count, 1);
  ASSERT_TRUE(by.count("missing dur"));  // class 15
  EXPECT_TRUE(contains(by["missing dur"]->first, "event 6 ('nodur')"));
  ASSERT_TRUE(by.count("bad args value"));
  EXPECT_TRUE(contains(by["bad args value"]->first, "args 'layer' is out of range"));
  ASSERT_EQ(r->events.size(), 2u);  // "ok", and "nodur" kept as an instant
  for (const auto& e : r->events) EXPECT_LT(e.dur, model::kMaxDuration);

  // Under --strict each of them is fatal, with the file and the event.
  const std::string dir = fresh_dir("strict");
  for (const char* ev :
       {R"({"ph":"X","cat":"cpu_op","name":"far","pid":0,"tid":0,"ts":1e300,"dur":5})",
        R"({"ph":"X","cat":"cpu_op","name":"nodur","pid":0,"tid":0,"ts":30})"}) {
    const std::string path = dir + "/t.json";
    write(path, std::string("{\"traceEvents\":[") + ev + "]}");
    ImportOptions strict;
    strict.strict = true;
    auto run = import_run({path}, strict);
    ASSERT_FALSE(run.ok()) << ev;
    EXPECT_TRUE(contains(run.error().message, path)) << run.error().message;
    EXPECT_TRUE(contains(run.error().message, "(--strict)")) << run.error().message;
    EXPECT_TRUE(import_run({path}, ImportOptions{}).ok()) << ev;
  }
}

// A clock-drift record whose numbers would move times out of range is not applied.
TEST(HostileTrace, BadDriftRecordIsNotApplied) {
  const std::string text = R"({"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"a","pid":0,"tid":0,"ts":1000,"dur":1000},
{"ph":"M","name":"dagsgd_clock_sync","pid":0,"tid":0,"ts":0,"args":{"drift_t0_ns":0,"drift_t1_ns":1,"drift_correction_ns":900000000000000}}
]})";
  model::Expected<ImportedRank> r = model::Error{""};
  auto rep = import_text(text, r);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(rep.drift_corrected);
  EXPECT_TRUE(problems_of(rep).count("bad clock-drift record"));
  EXPECT_EQ(r->events[0].ts, 1'000'000);
}

// Class 14: one invalid UTF-8 byte, and JSON errors, come with the line and column.
TEST(HostileTrace, InvalidJsonAndUtf8HavePositions) {
  model::Expected<ImportedRank> r = model::Error{""};
  struct Case {
    std::string text, want;
  };
  const Case cases[] = {
      {"{\"traceEvents\":[\n{\"ph\":\"X\",\"name\":\"a\xff\",\"ts\":1,\"dur\":1}]}",
       "h.json: not valid JSON: line 2, column 20: invalid UTF-8 byte"},
      {"{\"traceEvents\": [\n  {\"ph\": \"X\" \"ts\": 1}]}",
       "h.json: malformed JSON inside 'traceEvents' that cannot be repaired: line 2, column"},
  };
  for (const Case& c : cases) {
    import_text(c.text, r);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(contains(r.error().message, c.want)) << r.error().message;
  }
  // Elements of traceEvents that are not objects are counted, not fatal.
  auto rep = import_text(
      R"({"traceEvents":[1, "x", {"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":1}]})", r);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->events.size(), 1u);
  EXPECT_EQ(problems_of(rep)["not an event object"]->count, 2);
  // distributedInfo numbers out of range are errors (the rank orders the run).
  import_text(R"({"distributedInfo":{"rank":-5},"traceEvents":[]})", r);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "'distributedInfo.rank' is -5: out of range"));
}

// Class 8: a rank file of another run in a run directory, and two runs' files given together.
TEST(HostileRun, TracesOfDifferentRunsAreRefused) {
  const std::string a = make_run("run-a", "run-a");
  const std::string b = make_run("run-b", "run-b");
  EXPECT_TRUE(import_run({a}, ImportOptions{}).ok());
  // B's rank 1 copied into A.
  fs::copy_file(b + "/rank-1.trace.json", a + "/rank-1.trace.json",
                fs::copy_options::overwrite_existing);
  auto mixed = import_run({a}, ImportOptions{});
  ASSERT_FALSE(mixed.ok());
  EXPECT_TRUE(contains(mixed.error().message, "'" + a +
                                                  "/rank-1.trace.json' (run id 'run-b') and '" + a +
                                                  "/run.manifest' (run id 'run-a') are not "
                                                  "from the same run"))
      << mixed.error().message;
  // analyze A/rank-0 B/rank-1.
  const std::string a2 = make_run("run-a2", "run-a");
  auto pair = import_run({a2 + "/rank-0.trace.json", b + "/rank-1.trace.json"}, ImportOptions{});
  ASSERT_FALSE(pair.ok());
  EXPECT_TRUE(contains(pair.error().message, "not from the same run")) << pair.error().message;
  // Older runs without ids are accepted as before.
  const std::string old = make_run("old", "");
  EXPECT_TRUE(import_run({old}, ImportOptions{}).ok());
  // A rank without an id in a run whose manifest has one.
  const std::string c = make_run("run-c", "run-c");
  write(c + "/rank-0.trace.json", rank_trace(0, ""));
  auto half = import_run({c}, ImportOptions{});
  ASSERT_FALSE(half.ok());
  EXPECT_TRUE(contains(half.error().message, "(no run id)")) << half.error().message;
  // A trace of a run of another size.
  const std::string d = make_run("run-d", "");
  write(d + "/rank-1.trace.json", rank_trace(1, "", 4));
  auto sized = import_run({d}, ImportOptions{});
  ASSERT_FALSE(sized.ok());
  EXPECT_TRUE(contains(sized.error().message, "is a trace of 4 ranks, but manifest"))
      << sized.error().message;
}

// A run's rank traces given one by one are read as their run directory when they are all of its
// traces, refused when they are some of them, and refused (naming the file) where no
// manifest is beside them: read as Kineto traces, their phases and collectives were lost.
TEST(HostileRun, RankTracesWithoutTheirManifestAreNotMisread) {
  for (const std::string run_id : {"run-m", ""}) {
    const std::string dir = make_run("by-file" + run_id, run_id);
    const std::string r0 = dir + "/rank-0.trace.json";
    const std::string r1 = dir + "/rank-1.trace.json";
    auto whole = import_run({dir}, ImportOptions{});
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    auto listed = import_run({r1, r0}, ImportOptions{});
    ASSERT_TRUE(listed.ok()) << listed.error().message;
    EXPECT_EQ(listed->source, RunSource::kDagsgdTrain);
    ASSERT_TRUE(listed->manifest.has_value());
    EXPECT_EQ(listed->ranks.size(), 2u);
    EXPECT_EQ(listed->ranks[0].events.size(), whole->ranks[0].events.size());
    auto some = import_run({r0}, ImportOptions{});
    ASSERT_FALSE(some.ok());
    EXPECT_TRUE(contains(some.error().message, "'" + dir + "/" + kManifestName +
                                                   "' names 2 rank trace(s) and 1 of them "
                                                   "are given"))
        << some.error().message;
    // Copied away from their manifest, alone or as a directory.
    const std::string away = fresh_dir("away" + run_id);
    fs::copy_file(r0, away + "/rank-0.trace.json");
    fs::copy_file(r1, away + "/rank-1.trace.json");
    for (const auto& paths :
         {std::vector<std::string>{away + "/rank-0.trace.json", away + "/rank-1.trace.json"},
          std::vector<std::string>{away}}) {
      auto r = import_run(paths, ImportOptions{});
      ASSERT_FALSE(r.ok());
      EXPECT_TRUE(contains(r.error().message, "'" + away +
                                                  "/rank-0.trace.json' is a rank trace "
                                                  "written by dagsgd train or collect"))
          << r.error().message;
    }
  }
  // What dagsgd collect writes: no phases, but its rank-info record.
  const std::string collected = fresh_dir("collected");
  write(
      collected + "/rank-0.json",
      R"({"traceEvents":[{"ph":"M","name":"dagsgd_rank_info","pid":0,"tid":0,"args":{"world_size":1}},)"
      R"({"ph":"X","cat":"mpi","name":"MPI_Allreduce","pid":0,"tid":0,"ts":1,"dur":1}]})");
  auto c = import_run({collected + "/rank-0.json"}, ImportOptions{});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.error().message, "rank-0.json' is a rank trace written by dagsgd"))
      << c.error().message;
}

// Class 9: a manifest saying 4 ranks with two rank files.
TEST(HostileRun, ManifestRanksAgreeWithItsTraces) {
  const std::string dir = make_run("ranks", "", 4);
  fs::remove(dir + "/rank-2.trace.json");
  fs::remove(dir + "/rank-3.trace.json");
  RunManifest m = manifest(4, "");
  m.traces.resize(2);
  ASSERT_TRUE(write_manifest(dir, m).ok());
  auto r = import_run({dir}, ImportOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "manifest '" + dir +
                                              "/run.manifest': 4 ranks but lists 2 trace(s), "
                                              "and its status is \"ok\""))
      << r.error().message;
  // What a failed collect writes: counted, and fatal under --strict.
  m.status = "the command was killed by signal 9; no traces from ranks 2, 3";
  ASSERT_TRUE(write_manifest(dir, m).ok());
  auto partial = import_run({dir}, ImportOptions{});
  ASSERT_TRUE(partial.ok()) << partial.error().message;
  EXPECT_EQ(partial->report.problem_count(), 1);
  EXPECT_TRUE(contains(partial->report.summary(), "missing rank traces"))
      << partial->report.summary();
  ImportOptions strict;
  strict.strict = true;
  EXPECT_FALSE(import_run({dir}, strict).ok());
  // No trace list: the rank files must all be there.
  m = manifest(4, "");
  m.traces.clear();
  ASSERT_TRUE(write_manifest(dir, m).ok());
  auto missing = import_run({dir}, ImportOptions{});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.error().message, "rank-2.trace.json")) << missing.error().message;
}

// Class 10: traces outside the run directory; class 11: warmup -1; class 13: 'ranks': "two".
TEST(HostileRun, ManifestFieldsAreCheckedAndNamed) {
  struct Case {
    std::string json, expect;
  };
  const Case cases[] = {
      {R"({"ranks": 1, "traces": ["../other/rank-0.trace.json"]})",
       "'traces'[0] '../other/rank-0.trace.json' leaves the run directory"},
      {R"({"ranks": 1, "traces": ["/etc/passwd"]})", "is an absolute path"},
      {R"({"ranks": 1, "traces": ["a/../../b.json"]})", "leaves the run directory"},
      {R"({"ranks": 1, "iterations": {"warmup": -1, "times_s": [1, 2]}})",
       "'iterations.warmup' must be an integer from 0 to 1, got -1 (2 measured iterations)"},
      {R"({"ranks": 1, "iterations": {"warmup": 2, "times_s": [1, 2]}})",
       "'iterations.warmup' must be an integer from 0 to 1, got 2"},
      {R"({"ranks": "two"})", "'ranks' must be an integer from 1 to 1048576, got \"two\""},
      {R"({"ranks": 3000000000})", "'ranks' must be an integer from 1 to 1048576"},
      {R"({"ranks": 2.5})", "'ranks' must be an integer"},
      {R"({"ranks": 1, "hosts": "a"})", "'hosts' must be a list of strings, got \"a\""},
      {R"({"ranks": 1, "config": {"batch": 64}})", "'config.batch' must be a string, got 64"},
      {R"({"ranks": 1, "iterations": {"times_s": [0.1, NaN]}})", "not valid JSON: line 1"},
      {R"({"ranks": 1, "iterations": {"times_s": [0.1, 1e300]}})",
       "'iterations.times_s'[1] must be a number from 0 to below 1e+06"},
      {R"({"ranks": 1, "clock_residual_ns": -4})", "'clock_residual_ns' must be a number"},
      {R"({"ranks": 1, "run_id": 7})", "'run_id' must be a string, got 7"},
      {"{\"ranks\": 1,\n \"kind\": train}", "not valid JSON: line 2, column"},
  };
  for (const auto& c : cases) {
    auto m = manifest_from_json(c.json, "manifest 'm.json'");
    ASSERT_FALSE(m.ok()) << c.json;
    EXPECT_TRUE(contains(m.error().message, "manifest 'm.json': ")) << m.error().message;
    EXPECT_TRUE(contains(m.error().message, c.expect)) << c.json << " -> " << m.error().message;
  }
  // run_id round-trips; it is always written, "" for a run without one.
  RunManifest m = manifest(2, "r-1");
  auto back = manifest_from_json(manifest_to_json(m), "m");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->run_id, "r-1");
  EXPECT_TRUE(contains(manifest_to_json(manifest(2, "")), "\"run_id\": \"\""));
  // A trace path inside a subdirectory is fine.
  EXPECT_TRUE(manifest_from_json(R"({"ranks": 1, "traces": ["t/rank-0.trace.json"]})", "m").ok());
}

// Events years apart (after clock alignment) cannot come from one run.
TEST(HostileRun, RunSpanningMoreThanTheLimitIsRefused) {
  const std::string dir = fresh_dir("span");
  write(dir + "/a.json",
        R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":0,"tid":0,"ts":1,"dur":1}]})");
  write(
      dir + "/b.json",
      R"({"distributedInfo":{"rank":1},"traceEvents":[{"ph":"X","cat":"cpu_op","name":"b","pid":0,"tid":0,"ts":2000000000000000,"dur":1}]})");
  auto r = import_run({dir + "/a.json", dir + "/b.json"}, ImportOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "the events span 2e+09 s")) << r.error().message;
  EXPECT_TRUE(contains(r.error().message, dir + "/b.json")) << r.error().message;
}

// Class 17: /dev/zero as a trace, an OSU log or a layer profile.
TEST(HostileFiles, DevicesAreRefusedByEveryReader) {
  auto run = import_run({"/dev/zero"}, ImportOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_TRUE(contains(run.error().message, "'/dev/zero': it is a character device"));
  auto osu = read_latency_log("/dev/zero");
  ASSERT_FALSE(osu.ok());
  EXPECT_TRUE(contains(osu.error().message, "character device"));
  auto bcaffe = read_bcaffe_log("/dev/zero");
  ASSERT_FALSE(bcaffe.ok());
  EXPECT_TRUE(contains(bcaffe.error().message, "character device"));
  auto m = read_manifest("/dev");  // /dev has no manifest
  ASSERT_FALSE(m.ok());
}

// calibrate averaged 49 us and 99999 us of one size into 50024 us.
TEST(HostileLogs, DuplicateOsuSizesNameBothLines) {
  auto log = parse_latency_log(
      "# OSU MPI Allreduce Latency Test v5.4.0\n# Size  Avg Latency(us)\n4  49.0\n8  50.0\n4  "
      "99999\n",
      "dup.log");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.error().message,
            "log 'dup.log': line 5: size 4 was already measured on line 3; one latency per size "
            "(split the log)");
  auto big = parse_latency_log("# Size  Avg Latency(us)\n4  1e300\n", "big.log");
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(contains(big.error().message, "big.log': line 2: latency '1e300'"))
      << big.error().message;
  auto size = parse_latency_log("# Size  Avg Latency(us)\n99999999999999999999  1\n", "s.log");
  ASSERT_FALSE(size.ok());
}

TEST(HostileLogs, BcaffeNumbersOutOfRange) {
  const std::string prefix = "I0207 16:23:08.165047 35803 distributed.cpp:112] ";
  auto t = parse_bcaffe_log(prefix + "[0, 64, 1e13, 1]\n", "b.log");
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(contains(t.error().message, "b.log': line 1: field 3 is out of range"))
      << t.error().message;
  auto id = parse_bcaffe_log(prefix + "[0, 64, 1, 1]\n" + prefix + "[1e300, 64, 1, 1]\n", "b.log");
  ASSERT_FALSE(id.ok());
  EXPECT_TRUE(contains(id.error().message, "param_id is out of range")) << id.error().message;
}

}  // namespace
}  // namespace dagsgd::trace
