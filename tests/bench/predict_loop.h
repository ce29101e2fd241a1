// What the predict benchmarks share: timing sim::predict on one request, with the tasks it
// simulated and the process's peak memory as counters.
#pragma once

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "dagsgd/sim/predict.h"

namespace dagsgd::bench {

inline void time_predict(benchmark::State& state, const sim::PredictRequest& r) {
  for (auto _ : state) {
    auto p = sim::predict(r);
    if (!p.ok()) {
      state.SkipWithError(p.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(p->iteration);
    state.counters["tasks"] = static_cast<double>(p->tasks);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

}  // namespace dagsgd::bench
