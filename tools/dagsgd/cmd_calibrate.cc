// `dagsgd calibrate LOG`: fits a link's alpha, beta and eager/rendezvous step to an allreduce
// micro-benchmark log and prints (or writes) a fabric entry for --fabric-file; with --stack, fits
// the software stack's parameters on a known link instead (transfer calibration).
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/stack.h"
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
  r.names = {.ranks = "--ranks",
             .algorithm = "--algorithm",
             .scope = "--scope",
             .statistic = "--statistic",
             .nominal = "--nominal-gbps",
             .measured = "--no-measured",
             .stack = "--stack",
             .link = "--link",
             .call = "--call",
             .trace = "--trace",
             .ranks_per_node = "--ranks-per-node",
             .fabric_file = "--fabric-file"};
  for (const CLI::Option* o : f.app->get_options()) {
    if (o->count() > 0) r.given.push_back(o->get_name());
  }
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
  cmd->add_option("logs", flags->r.logs,
                  "benchmark logs (OSU '# Size Avg Latency(us)' or nccl-tests); several logs "
                  "(one per rank count) are fitted together");
  cmd->add_option("--trace", flags->r.trace,
                  "with --stack: fit to a traced run's own allreduces instead (those alone in "
                  "flight after the warm-up; --call defaults to the stack framework's call)");
  cmd->add_option("--ranks", flags->r.ranks,
                  "ranks of the allreduce, for one log (default: the trailing number of the file "
                  "name, e.g. allreduce4.log -> 4, or the count the log states)")
      ->check(worker_count());
  cmd->add_option("--algorithm", flags->r.algorithm,
                  "the formula to fit: " +
                      model::NameRegistry("", model::calibration_algorithm_names()).list() +
                      " (default ring)");
  cmd->add_option("--name", flags->r.name,
                  "the fabric entry's name (default: the logs' file stems joined by '+')");
  cmd->add_option("--description", flags->r.description,
                  "what the link is (the entry's description says what was fitted after it)");
  cmd->add_option("--scope", flags->r.scope, "the entry's scope: intra, inter (default) or both");
  cmd->add_option("--nominal-gbps", flags->r.nominal_gbps,
                  "the link's line rate in Gbit/s for the entry (default: the fitted bandwidth)")
      ->check(positive_finite());
  cmd->add_flag("--no-step", flags->r.no_step, "fit alpha and beta only, without a step");
  cmd->add_option("--statistic", flags->r.statistic,
                  "which latency to use: max (the slowest rank; a replayed collective ends when "
                  "its last rank has the result), avg, or auto (default: max when the log has a "
                  "'Max Latency(us)' column, as OSU's -f table and dagsgd-allreduce-bench do)");
  cmd->add_flag(
      "--no-measured", flags->r.no_measured,
      "leave the log's latencies out of the entry (by default they are kept as "
      "'allreduce_measured' and price allreduces of that rank count in place of the fit)");
  cmd->add_option("--stack", flags->r.stack,
                  "transfer calibration: fit this software stack's library parameters (" +
                      model::bundled_stacks().list() +
                      ", a name of 'dagsgd stack list', or a stack file) on the known --link and "
                      "write a stack file for --stack FILE on predict, whatif and replay "
                      "(docs/communication.md)");
  cmd->add_option("--link", flags->r.link,
                  "with --stack: the fabric the benchmark crossed (a catalog name, or one of "
                  "--fabric-file)");
  cmd->add_option("--fabric-file", flags->r.fabric_file, "with --stack: extra fabric definitions")
      ->check(CLI::ExistingFile);
  cmd->add_option("--ranks-per-node", flags->r.ranks_per_node,
                  "with --stack: the benchmark's ranks per node (default 1: every rank on its "
                  "own node; equal to the rank count: one node)")
      ->check(worker_count());
  cmd->add_option("--call", flags->r.call,
                  "with --stack: the call the benchmark timed: allreduce (OSU osu_allreduce, "
                  "nccl-tests; default), iallreduce, iallreduce_in_place");
  cmd->add_flag("--json", flags->json, "print the fit, residuals and entry as JSON");
  cmd->add_option("--out", flags->out,
                  "write the fabric entry (with --stack: the stack file) to this file");
  cmd->add_flag("--force", flags->force, "let --out replace an existing file");
}

}  // namespace dagsgd::tools
