// One prediction through the installed C++ API, printed as `dagsgd predict --json` prints it:
// ResNet-50 (or NETWORK) on 8 nodes of 4 GPUs with the CLI's defaults. Usage:
//   dagsgd-consumer [NETWORK]    (the data directory it read goes to stderr)
#include <cstdio>
#include <string>

#include "dagsgd/model/paths.h"
#include "dagsgd/reports/predict_report.h"
#include "dagsgd/sim/scenario.h"

int main(int argc, char** argv) {
  using namespace dagsgd;
  auto fail = [](const std::string& message) {
    std::fprintf(stderr, "dagsgd-consumer: %s\n", message.c_str());
    return 2;
  };
  std::fprintf(stderr, "data: %s\n", model::data_dir().c_str());
  sim::NetworkSpec network;
  network.network = argc > 1 ? argv[1] : "resnet50";
  sim::HardwareSpec hardware;
  hardware.nodes = 8;
  hardware.gpus_per_node = 4;
  auto catalogs = sim::Catalogs::load();
  if (!catalogs) return fail(catalogs.error().message);
  auto workload = sim::NetworkWorkload::resolve(network, *catalogs);
  if (!workload) return fail(workload.error().message);
  auto scenario = sim::resolve_scenario(hardware, sim::ExchangeSpec{}, *catalogs);
  if (!scenario) return fail(scenario.error().message);
  auto result = (*workload)->evaluate(*scenario, false);
  if (!result) return fail(result.error().message);
  const std::string json = reports::predict_json((*workload)->describe(*scenario), *result);
  std::fwrite(json.data(), 1, json.size(), stdout);
  return 0;
}
