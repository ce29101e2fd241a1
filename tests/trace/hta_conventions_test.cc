// A run directory as Holistic Trace Analysis reads it: the rules of tests/common/hta_conventions.h
// (each citing HTA's source line) applied to what our writer and manifest code produce, and the
// run still read by our own importer, with its manifest under the current and the old name.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <variant>

#include "common/hta_conventions.h"
#include "common/temp.h"
#include "dagsgd/trace/event.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/manifest.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::trace {
namespace {

namespace fs = std::filesystem;
namespace hta = dagsgd::testing::hta;

// A two-rank run directory as `dagsgd train --trace` lays it out: its manifest and one trace
// per rank written by TraceWriter, each with an iteration span and a collective.
std::string write_run(const std::string& prefix) {
  const std::string dir = dagsgd::testing::fresh_test_dir(prefix);
  RunManifest m;
  m.kind = "train";
  m.ranks = 2;
  m.run_id = "run-hta";
  for (int r = 0; r < 2; ++r) {
    m.traces.push_back(rank_trace_name(r));
    auto w = TraceWriter::open(dir + "/" + rank_trace_name(r),
                               DistributedInfo{r, 2, "mpi", m.run_id}, 0);
    EXPECT_TRUE(w.ok()) << w.error().message;
    Event step{"ProfilerStep#0", cat::kUserAnnotation, 'X', 0, 5'000, r, 0};
    step.add(arg::kIteration, std::int64_t{0});
    w->write(step);
    Event c{"collective", cat::kCpuOp, 'X', 1'000, 2'000, r, 1};
    c.add(arg::kPhase, std::string("comm")).add(arg::kIteration, std::int64_t{0});
    c.add(arg::kCollective, std::string("allreduce")).add(arg::kBytes, std::int64_t{4096});
    add_comm_args(c, "allreduce", 2);
    w->write(c);
    EXPECT_TRUE(w->close().ok());
  }
  EXPECT_TRUE(write_manifest(dir, m).ok());
  return dir;
}

TEST(HtaConventions, RunDirectoryGivesHtaEveryRankAndNothingElse) {
  const std::string dir = write_run("hta-run");
  EXPECT_TRUE(fs::exists(dir + "/" + kManifestName));
  // trace_file.py:32-34 skips the manifest; trace_file.py:45 finds each file's own rank.
  auto ranks = hta::rank_map(dir);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0], dir + "/" + rank_trace_name(0));
  EXPECT_EQ(ranks[1], dir + "/" + rank_trace_name(1));
  for (const auto& f : hta::trace_files_of(dir)) EXPECT_TRUE(hta::rank_of(f).has_value()) << f;
}

TEST(HtaConventions, WriterStatesTheRankInHtasForm) {
  const std::string dir = dagsgd::testing::fresh_test_dir("hta-rank");
  for (int r : {0, 7, 123}) {
    const std::string path = dir + "/r" + std::to_string(r) + ".json";
    auto w = TraceWriter::open(path, DistributedInfo{r, 200, "mpi"}, 0);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->close().ok());
    EXPECT_EQ(hta::rank_of(path), r);
  }
}

TEST(HtaConventions, CollectivesCarryPyTorchsCommunicationArgs) {
  Event e{"collective", cat::kCpuOp};
  add_comm_args(e, "allgather", 8);
  // hta/configs/default_event_args.py:176-180 and 201-205: the raw names HTA parses.
  const auto* name = e.find("Collective name");
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(std::get<std::string>(*name), "allgather");
  const auto* size = e.find("Group size");
  ASSERT_NE(size, nullptr);
  EXPECT_EQ(std::get<std::int64_t>(*size), 8);
  Event p{"wait", cat::kCpuOp};
  add_comm_args(p, "send", 0);
  EXPECT_EQ(p.find("Group size"), nullptr);
}

TEST(HtaConventions, OurImporterReadsTheRunWithItsManifestUnderEitherName) {
  const std::string dir = write_run("hta-import");
  auto run = import_run({dir}, ImportOptions{});
  ASSERT_TRUE(run.ok()) << run.error().message;
  ASSERT_TRUE(run->manifest.has_value());
  EXPECT_EQ(run->manifest->run_id, "run-hta");
  EXPECT_EQ(run->source, RunSource::kDagsgdTrain);
  ASSERT_EQ(run->ranks.size(), 2u);
  // A run directory written before the manifest was renamed.
  fs::rename(dir + "/" + kManifestName, dir + "/" + kLegacyManifestName);
  EXPECT_EQ(find_manifest(dir), dir + "/" + kLegacyManifestName);
  auto old = import_run({dir}, ImportOptions{});
  ASSERT_TRUE(old.ok()) << old.error().message;
  ASSERT_TRUE(old->manifest.has_value());
  EXPECT_EQ(old->manifest->run_id, "run-hta");
  EXPECT_EQ(old->source, RunSource::kDagsgdTrain);
  // Both present: the current name wins.
  RunManifest other = *old->manifest;
  other.run_id = "run-hta";
  other.kind = "collect";
  ASSERT_TRUE(write_manifest(dir, other).ok());
  EXPECT_EQ(find_manifest(dir), dir + "/" + kManifestName);
  auto both = import_run({dir}, ImportOptions{});
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both->source, RunSource::kDagsgdCollect);
  // Neither: no manifest.
  fs::remove(dir + "/" + kManifestName);
  fs::remove(dir + "/" + kLegacyManifestName);
  EXPECT_EQ(find_manifest(dir), "");
}

}  // namespace
}  // namespace dagsgd::trace
