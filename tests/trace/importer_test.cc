// The trace importer on the shared Kineto traces (counts, categories, NCCL metadata, flows), on
// malformed and truncated input, and under --strict.
#include "dagsgd/trace/importer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>

#include "dagsgd/model/io.h"

namespace dagsgd::trace {
namespace {

const std::string kKineto = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/";

std::int64_t count(const FileReport& f, EventCategory c) {
  return f.by_category[static_cast<std::size_t>(c)];
}

// The file's events per category and its flows (matched, end only), as counted independently
// with Python's json module.
void expect_counts(const FileReport& f,
                   std::initializer_list<std::pair<EventCategory, std::int64_t>> categories,
                   std::int64_t flows_matched, std::int64_t flows_end_only) {
  for (const auto& [c, want] : categories) {
    EXPECT_EQ(count(f, c), want) << category_name(c);
  }
  EXPECT_EQ(f.flows_matched, flows_matched);
  EXPECT_EQ(f.flows_end_only, flows_end_only);
}

ImportedRun import_one(const std::string& file, bool strict = false) {
  ImportOptions o;
  o.strict = strict;
  auto run = import_run({kKineto + file}, o);
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  return run.ok() ? std::move(*run) : ImportedRun{};
}

TEST(Importer, NcclDataCountsCategoriesAndNcclMetadata) {
  auto run = import_one("nccl_data.json.gz");
  ASSERT_EQ(run.ranks.size(), 1u);
  const auto& f = run.report.files[0];
  // Counted independently with Python's json module.
  EXPECT_EQ(f.events, 40573);
  EXPECT_EQ(f.metadata, 38);
  using C = EventCategory;
  expect_counts(f,
                {{C::kCpuOp, 14346},
                 {C::kRuntime, 8740},
                 {C::kKernel, 2700},
                 {C::kMemcpy, 960},
                 {C::kMemset, 114},
                 {C::kAnnotation, 42},
                 {C::kGpuAnnotation, 30}},
                4317, 4878);
  EXPECT_EQ(f.flows_unmatched, 88);
  ASSERT_EQ(f.problems.size(), 1u);
  EXPECT_EQ(f.problems[0].kind, "unmatched flow");
  EXPECT_EQ(f.problems[0].count, 88);
  const auto& r = run.ranks[0];
  EXPECT_EQ(r.rank, 0);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.backend, "nccl");
  int allreduce = 0;
  int broadcast = 0;
  for (const auto& e : r.events) {
    // record_param_comms cpu_ops carry the collective's name too; count the NCCL kernels.
    if (e.collective < 0 || !e.gpu) continue;
    const std::string& c = r.str(e.collective);
    if (c == "allreduce") {
      ++allreduce;
      EXPECT_EQ(e.group_size, 2);
      EXPECT_GT(e.bytes, 0);
      EXPECT_TRUE(e.gpu);
    }
    if (c == "broadcast") ++broadcast;
  }
  EXPECT_EQ(allreduce, 15);
  EXPECT_EQ(broadcast, 6);
  // The allreduce written as ts 4458677009853.422 us: In msg nelems 6637568 of Float, with the
  // timestamp kept to the nanosecond (a double would round it).
  bool found = false;
  for (const auto& e : r.events) {
    if (e.gpu && e.ts == 4458677009853422LL) {
      found = true;
      EXPECT_EQ(r.str(e.collective), "allreduce");
      EXPECT_EQ(e.bytes, 6637568LL * 4);
      EXPECT_EQ(e.dur, 2636669);
      EXPECT_EQ(e.tid, 40);  // the stream
    }
  }
  EXPECT_TRUE(found);
}

TEST(Importer, EventSyncTraceHasSyncRecordsAndFlows) {
  auto run = import_one("event_sync_trace.json.gz");
  const auto& f = run.report.files[0];
  EXPECT_EQ(f.events, 92);
  using C = EventCategory;
  expect_counts(f, {{C::kSync, 4}, {C::kRuntime, 12}, {C::kKernel, 4}, {C::kCpuOp, 10}}, 7, 5);
  EXPECT_TRUE(f.problems.empty());
  int event_syncs = 0;
  for (const auto& e : run.ranks[0].events) {
    if (e.category == EventCategory::kSync && run.ranks[0].str(e.name) == "Event Sync") {
      ++event_syncs;
      EXPECT_EQ(run.ranks[0].detail(e).wait_on_corr, 1533);
      EXPECT_EQ(run.ranks[0].detail(e).wait_on_stream, 7);
    }
  }
  EXPECT_EQ(event_syncs, 2);
}

TEST(Importer, SampledRanksAsAListAndAsADirectory) {
  ImportOptions o;
  auto run =
      import_run({kKineto + "sampled_rank-1.json.gz", kKineto + "sampled_rank-0.json.gz"}, o);
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_EQ(run->ranks.size(), 2u);
  EXPECT_EQ(run->ranks[0].rank, 0);  // ordered by the rank the trace states
  EXPECT_EQ(run->ranks[1].rank, 1);
  EXPECT_EQ(run->ranks[0].world_size, 128);
  EXPECT_EQ(run->report.files[0].events, 4855);
  EXPECT_EQ(run->report.files[1].events, 4720);
  EXPECT_EQ(count(run->report.files[0], EventCategory::kKernel), 1154);
  EXPECT_EQ(run->report.files[0].flows_matched, 0);  // this sampled trace has no flows
  EXPECT_EQ(run->report.clock_offsets.size(), 2u);

  // The whole directory: all four files, two of them claiming rank 0.
  auto dir = import_run({kKineto}, o);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("both rank 0"), std::string::npos) << dir.error().message;
}

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("dagsgd-importer-" + name)).string();
}

FileReport import_text(const std::string& text, model::Expected<ImportedRank>* out = nullptr) {
  FileReport rep;
  auto r = import_trace_text(text, "t.json", 0, rep);
  if (out) *out = std::move(r);
  return rep;
}

TEST(Importer, NotATraceIsAnError) {
  FileReport rep;
  auto a = import_trace_text("hello, world", "a.json", 0, rep);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("a.json"), std::string::npos);
  auto b = import_trace_text("{\"foo\": [1, 2]}", "b.json", 0, rep);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("no 'traceEvents'"), std::string::npos);
  auto c = import_trace_text("[1, 2, 3]", "c.json", 0, rep);
  ASSERT_FALSE(c.ok());
  auto d = import_trace_text("{\"traceEvents\": 5}", "d.json", 0, rep);
  ASSERT_FALSE(d.ok());
}

TEST(Importer, BadRecordsAreCountedWithTheFirstOffender) {
  std::string text = R"({"traceEvents":[
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":10.0,"dur":5.0,"args":{"stream":7}},
{"ph":"X","cat":"kernel","name":"bad1","pid":0,"tid":7,"ts":20.0,"dur":-5.0},
{"ph":"X","cat":"kernel","name":"bad2","pid":0,"tid":7,"ts":30.0,"dur":-1},
{"ph":"X","cat":"weird","name":"w","pid":0,"tid":7,"ts":40.0,"dur":1},
{"ph":"s","cat":"ac2g","id":99,"pid":1,"tid":1,"ts":1},
{"ph":"X","cat":"cpu_op","name":"noTs","pid":1,"tid":1,"dur":1}
]})";
  model::Expected<ImportedRank> r = model::Error{""};
  auto rep = import_text(text, &r);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->events.size(), 1u);
  std::map<std::string, const ImportProblem*> by;
  for (const auto& p : rep.problems) by[p.kind] = &p;
  ASSERT_TRUE(by.count("negative duration"));
  EXPECT_EQ(by["negative duration"]->count, 2);
  EXPECT_NE(by["negative duration"]->first.find("event 1 ('bad1')"), std::string::npos)
      << by["negative duration"]->first;
  EXPECT_EQ(by["unknown category"]->count, 1);
  EXPECT_NE(by["unknown category"]->first.find("'weird'"), std::string::npos);
  EXPECT_EQ(by["unmatched flow"]->count, 1);
  EXPECT_EQ(by["bad or missing ts"]->count, 1);
}

TEST(Importer, TruncatedTailIsRepairedAndReported) {
  // Our writer's layout (one event per line), cut inside the third event.
  std::string text =
      "{\"schemaVersion\":1,\"traceEvents\":[\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":0,\"tid\":0,\"ts\":1.000,\"dur\":2."
      "000},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":0,\"tid\":0,\"ts\":3.000,\"dur\":2."
      "000},\n"
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"na";
  model::Expected<ImportedRank> r = model::Error{""};
  auto rep = import_text(text, &r);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->events.size(), 2u);
  EXPECT_TRUE(rep.truncated);
  EXPECT_GT(rep.dropped_bytes, 0);
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_EQ(rep.problems[0].kind, "truncated tail");

  // A Kineto-style file (events not one per line) cut mid-way: the generic repair.
  auto full = model::read_file(kKineto + "event_sync_trace.json.gz");
  ASSERT_TRUE(full.ok());
  std::size_t events_at = full->find("\"traceEvents\"");
  std::string cut = full->substr(0, events_at + (full->size() - events_at) / 2);
  model::Expected<ImportedRank> r2 = model::Error{""};
  auto rep2 = import_text(cut, &r2);
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  EXPECT_TRUE(rep2.truncated);
  EXPECT_GT(r2->events.size(), 0u);
}

TEST(Importer, StrictMakesProblemsFatal) {
  std::string path = tmp_path("strict.json");
  ASSERT_TRUE(model::write_file(path,
                                R"({"traceEvents":[
{"ph":"X","cat":"kernel","name":"ok","pid":0,"tid":7,"ts":10,"dur":5},
{"ph":"X","cat":"kernel","name":"neg","pid":0,"tid":7,"ts":20,"dur":-3}]})",
                                true)
                  .ok());
  ImportOptions lax;
  auto a = import_run({path}, lax);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->report.problem_count(), 1);
  ImportOptions strict;
  strict.strict = true;
  auto b = import_run({path}, strict);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("negative duration"), std::string::npos) << b.error().message;
  EXPECT_NE(b.error().message.find("event 1 ('neg')"), std::string::npos) << b.error().message;
  std::filesystem::remove(path);
}

TEST(Importer, DriftCorrectionFromOurTracerMetadata) {
  // docs/tracing.md: T' = T + c (T - t0) / (t1 - t0).
  std::string text = R"({"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"MPI_Allreduce","pid":0,"tid":0,"ts":1000.000,"dur":1000.000,"args":{"collective":"allreduce","bytes":64}},
{"ph":"M","name":"dagsgd_clock_sync","pid":0,"tid":0,"ts":0,"args":{"drift_t0_ns":0,"drift_t1_ns":10000000,"drift_correction_ns":1000}}
]})";
  model::Expected<ImportedRank> r = model::Error{""};
  auto rep = import_text(text, &r);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(rep.drift_corrected);
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].ts, 1000000 + 100);   // 1 ms: +1000 * 0.1
  EXPECT_EQ(r->events[0].dur, 1000000 + 100);  // end 2 ms: +200
  EXPECT_EQ(r->events[0].category, EventCategory::kMpi);
  EXPECT_EQ(r->events[0].bytes, 64);
}

}  // namespace
}  // namespace dagsgd::trace
