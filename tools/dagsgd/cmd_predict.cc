// dagsgd predict: iteration time, scaling and bottleneck of an S-SGD job from a network spec.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/network.h"
#include "dagsgd/reports/predict_report.h"
#include "dagsgd/sim/predict.h"
#include "scenario_options.h"

namespace dagsgd::tools {

namespace {

struct PredictOptions {
  ScenarioOptions scenario;
  bool json = false;
};

int run_predict(const PredictOptions& o) {
  auto built = build_scenario(o.scenario);
  if (!built.ok()) return report_error(built.error().message);
  auto result = sim::predict(built->request);
  if (!result.ok()) return report_error(result.error().message);
  std::string out = o.json ? reports::predict_json(built->description, *result)
                           : reports::predict_text(built->description, *result);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace

void add_predict(CLI::App& root, Action& action) {
  auto opts = std::make_shared<PredictOptions>();
  CLI::App* sub = root.add_subcommand(
      "predict",
      "Predict iteration time, throughput, scaling and the bottleneck of synchronous\n"
      "data-parallel SGD from a network definition and hardware, without a trace.\n"
      "Example: dagsgd predict --network resnet50 --batch 64 --gpu v100 --nodes 8 \\\n"
      "  --gpus-per-node 4 --intra pcie3 --inter 10gbe --overlap wfbp");
  add_scenario_options(*sub, opts->scenario);
  sub->add_flag("--json", opts->json, "Print one JSON object instead of text");
  sub->callback([opts, &action] { action = [opts] { return run_predict(*opts); }; });
}

}  // namespace dagsgd::tools
