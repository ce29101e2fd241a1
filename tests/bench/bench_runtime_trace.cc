// Iteration time of the training loop with tracing off and on (the target: within 2%).
// Run: build/release/tests/bench/bench_runtime_trace --benchmark_repetitions=10
//      --benchmark_report_aggregates_only=true   (docs/performance.md, "Training runtime")
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "dagsgd/runtime/trainer.h"

namespace {

using dagsgd::runtime::Dataset;
using dagsgd::runtime::TrainConfig;
using dagsgd::runtime::Trainer;

// Synthetic images keep the benchmark independent of the dataset on disk; the work per
// iteration (GEMMs, exchange, update) is the same as with Fashion-MNIST.
Dataset synthetic(std::int64_t count) {
  Dataset d;
  d.count = count;
  d.features = 784;
  d.images.resize(static_cast<std::size_t>(count * 784));
  d.labels.resize(static_cast<std::size_t>(count));
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> px(0.0f, 1.0f);
  for (auto& x : d.images) x = px(rng);
  for (std::size_t i = 0; i < d.labels.size(); ++i) d.labels[i] = static_cast<std::int32_t>(i % 10);
  return d;
}

void BM_TrainStep(benchmark::State& state) {
  TrainConfig cfg;
  cfg.model = "mlp";
  cfg.batch = 64;
  cfg.overlap = state.range(1) != 0 ? dagsgd::runtime::OverlapKind::kWfbp
                                    : dagsgd::runtime::OverlapKind::kNone;
  bool tracing = state.range(0) != 0;
  auto t = Trainer::create(cfg, synthetic(std::int64_t{64} * 64), tracing);
  if (!t) {
    state.SkipWithError(t.error().message.c_str());
    return;
  }
  for (int i = 0; i < 5; ++i) (*t)->step();  // warm-up, as the manifest excludes it
  for (auto _ : state) {
    std::int64_t ns = (*t)->step();
    benchmark::DoNotOptimize(ns);
  }
  state.counters["events_per_iter"] =
      static_cast<double>((*t)->events_recorded()) / static_cast<double>(state.iterations() + 5);
}
// The ctest smoke run (tests/bench/CMakeLists.txt runs the benchmarks named */smoke).
BENCHMARK(BM_TrainStep)->Name("BM_TrainStep/smoke")->Args({1, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainStep)
    ->ArgNames({"trace", "wfbp"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

// Trace on and off alternate step by step, so load from other processes hits both alike; the
// counter is the ratio of the median step CPU times, as a percentage over tracing off. With
// file:1 the traced trainer also streams every iteration into a trace file, as `train --trace`.
void BM_TraceOverhead(benchmark::State& state) {
  TrainConfig cfg;
  cfg.model = "mlp";
  cfg.batch = 64;
  cfg.overlap = dagsgd::runtime::OverlapKind::kWfbp;
  auto off = Trainer::create(cfg, synthetic(std::int64_t{64} * 64), false);
  auto on = Trainer::create(cfg, synthetic(std::int64_t{64} * 64), true);
  if (!off || !on) {
    state.SkipWithError("cannot create the trainers");
    return;
  }
  const std::string file = "/tmp/dagsgd-bench-trace-" + std::to_string(getpid()) + ".json";
  if (state.range(0) != 0) {
    if (auto streamed = (*on)->stream_trace(file); !streamed) {
      state.SkipWithError(streamed.error().message.c_str());
      return;
    }
  }
  for (int i = 0; i < 5; ++i) {
    (*off)->step();
    (*on)->step();
  }
  std::vector<double> t_off;
  std::vector<double> t_on;
  // Thread CPU time: on a shared machine wall time mostly measures the neighbours.
  auto cpu_ns = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
  };
  // Which one goes first alternates too, so neither profits from the other's warm caches.
  bool on_first = false;
  for (auto _ : state) {
    Trainer* first = on_first ? on->get() : off->get();
    Trainer* second = on_first ? off->get() : on->get();
    double a = cpu_ns();
    first->step();
    double b = cpu_ns();
    second->step();
    double c = cpu_ns();
    (on_first ? t_on : t_off).push_back(b - a);
    (on_first ? t_off : t_on).push_back(c - b);
    on_first = !on_first;
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  double m_off = median(t_off);
  double m_on = median(t_on);
  state.counters["off_ms"] = m_off * 1e-6;
  state.counters["on_ms"] = m_on * 1e-6;
  state.counters["overhead_pct"] = m_off > 0 ? 100.0 * (m_on / m_off - 1.0) : 0.0;
  std::remove(file.c_str());
}
BENCHMARK(BM_TraceOverhead)
    ->ArgName("file")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0);

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  MPI_Finalize();
  return 0;
}
