// Trace reading speed (MB/s of uncompressed JSON) and peak memory relative to the file size, on
// a Kineto trace built by repeating the events of the shared nccl_data trace (docs/performance.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "dagsgd/model/io.h"
#include "dagsgd/trace/importer.h"

namespace {

// kB from a /proc/self/status line such as "VmHWM:   123 kB".
long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(std::string(key).size()));
  }
  return -1;
}

// Resets the peak-RSS mark (Linux clear_refs 5), so VmHWM measures from here on.
void reset_peak() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (f == nullptr) return;
  std::fputs("5", f);
  std::fclose(f);
}

// The shared trace's events repeated `copies` times (same times: the reader does not care).
// 1, 8 and 32 copies: 9.8, 78 and 313 MB.
std::string synthetic_trace(int copies) {
  auto text = dagsgd::model::read_file(std::string(DAGSGD_BENCH_SHARED_DATA) +
                                       "/traces/kineto/nccl_data.json.gz");
  if (!text.ok()) return {};
  auto begin = text->find('[', text->find("\"traceEvents\""));
  // The array ends before the first key after it ("INFO" in this file).
  auto end = text->rfind(']', text->find("\"INFO\""));
  std::string events = text->substr(begin + 1, end - begin - 1);
  std::string out = text->substr(0, begin + 1);
  out.reserve(events.size() * static_cast<std::size_t>(copies) + out.size() + 16);
  for (int c = 0; c < copies; ++c) {
    if (c > 0) out += ",";
    out += events;
  }
  out += text->substr(end);
  return out;
}

void BM_ImportKineto(benchmark::State& state) {
  const std::string text = synthetic_trace(static_cast<int>(state.range(0)));
  if (text.empty()) {
    state.SkipWithError("shared nccl_data trace not found");
    return;
  }
  double peak_ratio = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    state.PauseTiming();
    // The importer owns its input, as after read_file, which leaves room for simdjson's padding.
    std::string copy;
    copy.reserve(text.size() + 64);
    copy = text;
    reset_peak();
    long before = status_kb("VmRSS:");
    state.ResumeTiming();
    dagsgd::trace::FileReport rep;
    dagsgd::trace::ImportOptions options;
    options.threads = static_cast<int>(state.range(1));
    auto r = dagsgd::trace::import_trace_text(std::move(copy), "bench.json", 0, rep, options);
    state.PauseTiming();
    if (!r.ok() || rep.truncated ||
        (!rep.problems.empty() && rep.problems[0].kind != "unmatched flow")) {
      state.SkipWithError(r.ok() ? "the synthetic trace did not import cleanly"
                                 : r.error().message.c_str());
      return;
    }
    events = r->events.size();
    long peak = status_kb("VmHWM:");
    // Peak resident memory of the import, input included, over the input size.
    peak_ratio =
        static_cast<double>(peak - before) * 1024.0 / static_cast<double>(text.size()) + 1.0;
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(text.size()));
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["events"] = static_cast<double>(events);
  state.counters["peak_over_input"] = peak_ratio;
}
// Arguments: copies, threads (0: as an import chooses: two for a large text on two cores or more,
// one under 128 MiB while another job holds a core;
// 1: one). Throughput is per wall-clock second: a second thread's CPU time is not the caller's.
BENCHMARK(BM_ImportKineto)
    ->ArgsProduct({{1, 8, 32}, {0, 1}})
    ->ArgNames({"", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ImportKineto)->Name("BM_ImportKineto/smoke")->Args({1, 0})->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
