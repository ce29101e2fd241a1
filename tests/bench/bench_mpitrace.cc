// The PMPI tracer's cost per intercepted call: the two clock reads a wrapper makes plus the
// recording path (event formatting into the buffer, amortized flushes to a real file).
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "dagsgd/mpitrace/recorder.h"

namespace {

using dagsgd::mpitrace::CallInfo;
using dagsgd::mpitrace::Recorder;
using dagsgd::mpitrace::RecorderConfig;

std::unique_ptr<Recorder> open_recorder(const std::string& name) {
  RecorderConfig c;
  c.path = "/tmp/dagsgd-bench-" + std::to_string(::getpid()) + "-" + name + ".trace.json";
  c.start = dagsgd::runtime::ClockSample{dagsgd::runtime::now_ns(), 123, 50};
  auto r = Recorder::open(c);
  if (!r.ok()) return nullptr;
  return std::move(*r);
}

void finish(std::unique_ptr<Recorder>& rec, const std::string& name) {
  (void)rec->finish(nullptr, "exit");
  std::remove(
      ("/tmp/dagsgd-bench-" + std::to_string(::getpid()) + "-" + name + ".trace.json").c_str());
}

// `record(recorder, call, t0, t1)` behind the two clock reads a wrapper makes, per iteration.
template <class Record>
void traced(benchmark::State& state, const std::string& name, const CallInfo& c, Record record) {
  auto rec = open_recorder(name);
  if (!rec) {
    state.SkipWithError("cannot open a trace in /tmp");
    return;
  }
  for (auto _ : state) {
    std::int64_t t0 = dagsgd::runtime::now_ns();
    std::int64_t t1 = dagsgd::runtime::now_ns();
    record(*rec, c, t0, t1);
  }
  state.SetItemsProcessed(state.iterations());
  finish(rec, name);
}

// What MPI_Allreduce's wrapper adds around PMPI_Allreduce (minus MPI's own size queries).
void BM_TracedAllreduceCall(benchmark::State& state) {
  CallInfo c;
  c.name = "MPI_Allreduce";
  c.collective = "allreduce";
  c.bytes = 4096;
  c.comm_size = 8;
  traced(state, "allreduce", c, [](Recorder& rec, const CallInfo& call, auto t0, auto t1) {
    rec.record_call(call, t0, t1, 0);
  });
}
BENCHMARK(BM_TracedAllreduceCall);

// A completed non-blocking send: the longest event we write (peer, tag, request, completer).
void BM_TracedIsendCompletion(benchmark::State& state) {
  CallInfo c;
  c.name = "MPI_Isend";
  c.collective = "send";
  c.bytes = 1 << 20;
  c.comm_size = 64;
  c.peer = 17;
  c.tag = 42;
  std::int64_t id = 0;
  traced(state, "isend", c, [&id](Recorder& rec, const CallInfo& call, auto t0, auto t1) {
    rec.record_async(call, t0, t1, 3, ++id, "MPI_Waitall");
  });
}
BENCHMARK(BM_TracedIsendCompletion);

}  // namespace

BENCHMARK_MAIN();
