// Hand-built Kineto traces of NCCL jobs: kernels as PyTorch's profiler writes them (with
// record_param_comms' arguments on collectives), and the DAG a run of such files gives.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::testing {

// One kernel on stream 7 and its launch (at corr x 10 us on the host); `args` are the kernel's
// extra arguments, each starting with a comma.
inline std::string kineto_kernel(int corr, long ts, long dur, const std::string& name,
                                 const std::string& args) {
  const std::string c = std::to_string(corr);
  return "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":9,"
         "\"tid\":1,\"ts\":" +
         std::to_string(corr * 10) + ",\"dur\":5,\"args\":{\"correlation\":" + c +
         "}},\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + name +
         "\",\"pid\":0,\"tid\":7,"
         "\"ts\":" +
         std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
         ",\"args\":{\"correlation\":" + c + ",\"stream\":7" + args + "}},\n";
}

// One NCCL kernel of `collective` (in and out element counts of floats) in the process group
// `ranks` ("[0, 1]").
inline std::string nccl_kernel(int corr, long ts, long dur, const std::string& collective, long in,
                               long out, const std::string& ranks) {
  const int group = static_cast<int>(std::count(ranks.begin(), ranks.end(), ',')) + 1;
  return kineto_kernel(corr, ts, dur, "ncclDevKernel_Generic(ncclDevComm*)",
                       ",\"Collective name\":\"" + collective + "\",\"In msg nelems\":" +
                           std::to_string(in) + ",\"Out msg nelems\":" + std::to_string(out) +
                           ",\"Group size\":" + std::to_string(group) +
                           ",\"dtype\":\"Float\",\"Process Group Ranks\":\"" + ranks + "\"");
}

// Rank `rank` of `world`: one iteration (ProfilerStep#1, `step` us) of `events`, the host
// waiting for the GPU from 50 us to `sync_end`.
inline std::string kineto_rank(int rank, int world, long step, long sync_end,
                               const std::string& events) {
  return "{\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":" + std::to_string(rank) +
         ",\"world_size\":" + std::to_string(world) +
         "},\"traceEvents\":[\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":"
         "\"ProfilerStep#1\",\"pid\":9,\"tid\":1,\"ts\":0,\"dur\":" +
         std::to_string(step) + "},\n" + events +
         "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaDeviceSynchronize\",\"pid\":9,"
         "\"tid\":1,\"ts\":50,\"dur\":" +
         std::to_string(sync_end - 50) + "}\n]}";
}

// The DAG of the run whose rank traces are `files`.
inline trace::TraceDag traced_dag(const std::vector<std::string>& files) {
  auto run = trace::import_run(files, trace::ImportOptions{});
  EXPECT_TRUE(run.ok()) << (run.ok() ? "" : run.error().message);
  auto dag = trace::build_trace_dag(*run);
  EXPECT_TRUE(dag.ok()) << (dag.ok() ? "" : dag.error().message);
  return std::move(*dag);
}

}  // namespace dagsgd::testing
