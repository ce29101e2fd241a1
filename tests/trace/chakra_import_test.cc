// Chakra execution traces read as a run: files encoded here field by field (varints and
// length-delimited fields, as et_def.proto lays them out), their DAG (dependencies, collectives
// joined across ranks, starts from dependencies) and what is refused, with the file and place.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/temp.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::trace {
namespace {

std::string varint(std::uint64_t v) {
  std::string out;
  do {
    auto b = static_cast<unsigned char>(v & 0x7f);
    v >>= 7;
    out.push_back(static_cast<char>(b | (v != 0 ? 0x80 : 0)));
  } while (v != 0);
  return out;
}
std::string field_int(int field, std::uint64_t v) {
  return varint(static_cast<std::uint64_t>(field) << 3) + varint(v);
}
std::string field_bytes(int field, const std::string& b) {
  return varint((static_cast<std::uint64_t>(field) << 3) | 2) + varint(b.size()) + b;
}
std::string framed(const std::string& m) { return varint(m.size()) + m; }
// AttributeProto: name (1), int64_val (9).
std::string attr(const std::string& name, std::int64_t v) {
  return field_bytes(10, field_bytes(1, name) + field_int(9, static_cast<std::uint64_t>(v)));
}

constexpr int kComp = 4;
constexpr int kColl = 7;

struct NodeSpec {
  std::uint64_t id;
  int type = kComp;
  std::vector<std::uint64_t> deps;
  std::uint64_t dur_us = 0;
  std::string attrs;
};

std::string node(const NodeSpec& n) {
  std::string m = field_int(1, n.id) + field_bytes(2, "n" + std::to_string(n.id)) +
                  field_int(3, static_cast<std::uint64_t>(n.type));
  for (auto d : n.deps) m += field_int(5, d);
  m += field_int(7, n.dur_us) + n.attrs;
  return framed(m);
}

std::string metadata(const std::string& attrs = "") {
  return framed(field_bytes(1, "0.0.4") + attrs);
}

std::string allreduce(std::int64_t bytes) {
  return attr("comm_type", 0) + attr("comm_size", bytes);
}

std::string write_et(const std::string& dir, const std::string& name, const std::string& data) {
  std::string path = dir + "/" + name;
  EXPECT_TRUE(model::write_file(path, data, true).ok());
  return path;
}

// compute(us) -> allreduce of 1 MiB (50 us) -> compute (10 us).
std::string rank_file(std::uint64_t first_us) {
  return metadata() + node({1, kComp, {}, first_us, ""}) +
         node({2, kColl, {1}, 50, allreduce(1 << 20)}) + node({3, kComp, {2}, 10, ""});
}

TEST(ChakraImport, TwoRanksJoinTheirCollectiveAndStartFromDependencies) {
  const std::string dir = testing::fresh_test_dir("dagsgd-chakra");
  write_et(dir, "job.0.et", rank_file(100));
  write_et(dir, "job.1.et", rank_file(200));
  auto run = import_run({dir}, ImportOptions{});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->source, RunSource::kChakra);
  ASSERT_EQ(run->ranks.size(), 2u);
  EXPECT_EQ(run->ranks[1].world_size, 2);
  auto dag = build_trace_dag(*run);
  ASSERT_TRUE(dag.ok()) << dag.error().message;
  ASSERT_EQ(dag->collectives.size(), 1u);
  const auto& c = dag->collectives[0];
  EXPECT_TRUE(c.joined);
  EXPECT_EQ(c.kind, CollectiveKind::kAllreduce);
  EXPECT_EQ(c.bytes, 1 << 20);
  EXPECT_EQ(c.ranks, 2);
  EXPECT_EQ(c.measured, 50'000);
  // Rank 0 waits for rank 1's arrival at 200 us: 200 + 50 + 10.
  EXPECT_EQ(c.arrive[0], 100'000);
  EXPECT_EQ(c.arrive[1], 200'000);
  ASSERT_EQ(dag->measured_iteration.size(), 1u);
  EXPECT_EQ(dag->measured_iteration[0], 260'000);
  EXPECT_EQ(dag->rank_bounds[0], (std::vector<model::Nanos>{0, 260'000}));
  EXPECT_EQ(dag->rank_bounds[1], (std::vector<model::Nanos>{0, 260'000}));
}

TEST(ChakraImport, OneFileIsOneRankWhateverItsNameAndItsCollectivesStayItsOwn) {
  const std::string dir = testing::fresh_test_dir("dagsgd-chakra");
  const std::string path = write_et(dir, "trace.bin", rank_file(100));
  auto run = import_run({path}, ImportOptions{});
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->source, RunSource::kChakra);
  auto dag = build_trace_dag(*run);
  ASSERT_TRUE(dag.ok()) << dag.error().message;
  ASSERT_EQ(dag->collectives.size(), 1u);
  EXPECT_FALSE(dag->collectives[0].joined);
  EXPECT_EQ(dag->collectives[0].ranks, 1);
  EXPECT_EQ(dag->measured_iteration[0], 160'000);
}

TEST(ChakraImport, DependenciesOnLaterAndMissingNodes) {
  const std::string dir = testing::fresh_test_dir("dagsgd-chakra");
  // Node 5 depends on node 7, later in the file, and on node 99, which is not there; a host call
  // marked COMM_COLL_NODE without comm_type is computation.
  const std::string path = write_et(
      dir, "x.0.et", metadata() + node({5, kComp, {7, 99}, 30, ""}) + node({7, kColl, {}, 20, ""}));
  auto run = import_run({path}, ImportOptions{});
  ASSERT_TRUE(run.ok()) << run.error().message;
  const auto& problems = run->report.files[0].problems;
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].kind, "dependency on a node not in the file");
  EXPECT_EQ(problems[0].first, "node 5: dependency 99");
  auto dag = build_trace_dag(*run);
  ASSERT_TRUE(dag.ok()) << dag.error().message;
  EXPECT_TRUE(dag->collectives.empty());
  EXPECT_EQ(dag->measured_iteration[0], 50'000);
  ImportOptions strict;
  strict.strict = true;
  auto refused = import_run({path}, strict);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("--strict"), std::string::npos);
}

TEST(ChakraImport, BadNodesAreRefusedNamingTheFileAndTheNode) {
  const std::string dir = testing::fresh_test_dir("dagsgd-chakra");
  struct Case {
    std::string data;
    std::string says;
  };
  const std::vector<Case> cases = {
      {metadata() + node({1, kComp, {}, 1, ""}) + node({1, kComp, {}, 1, ""}),
       "node 1 (byte 19): the node id is also the id of the node at byte 8"},
      {metadata() + node({3, kColl, {}, 1, attr("comm_type", 12) + attr("comm_size", 8)}),
       "node 3 (byte 8): unknown comm_type 12"},
      {metadata() + node({4, kColl, {}, 1, attr("comm_type", 0)}),
       "node 4 (byte 8): comm_size -1 is missing or negative"},
      {metadata() + node({6, 9, {}, 1, ""}), "node 6 (byte 8): unknown node type 9"},
      {metadata() + node({8, kComp, {}, std::uint64_t{1} << 60, ""}),
       "node 8 (byte 8): duration_micros 1152921504606846976 is out of range"},
      {metadata() + node({1, kComp, {2}, 1, ""}) + node({2, kComp, {1}, 1, ""}),
       "node 1 (byte 8): the node depends on itself"},
      {metadata() + "\x05\x08", "byte 8: the Node message is 5 bytes long, past the end"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string path = write_et(dir, "bad" + std::to_string(i) + ".0.et", cases[i].data);
    auto run = import_run({path}, ImportOptions{});
    ASSERT_FALSE(run.ok()) << i;
    EXPECT_NE(run.error().message.find("'" + path + "'"), std::string::npos) << run.error().message;
    EXPECT_NE(run.error().message.find(cases[i].says), std::string::npos) << run.error().message;
  }
}

TEST(ChakraImport, ARunWithoutOneOfItsRanksIsRefused) {
  const std::string dir = testing::fresh_test_dir("dagsgd-chakra");
  // Ours: the metadata says the run has 3 ranks.
  const std::string path =
      write_et(dir, "dagsgd.0.et",
               metadata(field_bytes(2, field_bytes(1, "ranks") + field_int(9, 3))) +
                   node({1, kComp, {}, 5, ""}));
  write_et(dir, "dagsgd.1.et", rank_file(5));
  auto run = import_run({dir}, ImportOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("rank 2 missing: '" + dir + "/dagsgd.2.et'"),
            std::string::npos)
      << run.error().message;
  auto alone = import_run({path}, ImportOptions{});
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message.find("dagsgd.1.et"), std::string::npos) << alone.error().message;
}

}  // namespace
}  // namespace dagsgd::trace
