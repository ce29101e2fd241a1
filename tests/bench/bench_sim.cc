// Simulator speed: engine events per second, and predict of ResNet-50 with every rank simulated.
#include <benchmark/benchmark.h>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/sim/engine.h"
#include "dagsgd/sim/predict.h"
#include "predict_loop.h"

namespace {

using namespace dagsgd;

// Many workers of a 50-layer network with WFBP: contention on the shared comm channel and a
// mix of ready-queue and direct starts, as in real predictions.
model::Dag engine_dag(int workers) {
  model::SsgdConfig c;
  c.layers.assign(50, model::LayerTime{1000, 2000, 100000});
  c.workers = workers;
  c.iterations = 3;
  c.groups = model::make_groups(c.layers, model::OverlapPolicy{model::OverlapPolicy::Kind::kWfbp},
                                [](std::int64_t e) { return 500 + e / 100; });
  return model::build_ssgd_dag(c);
}

void engine_events(benchmark::State& state) {
  model::Dag dag = engine_dag(static_cast<int>(state.range(0)));
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto r = sim::simulate(dag);
    if (!r.ok()) state.SkipWithError(r.error().message.c_str());
    events += r->events;
    benchmark::DoNotOptimize(r->makespan);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(engine_events)->Name("engine_events/smoke")->Arg(8)->Unit(benchmark::kMillisecond);
BENCHMARK(engine_events)->Arg(1024)->Unit(benchmark::kMillisecond);

// The same through one sim::Engine and one SimResult, as a sweep uses them: no allocation and no
// page faults after the first run.
void engine_events_reused(benchmark::State& state) {
  model::Dag dag = engine_dag(static_cast<int>(state.range(0)));
  sim::Engine engine;
  sim::SimResult r;
  std::uint64_t events = 0;
  for (auto _ : state) {
    auto status = engine.run(dag, r);
    if (!status.ok()) state.SkipWithError(status.error().message.c_str());
    events += r.events;
    benchmark::DoNotOptimize(r.makespan);
  }
  state.counters["events_per_s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(engine_events_reused)->Arg(1024)->Unit(benchmark::kMillisecond);

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
  sim::PredictRequest r = resnet50_request(static_cast<int>(state.range(0)));
  bench::time_predict(state, r);
}
BENCHMARK(predict_resnet50)->Name("predict_resnet50/smoke")->Arg(8)->Unit(benchmark::kMillisecond);
BENCHMARK(predict_resnet50)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(predict_resnet50)->Arg(16384)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
