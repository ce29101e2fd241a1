// dagsgd whatif: one workload swept across fabrics, GPU counts and communication strategies,
// written as a report (HTML, Markdown, CSV, JSON, timelines); under mpirun the points are split
// across the ranks (an MPI executor for sim::run_sweep).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/reports/whatif_report.h"
#include "dagsgd/runtime/launched_group.h"
#include "dagsgd/sim/sweep.h"
#include "scenario_options.h"

namespace dagsgd::tools {

namespace {

namespace fs = std::filesystem;

struct WhatifOptions {
  std::string run;  // a traced run directory (RUN mode), or empty (network-spec mode)
  ScenarioFlags scenario;
  std::string out;
  bool force = false;
};

// The ranks this process shares the sweep with (one process without a launcher). Embedded
// (run_cli) the host program owns the process: one process, and MPI is left alone.
class MpiExecutor final : public sim::SweepExecutor {
 public:
  MpiExecutor() {
    if (!embedded()) group_.emplace();
  }
  int rank() const override { return group_ ? group_->rank() : 0; }
  int size() const override { return group_ ? group_->size() : 1; }
  int agree(int code) const { return group_ ? group_->agree(code) : code; }
  std::string gather(const std::string& mine) const override {
    return group_ ? group_->gather(mine) : mine;
  }

 private:
  std::optional<runtime::LaunchedGroup> group_;
};

// A progress bar on stderr, for a terminal only.
sim::SweepProgress progress_bar(bool show) {
  if (!show) return {};
  return [](std::size_t done, std::size_t total) {
    std::fputs(reports::whatif_progress(done, total).c_str(), stderr);
    std::fflush(stderr);
  };
}

// Rank 0's checks before the sweep: existing outputs (then their folders), the plot library.
// `created`: the folders made here, removed again when the sweep fails.
int prepare_output(const WhatifOptions& o, const sim::Sweep& sweep, reports::PlotLibrary& plots,
                   std::vector<std::string>& created) {
  if (int rc = prepare_outputs(o.out, reports::whatif_file_names(sweep), o.force, &created);
      rc != kExitOk) {
    return rc;
  }
  auto lib = reports::load_plot_library();
  if (!lib) return report_error(lib.error().message, kExitFailure);
  plots = std::move(*lib);
  return kExitOk;
}

constexpr const char* kWhatifHelp =
    "Sweep one workload across fabrics, GPU counts and communication strategies and write\n"
    "a report (report.html, report.md, results.csv, results.json, timelines/) to --out.\n"
    "Every combination of the list options is one scenario. Under mpirun the scenarios are\n"
    "split across ranks and rank 0 writes the report.\n"
    "Example: dagsgd whatif --network resnet50 --batch 64 --gpu v100 \\\n"
    "  --fabrics pcie3,nvlink2,10gbe,100gbe,ib-edr --gpus 1,4,8,16,32,64 --gpus-per-node 4 \\\n"
    "  --out whatif-resnet50";

int run_whatif(const WhatifOptions& o) {
  MpiExecutor ranks;
  const bool root = ranks.rank() == 0;
  auto fail = [&](const std::string& msg, int code = kExitBadInput) {
    return ranks.agree(root ? report_error(msg, code) : code);
  };
  auto catalogs = load_catalogs(o.scenario);
  if (!catalogs) return fail(catalogs.error().message);
  sim::SweepGrid grid = o.scenario.grid;
  grid.topology = o.scenario.hardware.topology;
  grid.cluster_network = o.scenario.hardware.cluster_network;
  grid.network_model = o.scenario.hardware.network_model;
  auto per_node = gpus_per_node(o.scenario, grid.gpus_per_node);
  if (!per_node) return fail(per_node.error().message);
  grid.gpus_per_node = *per_node;
  auto workload = sim::load_sweep_workload(o.run, o.scenario.network,
                                           given_options(*o.scenario.app), *catalogs, grid);
  if (!workload) return fail(workload.error().message);
  auto sweep = sim::prepare_sweep(grid, **workload, *catalogs);
  if (!sweep) return fail(sweep.error().message);

  reports::PlotLibrary plots;
  std::vector<std::string> created;
  const int ready = ranks.agree(root ? prepare_output(o, *sweep, plots, created) : kExitOk);
  if (ready != kExitOk) return ready;
  const bool show = root && sweep->points.size() > 4 && !embedded() && ::isatty(STDERR_FILENO) == 1;
  auto results = sim::run_sweep(**workload, *sweep, ranks, progress_bar(show));
  if (!root) return kExitOk;
  if (!results) {
    std::error_code ec;
    for (const auto& d : created) fs::remove(d, ec);  // empty: nothing was written
    return report_error(results.error().message, kExitFailure);
  }

  auto report = reports::whatif_report(*sweep, std::move(*results),
                                       (*workload)->describe(sweep->scenarios.front()), o.run,
                                       o.scenario.network);
  // Without the output flags: the same sweep into another directory gives the same bytes.
  report.command = command_line({"--out"}, {"--force"});
  if (o.force) reports::remove_stale_timelines(o.out, report);
  for (const auto& [name, bytes] : reports::whatif_files(report, plots)) {
    if (int rc = write_output(o.out, name, bytes, o.force); rc != kExitOk) return rc;
  }
  print(reports::whatif_summary(report, ranks.size(), o.out));
  return kExitOk;
}

}  // namespace

void add_whatif(CLI::App& root, Action& action) {
  auto [sub, opts] = add_command<WhatifOptions>(root, action, "whatif", kWhatifHelp, run_whatif);
  sub->add_option("run", opts->run,
                  "A traced run directory (dagsgd train/collect --trace, Kineto traces or Chakra "
                  "execution traces) to replay on each fabric, instead of --network");
  add_scenario_flags(*sub, opts->scenario, ScenarioUse::kWhatif);
  sub->add_option("--out", opts->out, "Report directory")->required();
  sub->add_flag("--force", opts->force, "Overwrite existing report files");
}

}  // namespace dagsgd::tools
