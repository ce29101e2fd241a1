// The flow-level tier's speed: predict of ResNet-50 (WFBP, V100, 4 GPUs per node on PCIe,
// 10 GbE NICs) with every collective's transfers sharing the cluster's links, as
// `dagsgd predict --network-model flow` runs it. Figures in docs/performance.md.
#include <benchmark/benchmark.h>

#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/network.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/scenario.h"
#include "predict_loop.h"

namespace {

using namespace dagsgd;

void predict_resnet50_flow(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  auto catalogs = sim::Catalogs::load({});
  sim::HardwareSpec spec{gpus / 4, 4, "pcie3", "10gbe"};
  spec.network_model = "flow";
  auto hw = sim::resolve_hardware(spec, *catalogs);
  if (!hw) {
    state.SkipWithError(hw.error().message.c_str());
    return;
  }
  auto net = model::load_network("resnet50");
  auto eff = model::load_default_compute_efficiency();
  auto gpu = catalogs->hardware.gpu("v100");
  sim::PredictRequest r;
  r.batch = 64;
  r.layers = model::layer_times_from_flops(*net, r.batch, gpu->fp32_flops * eff->fp32);
  r.update = model::update_time(net->param_elements(), gpu->memory_bandwidth);
  r.topology = hw->topology();
  r.cluster = hw->cluster;
  r.overlap = model::OverlapPolicy{model::OverlapPolicy::Kind::kWfbp};
  bench::time_predict(state, r);
}
BENCHMARK(predict_resnet50_flow)
    ->Name("predict_resnet50_flow/smoke")
    ->Arg(8)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(predict_resnet50_flow)->Arg(1024)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
