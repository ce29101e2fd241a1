// `dagsgd validate`: the validation campaign (validate/campaign.h: real training on the emulated
// cluster under several shaped fabrics, each run predicted from a trace taken on another fabric)
// from its flags, and the error table (reports/validation_report.h).
#include <cstdio>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/validation_report.h"
#include "dagsgd/validate/campaign.h"

namespace dagsgd::tools {
namespace {

struct ValidateFlags {
  validate::CampaignSettings c;
  bool no_cpu_model = false;
  const CLI::App* app = nullptr;
};

int run_validate(const ValidateFlags& f) {
  validate::CampaignSettings s = f.c;
  s.grid_named = validate::names_the_grid(given_options(*f.app));
  s.host_cpu_model = !f.no_cpu_model;
  std::vector<std::string> notes;
  auto campaign = validate::Campaign::prepare(s, notes);
  for (const auto& note : notes) print_note("validate: " + note + "\n");
  if (!campaign) return report_error(campaign.error().message);
  auto rep = campaign->run();
  if (!rep) return report_error(rep.error().message, kExitFailure);
  print(reports::validation_table(*rep));
  const std::string json_path = s.run.out + "/validation.json";
  auto wrote = model::write_file(json_path, reports::validation_json(*rep), true);
  if (!wrote) return report_error(wrote.error().message, kExitFailure);
  std::printf("wrote %s\n", json_path.c_str());
  for (const auto& p : rep->problems) std::fprintf(stderr, "validate: problem: %s\n", p.c_str());
  return rep->problems.empty() ? kExitOk : kExitFailure;
}

constexpr const char* kValidateHelp =
    "Train on the emulated cluster (tools/emucluster; needs root) under several shaped "
    "fabrics, predict each run from a trace taken on another fabric with `dagsgd replay`, and "
    "print the error table (docs/validation.md)";

}  // namespace

void add_validate(CLI::App& root, Action& action) {
  auto [cmd, f] = add_command<ValidateFlags>(root, action, "validate", kValidateHelp, run_validate);
  f->app = cmd;
  f->c.run.out = "validation";
  add_flag_table(*cmd, f->c, validate::campaign_flags());
  cmd->add_flag("--no-cpu-model", f->no_cpu_model,
                "replay with the traced compute durations as they are, instead of running the "
                "ranks' computation on the machine's cores (replay --cpus)");
}

}  // namespace dagsgd::tools
