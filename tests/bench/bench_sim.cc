// Simulator speed: engine events per second (the explicit DAG and the compact S-SGD DAG), predict
// of ResNet-50 with every rank simulated (analytical tier, and the flow tier on DGX-1 nodes), and
// a what-if sweep.
#include <benchmark/benchmark.h>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/sim/engine.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/scenario.h"
#include "dagsgd/sim/sweep.h"
#include "predict_loop.h"

namespace {

using namespace dagsgd;

// Many workers of a 50-layer network with WFBP: contention on the shared comm channel and a
// mix of ready-queue and direct starts, as in real predictions.
model::SsgdConfig engine_config(int workers) {
  model::SsgdConfig c;
  c.layers.assign(50, model::LayerTime{1000, 2000, 100000});
  c.workers = workers;
  c.iterations = 3;
  c.groups = model::make_groups(c.layers, model::OverlapPolicy{model::OverlapPolicy::Kind::kWfbp},
                                [](std::int64_t e) { return 500 + e / 100; });
  return c;
}

model::Dag engine_dag(int workers) { return model::build_ssgd_dag(engine_config(workers)); }

// Runs `once` (one simulation, returning its event count) every iteration and reports events
// per second.
template <class Once>
void count_events(benchmark::State& state, const Once& once) {
  std::uint64_t events = 0;
  for (auto _ : state) events += once();
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}

void engine_events(benchmark::State& state) {
  const model::Dag dag = engine_dag(static_cast<int>(state.range(0)));
  count_events(state, [&]() -> std::uint64_t {
    auto r = sim::simulate(dag);
    if (!r.ok()) {
      state.SkipWithError(r.error().message.c_str());
      return 0;
    }
    benchmark::DoNotOptimize(r->makespan);
    return r->events;
  });
}
BENCHMARK(engine_events)->Name("engine_events/smoke")->Arg(8)->Unit(benchmark::kMillisecond);
BENCHMARK(engine_events)->Arg(1024)->Unit(benchmark::kMillisecond);

// The same through one sim::Engine and one SimResult, as a sweep uses them: no allocation and no
// page faults after the first run.
void engine_events_reused(benchmark::State& state) {
  const model::Dag dag = engine_dag(static_cast<int>(state.range(0)));
  sim::Engine engine;
  sim::SimResult r;
  count_events(state, [&]() -> std::uint64_t {
    auto status = engine.run(dag, r);
    if (!status.ok()) state.SkipWithError(status.error().message.c_str());
    benchmark::DoNotOptimize(r.makespan);
    return r.events;
  });
}
BENCHMARK(engine_events_reused)->Arg(1024)->Unit(benchmark::kMillisecond);

// The same DAG in its compact form (model::SsgdDag), the last iteration recorded, as predict
// runs it: one engine and one result.
void engine_events_compact(benchmark::State& state) {
  const model::SsgdDag dag(engine_config(static_cast<int>(state.range(0))));
  sim::Engine engine;
  sim::SsgdSimResult r;
  count_events(state, [&]() -> std::uint64_t {
    auto status = engine.run(dag, r);
    if (!status.ok()) state.SkipWithError(status.error().message.c_str());
    benchmark::DoNotOptimize(r.makespan());
    return r.events();
  });
}
BENCHMARK(engine_events_compact)
    ->Name("engine_events_compact/smoke")
    ->Arg(8)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(engine_events_compact)->Arg(1024)->Unit(benchmark::kMillisecond);

sim::PredictRequest resnet50_request(int gpus) {
  auto net = model::load_network("resnet50");
  auto cat = model::HardwareCatalog::load_default();
  auto eff = model::load_default_compute_efficiency();
  auto gpu = cat->gpu("v100");
  sim::PredictRequest r;
  r.batch = 64;
  r.layers = model::layer_times_from_flops(*net, r.batch, gpu->fp32_flops * eff->fp32);
  r.update = model::update_time(net->param_elements(), gpu->memory_bandwidth);
  r.topology.gpus_per_node = 4;
  r.topology.nodes = gpus / 4;
  r.topology.intra = model::LinkCost::from_fabric(*cat->fabric("pcie3"));
  r.topology.inter = model::LinkCost::from_fabric(*cat->fabric("10gbe"));
  r.overlap = model::OverlapPolicy{model::OverlapPolicy::Kind::kWfbp};
  return r;
}

void predict_resnet50(benchmark::State& state) {
  bench::time_predict(state, resnet50_request(static_cast<int>(state.range(0))));
}
BENCHMARK(predict_resnet50)->Name("predict_resnet50/smoke")->Arg(8)->Unit(benchmark::kMillisecond);
BENCHMARK(predict_resnet50)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(predict_resnet50)->Arg(16384)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(predict_resnet50)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(1);

const sim::Catalogs& catalogs() {
  static const sim::Catalogs kCatalogs = *sim::Catalogs::load();
  return kCatalogs;
}

// ResNet-50 on V100s through the scenario path the CLI takes (`dagsgd predict --network resnet50
// ...` with these hardware flags).
sim::PredictRequest resnet50_scenario(const sim::HardwareSpec& hardware) {
  auto workload = sim::NetworkWorkload::resolve({"resnet50"}, catalogs());
  auto scenario = sim::resolve_scenario(hardware, sim::ExchangeSpec{}, catalogs());
  if (!workload || !scenario) return {};
  auto r = (*workload)->request(*scenario);
  return r ? *r : sim::PredictRequest{};
}

// The flow-level tier on `--topology dgx1-v100` (8 GPUs per node); the argument is the GPU count
// (bench_flow.cc has nodes of 4 GPUs on PCIe).
void predict_resnet50_dgx1(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  bench::time_predict(state, resnet50_scenario({gpus / 8, 8, "pcie3", "10gbe", "dgx1-v100"}));
}
BENCHMARK(predict_resnet50_dgx1)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(1);

// The flow-level tier at scale: `dagsgd predict --network resnet50 --gpu h100 --nodes N
// --gpus-per-node 8 --topology dgx-h100 --inter ib-ndr` (the argument is the GPU count).
void predict_resnet50_dgx_h100(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  sim::NetworkSpec net{"resnet50"};
  net.gpu = "h100";
  auto workload = sim::NetworkWorkload::resolve(net, catalogs());
  auto scenario = sim::resolve_scenario({gpus / 8, 8, "pcie3", "ib-ndr", "dgx-h100"},
                                        sim::ExchangeSpec{}, catalogs());
  if (!workload || !scenario) {
    state.SkipWithError("resnet50 on dgx-h100 nodes does not resolve");
    return;
  }
  auto r = (*workload)->request(*scenario);
  if (!r) {
    state.SkipWithError(r.error().message.c_str());
    return;
  }
  bench::time_predict(state, *r);
}
BENCHMARK(predict_resnet50_dgx_h100)
    ->Name("predict_resnet50_dgx_h100/smoke")
    ->Arg(16)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(predict_resnet50_dgx_h100)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(predict_resnet50_dgx_h100)->Arg(16384)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(predict_resnet50_dgx_h100)->Arg(131072)->Unit(benchmark::kMillisecond)->Iterations(1);

// A what-if sweep as `dagsgd whatif --network resnet50` runs it (sim::run_sweep in one process,
// without writing the report): 5 inter-node fabrics x 10 GPU counts (1 to 512, 4 per node) x 4
// algorithms x 5 overlap policies x 2 precisions x 5 top-k ratios = 10,000 scenarios; the smoke
// case is the first fabric, algorithm, policy, precision and ratio at 1 to 8 GPUs.
sim::SweepGrid whatif_grid(bool smoke) {
  sim::SweepGrid g;
  g.gpus_per_node = 4;
  if (smoke) {
    g.fabrics = {"10gbe"};
    g.gpus = {1, 2, 4, 8};
    return g;
  }
  g.fabrics = {"10gbe", "25gbe", "100gbe", "ib-edr", "ib-hdr"};
  g.gpus = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  g.algorithms = {"ring", "tree", "auto", "hier"};
  g.overlaps = {"none", "wfbp", "mgwfbp", "bucket:25", "bucket:5"};
  g.precisions = {"fp32", "fp16"};
  g.topks = {0, 0.001, 0.01, 0.05, 0.1};
  return g;
}

void whatif_sweep(benchmark::State& state, bool smoke) {
  auto workload = sim::NetworkWorkload::resolve({"resnet50"}, catalogs());
  if (!workload) {
    state.SkipWithError(workload.error().message.c_str());
    return;
  }
  auto sweep = sim::prepare_sweep(whatif_grid(smoke), **workload, catalogs());
  if (!sweep) {
    state.SkipWithError(sweep.error().message.c_str());
    return;
  }
  for (auto _ : state) {
    auto results = sim::run_sweep(**workload, *sweep, sim::SerialExecutor{});
    if (!results) {
      state.SkipWithError(results.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(results->back().iteration);
  }
  state.counters["scenarios"] = static_cast<double>(sweep->points.size());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}
BENCHMARK_CAPTURE(whatif_sweep, smoke, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(whatif_sweep, 10000, false)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
