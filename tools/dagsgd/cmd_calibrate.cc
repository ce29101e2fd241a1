// `dagsgd calibrate LOG`: fits a link's alpha, beta and eager/rendezvous step to an allreduce
// micro-benchmark log and prints (or writes) a fabric entry for --fabric-file; with --stack, fits
// the software stack's parameters on a known link instead (transfer calibration).
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/calibrate_report.h"
#include "dagsgd/sim/calibrate_run.h"

namespace dagsgd::tools {
namespace {

struct CalibrateFlags {
  sim::CalibrationRequest r;
  bool json = false;
  std::string out;
  bool force = false;
  const CLI::App* app = nullptr;
};

constexpr const char* kCalibrateHelp =
    "Fit a link's alpha, beta and eager/rendezvous step to an allreduce micro-benchmark log "
    "(OSU or nccl-tests) and print a fabric entry for --fabric-file; with --stack and --link, "
    "fit the software stack above a known link and print a stack file for --stack";

int run_calibrate(const CalibrateFlags& f) {
  sim::CalibrationRequest r = f.r;
  r.given = given_options(*f.app);
  auto catalog = model::HardwareCatalog::load_default();
  if (!catalog) return report_error(catalog.error().message, kExitFailure);
  std::vector<std::string> notes;
  auto c = sim::run_calibration(r, *catalog, notes);
  for (const auto& note : notes) print_note("dagsgd: " + note + "\n");
  if (!c) return report_error(c.error().message);
  if (!f.out.empty()) {
    auto w = model::write_file(f.out, c->entry_json() + "\n", f.force);
    if (!w) return report_error(w.error().message);
  }
  print(reports::calibration_report(*c, r, f.json, f.out));
  return kExitOk;
}

}  // namespace

void add_calibrate(CLI::App& root, Action& action) {
  auto [cmd, flags] =
      add_command<CalibrateFlags>(root, action, "calibrate", kCalibrateHelp, run_calibrate);
  flags->app = cmd;
  add_flag_table(*cmd, flags->r, sim::calibration_flags());
  cmd->add_flag("--json", flags->json, "print the fit, residuals and entry as JSON");
  cmd->add_option("--out", flags->out,
                  "write the fabric entry (with --stack: the stack file) to this file");
  cmd->add_flag("--force", flags->force, "let --out replace an existing file");
}

}  // namespace dagsgd::tools
