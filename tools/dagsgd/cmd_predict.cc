// dagsgd predict: iteration time, scaling and bottleneck of an S-SGD job from a network spec.
#include "command.h"
#include "dagsgd/reports/predict_report.h"
#include "scenario_options.h"

namespace dagsgd::tools {

namespace {

struct PredictOptions {
  ScenarioFlags scenario;
  bool json = false;
};

constexpr const char* kPredictHelp =
    "Predict iteration time, throughput, scaling and the bottleneck of synchronous\n"
    "data-parallel SGD from a network definition and hardware, without a trace.\n"
    "Example: dagsgd predict --network resnet50 --batch 64 --gpu v100 --nodes 8 \\\n"
    "  --gpus-per-node 4 --intra pcie3 --inter 10gbe --overlap wfbp";

int run_predict(const PredictOptions& o) {
  const ScenarioFlags& f = o.scenario;
  auto catalogs = load_catalogs(f);
  if (!catalogs) return report_error(catalogs.error().message);
  auto workload = sim::NetworkWorkload::resolve(f.network, *catalogs);
  if (!workload) return report_error(workload.error().message);
  sim::HardwareSpec hardware = f.hardware;
  auto per_node = gpus_per_node(f, hardware.gpus_per_node);
  if (!per_node) return report_error(per_node.error().message);
  hardware.gpus_per_node = *per_node;
  auto scenario = sim::resolve_scenario(hardware, f.exchange, *catalogs);
  if (!scenario) return report_error(scenario.error().message);
  auto result = (*workload)->evaluate(*scenario, false);
  if (!result) return report_error(result.error().message);
  const sim::Description d = (*workload)->describe(*scenario);
  print(o.json ? reports::predict_json(d, *result) : reports::predict_text(d, *result));
  return kExitOk;
}

}  // namespace

void add_predict(CLI::App& root, Action& action) {
  auto [sub, opts] =
      add_command<PredictOptions>(root, action, "predict", kPredictHelp, run_predict);
  add_scenario_flags(*sub, opts->scenario, ScenarioUse::kPredict);
  sub->add_flag("--json", opts->json, "Print one JSON object instead of text");
}

}  // namespace dagsgd::tools
