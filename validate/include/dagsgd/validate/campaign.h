// The validation campaign `dagsgd validate` runs: real training on the emulated cluster under
// several shaped fabrics (runtime/emulated_cluster.h), each run predicted from a trace taken on
// another fabric (sim/validation.h), into the report of reports/validation_report.h. It joins
// the runtime, which measures, and the simulator, which predicts; neither may reach the other.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/flag_table.h"
#include "dagsgd/reports/validation_report.h"
#include "dagsgd/runtime/emulated_cluster.h"

namespace dagsgd::validate {

struct CampaignSettings {
  runtime::ExperimentNames names;
  runtime::ExperimentSettings run;
  // Whether the user named the grid (or how a run is measured): without, --reuse re-predicts the
  // grid recorded in OUT/grid.json rather than measure the default grid's missing runs.
  bool grid_named = false;
  // Replay the ranks' computation on the machine's cores (sim::Validator).
  bool host_cpu_model = true;
  std::string network_model = "flow";  // analytic or flow
};

// The flags of `dagsgd validate` that fill CampaignSettings (model/flag_table.h), and whether
// the flags `given` name the grid or how a run is measured (what OUT/grid.json records).
const std::vector<model::FlagSpec<CampaignSettings>>& campaign_flags();
bool names_the_grid(const std::vector<std::string>& given);

class Campaign {
 public:
  // Resolves the grid (with --reuse and no grid named, the one OUT/grid.json records, said in
  // `notes`), creates OUT's folders and takes its lock, held while the campaign lives. The errors
  // are the user's: a name, a file, a folder in use.
  static model::Expected<Campaign> prepare(CampaignSettings s, std::vector<std::string>& notes);

  // Records the grid in OUT/grid.json, checks the cluster, writes the profiles' fabric entries,
  // then measures: in rounds over the whole grid (the micro-benchmarks, then every
  // configuration), so that a configuration's repeats are minutes apart rather than back to back;
  // each configuration is measured as the median of its repeats, its trace the repeat whose
  // slowest rank computes the median time, each micro-benchmark the median of its repeats per
  // size and column. Then every configuration is predicted from the same configuration on every
  // other profile, each replay's report kept below OUT (reports::validation_replay_file). The
  // errors are the machine's (the cluster cannot run, a file cannot be written, a signal);
  // what goes wrong with one run or prediction is in the report's problems.
  model::Expected<reports::ValidationReport> run();

 private:
  Campaign(CampaignSettings s, runtime::ExperimentGrid grid, runtime::Experiments ex)
      : s_(std::move(s)), grid_(std::move(grid)), ex_(std::move(ex)) {}
  CampaignSettings s_;
  runtime::ExperimentGrid grid_;
  runtime::Experiments ex_;
};

}  // namespace dagsgd::validate
