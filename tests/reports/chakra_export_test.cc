// Chakra export: each rank's nodes are exactly its tasks and its collectives, and every DAG edge
// between two of them is a dependency (checked on our runtime's DAG and on Kineto traces).
#include "dagsgd/reports/chakra_export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/temp.h"
#include "dagsgd/model/io.h"
#include "dagsgd/trace/manifest.h"

namespace dagsgd::reports {
namespace {

struct Built {
  trace::ImportedRun run;
  trace::TraceDag dag;
};

Built build(const std::vector<std::string>& files) {
  auto run = trace::import_run(files, trace::ImportOptions{});
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  auto dag = trace::build_trace_dag(*run);
  EXPECT_TRUE(dag.ok()) << (dag.ok() ? "" : dag.error().message);
  return Built{std::move(*run), std::move(*dag)};
}

// A two-rank `dagsgd train` run written by hand: two iterations, each with two gradient groups
// (a 4000-byte and a 1000-byte allreduce) issued during backward and awaited before the update.
std::string train_run() {
  const std::filesystem::path dir = dagsgd::testing::fresh_test_dir("dagsgd-chakra-train");
  trace::RunManifest m;
  m.kind = "train";
  m.ranks = 2;
  m.hosts = {"h", "h"};
  m.traces = {trace::rank_trace_name(0), trace::rank_trace_name(1)};
  m.iterations.times_s = {0.0003, 0.0003};
  EXPECT_TRUE(trace::write_manifest(dir.string(), m).ok());
  for (int r = 0; r < 2; ++r) {
    std::string s = "{\"distributedInfo\":{\"backend\":\"mpi\",\"rank\":" + std::to_string(r) +
                    ",\"world_size\":2},\"traceEvents\":[\n";
    auto span = [&](const std::string& name, const std::string& phase, int it, long ts, long dur,
                    const std::string& extra = "", int tid = 0) {
      s += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name +
           "\",\"pid\":" + std::to_string(r) + ",\"tid\":" + std::to_string(tid) +
           ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
           ",\"args\":{\"phase\":\"" + phase + "\",\"iteration\":" + std::to_string(it) + extra +
           "}},\n";
    };
    for (int it = 0; it < 2; ++it) {
      const long t0 = 300L * it;
      s += "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" +
           std::to_string(it) + "\",\"pid\":" + std::to_string(r) +
           ",\"tid\":0,\"ts\":" + std::to_string(t0) +
           ",\"dur\":300,\"args\":{\"iteration\":" + std::to_string(it) + "}},\n";
      span("io", "io", it, t0, 10);
      span("fc1", "forward", it, t0 + 10, 40, ",\"layer\":0");
      span("fc2", "forward", it, t0 + 50, 40, ",\"layer\":1");
      span("fc2", "backward", it, t0 + 90, 40, ",\"layer\":1");
      span("comm_issue", "comm", it, t0 + 130, 5);
      span("allreduce", "comm", it, t0 + 130, 100,
           ",\"bucket\":0,\"collective\":\"allreduce\",\"bytes\":4000", 1);
      span("fc1", "backward", it, t0 + 135, 40, ",\"layer\":0");
      span("comm_issue", "comm", it, t0 + 175, 5);
      span("allreduce", "comm", it, t0 + 175, 80,
           ",\"bucket\":1,\"collective\":\"allreduce\",\"bytes\":1000", 2);
      span("comm_wait", "comm", it, t0 + 180, 80);
      span("update", "update", it, t0 + 260, 20);
    }
    s += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"end\",\"pid\":0,\"tid\":9,\"ts\":0,"
         "\"dur\":0}]}";
    EXPECT_TRUE(model::write_file((dir / trace::rank_trace_name(r)).string(), s, true).ok());
  }
  return dir.string();
}

// Where the test expects a task in rank r's file, from the DAG alone: the task's own node, the
// node of its collective, or none (-1 for a task, -2 - ci for collective ci).
long expected_slot(const trace::TraceDag& d, model::TaskId t, int r) {
  const auto& info = d.tasks[static_cast<std::size_t>(t)];
  if (info.collective < 0) return info.rank == r ? t : -1;
  const auto& c = d.collectives[static_cast<std::size_t>(info.collective)];
  if (c.span_start[static_cast<std::size_t>(r)] < 0) return -1;
  for (std::size_t q = 0; q < c.rank_tails.size(); ++q) {
    if (c.rank_tails[q] == t && static_cast<int>(q) != r) return -1;
  }
  if (info.rank >= 0 && info.rank != r) return -1;
  return -2 - info.collective;
}

// The export of `b` against its DAG, rank by rank.
void check_against_dag(const Built& b) {
  const auto& d = b.dag;
  const auto ranks = chakra_ranks(b.run, d);
  ASSERT_EQ(ranks.size(), static_cast<std::size_t>(d.ranks));
  for (const auto& rank : ranks) {
    const int r = rank.rank;
    // Nodes: the slot each stands for, exactly once.
    std::map<long, std::uint64_t> node_of_slot;
    std::size_t collectives = 0;
    for (const auto& n : rank.nodes) {
      ASSERT_EQ(n.id, &n - rank.nodes.data());
      const long slot = n.trace_collective >= 0 ? -2 - n.trace_collective : n.task;
      EXPECT_TRUE(node_of_slot.emplace(slot, n.id).second) << "twice: " << n.name;
      if (n.trace_collective >= 0) {
        const auto& c = d.collectives[static_cast<std::size_t>(n.trace_collective)];
        EXPECT_EQ(n.comm_size, c.bytes);
        EXPECT_EQ(n.duration, d.dag.task(c.task).duration);
        ChakraCollective type{};
        EXPECT_EQ(n.collective, chakra_collective(c.kind, type)) << n.name;
        if (n.collective) {
          EXPECT_EQ(n.comm_type, type);
          ++collectives;
        }
      } else {
        EXPECT_EQ(n.duration, d.dag.task(n.task).duration);
        EXPECT_FALSE(n.collective);
      }
      for (auto dep : n.data_deps) EXPECT_LT(dep, n.id) << n.name;
    }
    EXPECT_EQ(collectives, rank.collectives);
    // Every task of the rank (and every collective it takes part in) has its node.
    std::set<long> slots;
    for (std::size_t t = 0; t < d.tasks.size(); ++t) {
      const long s = expected_slot(d, static_cast<model::TaskId>(t), r);
      if (s != -1) slots.insert(s);
    }
    EXPECT_EQ(slots.size(), rank.nodes.size());
    // Every edge between two of its nodes is a dependency, and nothing else is.
    std::set<std::pair<std::uint64_t, std::uint64_t>> want_data;
    std::set<std::pair<std::uint64_t, std::uint64_t>> want_ctrl;
    for (std::size_t a = 0; a < d.tasks.size(); ++a) {
      const auto from = static_cast<model::TaskId>(a);
      const long sa = expected_slot(d, from, r);
      if (sa == -1) continue;
      for (const auto* it = d.dag.succ_begin(from); it != d.dag.succ_end(from); ++it) {
        const long sb = expected_slot(d, *it, r);
        if (sb == -1 || sb == sa) continue;
        const auto pair = std::make_pair(node_of_slot.at(sa), node_of_slot.at(sb));
        want_data.insert(pair);
        const auto kind = d.dag.succ_kind(it);
        if (kind == model::EdgeKind::kSequence || kind == model::EdgeKind::kIterationBoundary) {
          want_ctrl.insert(pair);
        }
      }
    }
    std::set<std::pair<std::uint64_t, std::uint64_t>> got_data;
    std::set<std::pair<std::uint64_t, std::uint64_t>> got_ctrl;
    for (const auto& n : rank.nodes) {
      for (auto dep : n.data_deps) got_data.insert({dep, n.id});
      for (auto dep : n.ctrl_deps) got_ctrl.insert({dep, n.id});
    }
    EXPECT_EQ(got_data, want_data) << "rank " << r;
    EXPECT_EQ(got_ctrl, want_ctrl) << "rank " << r;
    EXPECT_EQ(rank.dependencies, want_data.size());
  }
}

TEST(ChakraExport, OurRuntimeRunMatchesItsDag) {
  const std::string dir = train_run();
  const Built b = build({dir});
  ASSERT_EQ(b.dag.mode, trace::TraceMode::kSsgd);
  ASSERT_EQ(b.dag.collectives.size(), 4u);
  check_against_dag(b);
  const auto ranks = chakra_ranks(b.run, b.dag);
  for (const auto& rank : ranks) {
    // 2 iterations x (io, 2 forward, 2 backward, 2 issues, wait, update) and 4 allreduces.
    EXPECT_EQ(rank.nodes.size(), 2u * 9 + 4) << "rank " << rank.rank;
    EXPECT_EQ(rank.collectives, 4u);
    std::vector<const ChakraNode*> colls;
    const ChakraNode* wait = nullptr;
    for (const auto& n : rank.nodes) {
      if (n.collective) colls.push_back(&n);
      if (n.name == "comm_wait" && wait == nullptr) wait = &n;
    }
    ASSERT_EQ(colls.size(), 4u);
    EXPECT_EQ(colls[0]->comm_type, ChakraCollective::kAllReduce);
    EXPECT_EQ(colls[0]->comm_size, 4000);
    EXPECT_EQ(colls[1]->comm_size, 1000);
    EXPECT_EQ(colls[0]->comm_ranks, 2);
    EXPECT_EQ(colls[0]->traced_collective, "allreduce");
    EXPECT_FALSE(colls[0]->cpu_op);  // ASTRA-sim throws on a comm node on the CPU (Workload.cc:289)
    // Issued by its comm_issue, awaited by the iteration's comm_wait.
    ASSERT_EQ(colls[0]->data_deps.size(), 1u);
    EXPECT_EQ(rank.nodes[colls[0]->data_deps[0]].name, "comm_issue");
    ASSERT_NE(wait, nullptr);
    for (const auto* c : {colls[0], colls[1]}) {
      EXPECT_NE(std::find(wait->data_deps.begin(), wait->data_deps.end(), c->id),
                wait->data_deps.end());
    }
    // Program order is a control dependency as well.
    const ChakraNode& fwd2 = rank.nodes[2];
    EXPECT_EQ(fwd2.name, "fc2");
    EXPECT_EQ(fwd2.ctrl_deps, std::vector<std::uint64_t>{1});
    EXPECT_EQ(fwd2.data_deps, std::vector<std::uint64_t>{1});
    EXPECT_TRUE(fwd2.cpu_op);
  }
  std::filesystem::remove_all(dir);
}

// ASTRA-sim's workload layer issues ALL_REDUCE, ALL_TO_ALL, ALL_GATHER, REDUCE_SCATTER and
// BROADCAST collectives and throws on any other type (astra-sim/workload/Workload.cc:347-390).
TEST(ChakraExport, EveryCollectiveHasATypeAstraSimRuns) {
  const std::set<ChakraCollective> astra_sim = {
      ChakraCollective::kAllReduce, ChakraCollective::kAllToAll, ChakraCollective::kAllGather,
      ChakraCollective::kReduceScatter, ChakraCollective::kBroadcast};
  using trace::CollectiveKind;
  for (auto kind : {CollectiveKind::kAllreduce, CollectiveKind::kBroadcast,
                    CollectiveKind::kAllgather, CollectiveKind::kReduceScatter,
                    CollectiveKind::kReduce, CollectiveKind::kAlltoall, CollectiveKind::kBarrier}) {
    ChakraCollective type{};
    ASSERT_TRUE(chakra_collective(kind, type)) << trace::collective_name(kind);
    EXPECT_EQ(astra_sim.count(type), 1u) << trace::collective_name(kind);
  }
  ChakraCollective type{};
  ASSERT_TRUE(chakra_collective(CollectiveKind::kReduce, type));
  EXPECT_EQ(type, ChakraCollective::kAllReduce);
  ASSERT_TRUE(chakra_collective(CollectiveKind::kBarrier, type));
  EXPECT_EQ(type, ChakraCollective::kAllReduce);
  EXPECT_FALSE(chakra_collective(CollectiveKind::kNone, type));
}

TEST(ChakraExport, KinetoTracesMatchTheirDag) {
  const std::string samples = std::string(DAGSGD_SOURCE_DIR) + "/datasets/samples/kineto/";
  // One rank of a 2-rank NCCL job: its collectives are its own (no other rank to join).
  const Built one = build({samples + "nccl_data.json.gz"});
  check_against_dag(one);
  const auto ranks = chakra_ranks(one.run, one.dag);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_GT(ranks[0].collectives, 0u);
  bool gpu = false;
  for (const auto& n : ranks[0].nodes) gpu = gpu || !n.cpu_op;
  EXPECT_TRUE(gpu);  // kernels are GPU ops
  // Two ranks of a 128-rank job.
  check_against_dag(
      build({samples + "sampled_rank-0.json.gz", samples + "sampled_rank-1.json.gz"}));
}

TEST(ChakraExport, FilesAreLengthDelimitedMessages) {
  const std::string dir = train_run();
  const Built b = build({dir});
  const auto ranks = chakra_ranks(b.run, b.dag);
  const std::string bytes = chakra_trace_file(b.run, b.dag, ranks[1]);
  // Walk the varint length prefixes: metadata + one message per node, ending exactly.
  std::size_t pos = 0;
  std::size_t messages = 0;
  while (pos < bytes.size()) {
    std::uint64_t len = 0;
    int shift = 0;
    while (true) {
      ASSERT_LT(pos, bytes.size());
      const auto byte = static_cast<unsigned char>(bytes[pos++]);
      len |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    pos += len;
    ++messages;
  }
  EXPECT_EQ(pos, bytes.size());
  EXPECT_EQ(messages, 1 + ranks[1].nodes.size());
  EXPECT_EQ(chakra_file_name(1), "dagsgd.1.et");
  std::filesystem::remove_all(dir);
}

// --force replaces only what export writes: the .et files of ranks an earlier, larger export
// wrote go; other files stay, and so does every other folder.
TEST(ChakraExport, ForceRemovesOnlyStaleTraceFiles) {
  namespace fs = std::filesystem;
  const std::string dir = dagsgd::testing::fresh_test_dir("dagsgd-chakra-stale");
  const std::string elsewhere = dir + "-elsewhere";
  fs::remove_all(elsewhere);
  fs::create_directories(elsewhere);
  for (const char* f : {"dagsgd.0.et", "dagsgd.1.et", "dagsgd.2.et", "mine.et", "dagsgd.x.et"}) {
    ASSERT_TRUE(model::write_file(dir + "/" + f, "x", false).ok());
    ASSERT_TRUE(model::write_file(elsewhere + "/" + f, "x", false).ok());
  }
  std::vector<ChakraRank> two(2);
  two[1].rank = 1;
  remove_stale_chakra_files(dir, two);
  EXPECT_TRUE(fs::exists(dir + "/dagsgd.0.et"));
  EXPECT_TRUE(fs::exists(dir + "/dagsgd.1.et"));
  EXPECT_FALSE(fs::exists(dir + "/dagsgd.2.et"));
  EXPECT_TRUE(fs::exists(dir + "/mine.et"));
  EXPECT_TRUE(fs::exists(dir + "/dagsgd.x.et"));
  EXPECT_TRUE(fs::exists(elsewhere + "/dagsgd.2.et"));
  fs::remove_all(elsewhere);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dagsgd::reports
