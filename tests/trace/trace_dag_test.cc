// DAG building from traces: launch -> kernel, stream order, stream/event/context syncs, and the
// cross-rank join of collectives with clock alignment.
#include "dagsgd/trace/trace_dag.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/temp.h"
#include "dagsgd/model/io.h"

namespace dagsgd::trace {
namespace {

const std::string kKinetoDir = std::string(DAGSGD_SHARED_DATA) + "/traces/kineto/";

struct Built {
  ImportedRun run;
  TraceDag dag;
};

Built build(const std::vector<std::string>& files) {
  auto run = import_run(files, ImportOptions{});
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  auto dag = build_trace_dag(*run);
  EXPECT_TRUE(dag.ok()) << (dag.ok() ? "" : dag.error().message);
  return Built{std::move(*run), std::move(*dag)};
}

// Tasks made from events named `name` (in order).
std::vector<model::TaskId> named(const Built& b, const std::string& name, int rank = 0) {
  std::vector<model::TaskId> out;
  for (std::size_t t = 0; t < b.dag.tasks.size(); ++t) {
    const auto& info = b.dag.tasks[t];
    if (info.rank != rank || info.event < 0) continue;
    const auto& r = b.run.ranks[static_cast<std::size_t>(rank)];
    if (r.str(r.events[static_cast<std::size_t>(info.event)].name) == name) {
      out.push_back(static_cast<model::TaskId>(t));
    }
  }
  return out;
}

bool edge(const model::Dag& d, model::TaskId a, model::TaskId b) {
  for (const auto* it = d.succ_begin(a); it != d.succ_end(a); ++it) {
    if (*it == b) return true;
  }
  return false;
}

TEST(TraceDag, EventSyncTraceDependencies) {
  auto b = build({kKinetoDir + "event_sync_trace.json.gz"});
  EXPECT_EQ(b.dag.mode, TraceMode::kKineto);
  auto launches = named(b, "cudaLaunchKernel");
  auto spin = named(b, "at::cuda::(anonymous namespace)::spin_kernel(long)");
  ASSERT_EQ(launches.size(), 4u);
  ASSERT_EQ(spin.size(), 1u);
  // launch -> kernel (correlation 1526 is the fourth launch).
  EXPECT_TRUE(edge(b.dag.dag, launches[3], spin[0]));
  // Stream sync waits for the DtoH copy launched just before it.
  auto copy = named(b, "Memcpy DtoH (Device -> Pageable)");
  auto ssync = named(b, "cudaStreamSynchronize");
  ASSERT_EQ(copy.size(), 1u);
  ASSERT_EQ(ssync.size(), 1u);
  EXPECT_TRUE(edge(b.dag.dag, copy[0], ssync[0]));
  // Event sync waits for the op before cudaEventRecord (correlation 1533): the spin kernel.
  auto esync = named(b, "cudaEventSynchronize");
  ASSERT_EQ(esync.size(), 1u);
  EXPECT_TRUE(edge(b.dag.dag, spin[0], esync[0]));
  // The event sync's own time excludes the wait for the spin kernel.
  EXPECT_LT(b.dag.dag.task(esync[0]).duration,
            b.dag.tasks[static_cast<std::size_t>(esync[0])].measured_dur);
  // Device sync waits for the last op of the stream.
  auto dsync = named(b, "cudaDeviceSynchronize");
  ASSERT_EQ(dsync.size(), 1u);
  EXPECT_TRUE(edge(b.dag.dag, spin[0], dsync[0]));
  // Kernels on one stream are chained in order.
  auto kernels = named(b,
                       "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::Half, "
                       "at::native::func_wrapper_t<c10::Half, at::native::sum_functor<c10::Half, "
                       "float, c10::Half>::operator()(at::TensorIterator&)::{lambda(float, "
                       "float)#1}>, unsigned int, c10::Half, 4> >(at::native::ReduceOp<c10::Half, "
                       "at::native::func_wrapper_t<c10::Half, at::native::sum_functor<c10::Half, "
                       "float, c10::Half>::operator()(at::TensorIterator&)::{lambda(float, "
                       "float)#1}>, unsigned int, c10::Half, 4>)");
  (void)kernels;
  EXPECT_EQ(b.dag.measured_iteration.size(), 1u);
  EXPECT_TRUE(b.dag.dag.topological_order().ok());
}

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("dagsgd-dag-" + name)).string();
}

// Two ranks of a 2-rank job with two NCCL allreduces; rank 1's clock runs 500 us ahead and it
// arrives 100 us late at the second allreduce.
std::vector<std::string> two_rank_job() {
  std::vector<std::string> files;
  for (int r = 0; r < 2; ++r) {
    long off = r == 1 ? 500 : 0;
    long late = r == 1 ? 100 : 0;
    auto t = [&](long us) { return std::to_string(us + off); };
    std::string s = "{\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":" + std::to_string(r) +
                    ",\"world_size\":2},\"traceEvents\":[\n";
    s += "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":9,\"tid\":"
         "1,\"ts\":" +
         t(0) + ",\"dur\":1000},\n";
    s += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,\"tid\":1,"
         "\"ts\":" +
         t(10) + ",\"dur\":5,\"args\":{\"correlation\":1}},\n";
    s += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":" + t(20) +
         ",\"dur\":" + std::to_string(100 + late) +
         ",\"args\":{\"correlation\":1,\"stream\":7}},\n";
    s += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,\"tid\":1,"
         "\"ts\":" +
         t(30) + ",\"dur\":5,\"args\":{\"correlation\":2}},\n";
    s += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce_RING_LL_Sum_float\","
         "\"pid\":0,\"tid\":7,\"ts\":" +
         t(120 + late) + ",\"dur\":" + std::to_string(200 - late) +
         ",\"args\":{\"correlation\":2,\"stream\":7,\"Collective name\":\"allreduce\",\"In msg "
         "nelems\":1000,\"Group size\":2,\"dtype\":\"Float\"}},\n";
    s += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,\"tid\":1,"
         "\"ts\":" +
         t(40) + ",\"dur\":5,\"args\":{\"correlation\":3}},\n";
    s += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclKernel_AllReduce_RING_LL_Sum_float\","
         "\"pid\":0,\"tid\":7,\"ts\":" +
         t(330) +
         ",\"dur\":100,\"args\":{\"correlation\":3,\"stream\":7,\"Collective "
         "name\":\"allreduce\",\"In msg nelems\":2000,\"Group size\":2,\"dtype\":\"Float\"}},\n";
    s += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaDeviceSynchronize\",\"pid\":9,"
         "\"tid\":1,\"ts\":" +
         t(50) + ",\"dur\":385}\n";
    s += "]}";
    files.push_back(tmp("rank" + std::to_string(r) + ".json"));
    EXPECT_TRUE(model::write_file(files.back(), s, true).ok());
  }
  return files;
}

TEST(TraceDag, CollectivesJoinAcrossRanksAfterClockAlignment) {
  auto files = two_rank_job();
  auto b = build(files);
  // Both collectives end together on both ranks: the offset is recovered exactly.
  ASSERT_EQ(b.run.report.clock_offsets.size(), 2u);
  EXPECT_EQ(b.run.report.clock_offsets[1], 500000);
  EXPECT_EQ(b.run.report.clock_residual, 0);
  EXPECT_TRUE(b.run.report.clocks_aligned);
  ASSERT_EQ(b.dag.collectives.size(), 2u);
  const auto& c0 = b.dag.collectives[0];
  EXPECT_TRUE(c0.joined);
  EXPECT_EQ(c0.name, "allreduce");
  EXPECT_EQ(c0.bytes, 4000);
  EXPECT_EQ(c0.ranks, 2);
  // Rank 1 arrived 100 us late; the transfer after its arrival took 100 us.
  EXPECT_EQ(c0.arrive[1] - c0.arrive[0], 100000);
  EXPECT_EQ(c0.measured, 100000);
  // Each rank's kernel feeds the join, and the join gates each rank's next kernel.
  auto nccl0 = named(b, "ncclKernel_AllReduce_RING_LL_Sum_float", 0);
  auto nccl1 = named(b, "ncclKernel_AllReduce_RING_LL_Sum_float", 1);
  ASSERT_EQ(nccl0.size(), 2u);
  EXPECT_TRUE(edge(b.dag.dag, nccl0[0], c0.task));
  EXPECT_TRUE(edge(b.dag.dag, nccl1[0], c0.task));
  EXPECT_TRUE(edge(b.dag.dag, c0.task, nccl0[1]));
  EXPECT_TRUE(edge(b.dag.dag, c0.task, nccl1[1]));
  // The device sync waits for the last kernel on the stream.
  auto dsync = named(b, "cudaDeviceSynchronize", 0);
  ASSERT_EQ(dsync.size(), 1u);
  EXPECT_TRUE(edge(b.dag.dag, nccl0[1], dsync[0]));
  for (const auto& f : files) std::filesystem::remove(f);
}

}  // namespace
}  // namespace dagsgd::trace

namespace dagsgd::trace {
namespace {

// A two-rank `dagsgd train` run directory written by hand: one iteration, one layer, one
// gradient group; rank 1 issues its collective 30 us after rank 0 and observes its completion
// `tail` us after rank 0 does (Open MPI's reduce + broadcast: the root is done first).
std::string ssgd_run(long tail = 0) {
  std::string dir = dagsgd::testing::fresh_test_dir("dagsgd-dag-ssgd");
  RunManifest m;
  m.kind = "train";
  m.ranks = 2;
  m.hosts = {"h", "h"};
  m.traces = {rank_trace_name(0), rank_trace_name(1)};
  m.iterations.times_s = {0.0002};
  EXPECT_TRUE(write_manifest(dir, m).ok());
  for (int r = 0; r < 2; ++r) {
    long d = r == 1 ? 30 : 0;
    auto span = [&](const std::string& name, const std::string& phase, long ts, long dur,
                    const std::string& extra = "", int tid = 0) {
      return "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + name +
             "\",\"pid\":" + std::to_string(r) + ",\"tid\":" + std::to_string(tid) +
             ",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
             ",\"args\":{\"phase\":\"" + phase + "\",\"iteration\":0" + extra + "}},\n";
    };
    std::string s = "{\"distributedInfo\":{\"backend\":\"mpi\",\"rank\":" + std::to_string(r) +
                    ",\"world_size\":2},\"traceEvents\":[\n";
    s += "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#0\",\"pid\":" +
         std::to_string(r) + ",\"tid\":0,\"ts\":0,\"dur\":200,\"args\":{\"iteration\":0}},\n";
    s += span("io", "io", 0, 10);
    s += span("fc1", "forward", 10, 40 + d, ",\"layer\":0");
    s += span("fc1", "backward", 50 + d, 50, ",\"layer\":0");
    long t = r == 1 ? tail : 0;
    s += span("collective", "comm", 100 + d, 90 - d - tail + t,
              ",\"bucket\":0,\"collective\":\"allreduce\",\"bytes\":4000", 1);
    s += span("comm_issue", "comm", 100 + d, 5);
    s += span("comm_wait", "comm", 105 + d, 85 - d - tail + t);
    s += span("update", "update", 190 - tail + t, 10);
    s += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"end\",\"pid\":0,\"tid\":9,\"ts\":0,\"dur\":0}"
         "]}";
    EXPECT_TRUE(model::write_file(dir + "/" + rank_trace_name(r), s, true).ok());
  }
  return dir;
}

TEST(TraceDag, OurRuntimeJoinsEachGradientGroup) {
  std::string dir = ssgd_run();
  auto b = build({dir});
  EXPECT_EQ(b.dag.mode, TraceMode::kSsgd);
  ASSERT_EQ(b.dag.collectives.size(), 1u);
  const auto& c = b.dag.collectives[0];
  EXPECT_TRUE(c.joined);
  EXPECT_EQ(c.bytes, 4000);
  EXPECT_EQ(c.arrive[1] - c.arrive[0], 30000);  // rank 1 issued 30 us later
  EXPECT_EQ(c.measured, 190000 - 135000);       // last arrival to completion
  for (int r = 0; r < 2; ++r) {
    auto issue = named(b, "comm_issue", r);
    auto wait = named(b, "comm_wait", r);
    auto update = named(b, "update", r);
    auto bwd = named(b, "fc1", r);
    ASSERT_EQ(issue.size(), 1u);
    ASSERT_EQ(bwd.size(), 2u);
    // issue -> startup -> join -> the rank's tail -> wait: the startup and the tails
    // (zero-length here) are where a replay puts the parts that overlap other collectives.
    EXPECT_TRUE(edge(b.dag.dag, issue[0], c.startup_task));
    ASSERT_NE(c.rank_tails[static_cast<std::size_t>(r)], model::kNoTask);
    EXPECT_TRUE(edge(b.dag.dag, c.task, c.rank_tails[static_cast<std::size_t>(r)]));
    EXPECT_TRUE(edge(b.dag.dag, c.rank_tails[static_cast<std::size_t>(r)], wait[0]));
    EXPECT_EQ(b.dag.dag.task(c.rank_tails[static_cast<std::size_t>(r)]).duration, 0);
    EXPECT_TRUE(edge(b.dag.dag, wait[0], update[0]));
    EXPECT_TRUE(edge(b.dag.dag, bwd[0], bwd[1]));  // program order
    EXPECT_EQ(b.dag.dag.task(bwd[1]).kind, model::TaskKind::kBackward);
    // The wait's own time is what remained after the completion (nothing here).
    EXPECT_EQ(b.dag.dag.task(wait[0]).duration, 0);
  }
  EXPECT_TRUE(edge(b.dag.dag, c.startup_task, c.task));
  EXPECT_EQ(b.dag.dag.task(c.startup_task).duration, 0);
  EXPECT_EQ(b.dag.dag.task(c.task).duration, c.measured);
  // join -> spread -> rank 1's tail, and rank 0 (the root of a rooted algorithm) does not wait
  // for it: a replay puts the broadcast there; as traced it takes no time.
  ASSERT_NE(c.spread_task, model::kNoTask);
  EXPECT_TRUE(edge(b.dag.dag, c.task, c.spread_task));
  EXPECT_TRUE(edge(b.dag.dag, c.spread_task, c.rank_tails[1]));
  EXPECT_FALSE(edge(b.dag.dag, c.spread_task, c.rank_tails[0]));
  EXPECT_EQ(b.dag.dag.task(c.spread_task).duration, 0);
  // Only the join holds the one progress engine.
  const auto& res = b.dag.dag.resources();
  EXPECT_EQ(res[static_cast<std::size_t>(b.dag.dag.task(c.task).resource)].capacity, 1);
  EXPECT_GT(res[static_cast<std::size_t>(b.dag.dag.task(c.rank_tails[0]).resource)].capacity, 1);
  EXPECT_EQ(b.dag.measured_iteration.size(), 1u);
  std::filesystem::remove_all(dir);
}

// Our runtime's alltoall-sum-allgather and reduce-scatter-allgather exchanges ("asa" and "rsag"
// in its traces) are allreduces that the model's rows of those names price; the run says so as
// its traced algorithm. Its parameter server ("ps") has no row.
TEST(TraceDag, OurRuntimesAsaAndRsagExchangesAreAllreducesByTheirRows) {
  for (const std::string exchange : {"asa", "rsag", "ps"}) {
    std::string dir = ssgd_run();
    for (int r = 0; r < 2; ++r) {
      const std::string path = dir + "/" + rank_trace_name(r);
      std::string text = model::read_file(path).value();
      const std::string from = "\"collective\":\"allreduce\"";
      ASSERT_NE(text.find(from), std::string::npos);
      text.replace(text.find(from), from.size(), "\"collective\":\"" + exchange + "\"");
      ASSERT_TRUE(model::write_file(path, text, true).ok());
    }
    auto b = build({dir});
    ASSERT_EQ(b.dag.collectives.size(), 1u);
    EXPECT_EQ(b.dag.collectives[0].name, exchange);
    const bool row = exchange != "ps";
    EXPECT_EQ(b.dag.collectives[0].kind, row ? CollectiveKind::kAllreduce : CollectiveKind::kNone);
    EXPECT_EQ(b.dag.exchange_algorithm, row ? exchange : "");
    std::filesystem::remove_all(dir);
  }
  // The allreduce exchange's run names no algorithm.
  const std::string plain = ssgd_run();
  EXPECT_EQ(build({plain}).dag.exchange_algorithm, "");
  std::filesystem::remove_all(plain);
}

// The ranks observe completion 20 us apart: the join ends at the first, and the later rank's
// lag is a task of its own (a replay onto another fabric replaces it with the modeled spread
// between ranks), not fixed time in its wait.
TEST(TraceDag, EachRanksLagAfterTheFirstCompletionIsItsOwnTask) {
  std::string dir = ssgd_run(20);
  auto b = build({dir});
  ASSERT_EQ(b.dag.collectives.size(), 1u);
  const auto& c = b.dag.collectives[0];
  EXPECT_EQ(c.span_end[1] - c.span_end[0], 20000);
  EXPECT_EQ(c.completed, c.span_end[0]);
  EXPECT_EQ(c.measured, 170000 - 135000);  // last arrival to the first completion
  ASSERT_EQ(c.rank_tails.size(), 2u);
  EXPECT_EQ(b.dag.dag.task(c.rank_tails[0]).duration, 0);
  EXPECT_EQ(b.dag.dag.task(c.rank_tails[1]).duration, 20000);
  for (int r = 0; r < 2; ++r) {
    auto wait = named(b, "comm_wait", r);
    ASSERT_EQ(wait.size(), 1u);
    EXPECT_TRUE(edge(b.dag.dag, c.rank_tails[static_cast<std::size_t>(r)], wait[0]));
    EXPECT_EQ(b.dag.dag.task(wait[0]).duration, 0);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace dagsgd::trace
