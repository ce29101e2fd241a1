// dagsgd whatif: one workload swept across fabrics, GPU counts and communication strategies,
// written as a report (HTML, Markdown, CSV, JSON, timelines); under mpirun the points are split
// across the ranks (an MPI executor for sim::run_sweep).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/format.h"
#include "dagsgd/model/io.h"
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
    constexpr std::size_t kWidth = 30;
    const std::size_t filled = done * kWidth / total;
    std::fprintf(stderr, "\rwhatif [%s%s] %zu/%zu scenarios", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total);
    if (done == total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

template <typename T>
std::string join(const std::vector<T>& v) {
  std::string out;
  for (const auto& x : v) {
    if (!out.empty()) out += ",";
    if constexpr (std::is_same_v<T, std::string>) {
      out += x;
    } else {
      out += model::num(static_cast<double>(x));
    }
  }
  return out;
}

// A command line that reproduces the sweep (without --out).
std::string command_line(const WhatifOptions& o, const sim::SweepGrid& g) {
  const ScenarioFlags& f = o.scenario;
  const sim::NetworkSpec& n = f.network;
  std::string c = "dagsgd whatif";
  if (!o.run.empty()) {
    c += " " + o.run;
    if (f.given("--batch")) c += " --batch " + std::to_string(n.batch);
  } else {
    c += " --network " + n.network + " --batch " + std::to_string(n.batch) + " --gpu " + n.gpu;
    if (n.step_time_s > 0) c += " --step-time " + model::num(n.step_time_s);
    if (!n.layer_profile.empty()) c += " --layer-profile " + n.layer_profile;
    if (n.io_time_s > 0) c += " --io-time " + model::num(n.io_time_s);
    if (!n.prefetch) c += " --prefetch off";
    if (n.sync != "bsp") c += " --sync " + n.sync;
  }
  if (!f.fabric_file.empty()) c += " --fabric-file " + f.fabric_file;
  if (!g.stack.empty()) c += " --stack " + g.stack;
  if (!f.hardware.topology.empty()) c += " --topology " + f.hardware.topology;
  if (f.given("--cluster-network")) c += " --cluster-network " + f.hardware.cluster_network;
  if (f.given("--network-model")) c += " --network-model " + f.hardware.network_model;
  c += " --fabrics " + join(g.fabrics);
  if (o.run.empty()) c += " --gpus " + join(g.gpus);
  c += " --gpus-per-node " + std::to_string(g.gpus_per_node) + " --intra " + g.default_intra +
       " --inter " + g.default_inter + " --algorithms " + join(g.algorithms);
  if (o.run.empty()) {
    c += " --overlap " + join(g.overlaps) + " --precision " + join(g.precisions) + " --topk " +
         join(g.topks);
  }
  return c;
}

// The workload: a traced run (refusing flags it cannot honour) or a network spec.
model::Expected<std::unique_ptr<sim::Workload>> load_workload(const WhatifOptions& o,
                                                              const sim::Catalogs& catalogs,
                                                              sim::SweepGrid& grid) {
  const ScenarioFlags& f = o.scenario;
  if (f.given("--network") == !o.run.empty()) {
    return model::Error{o.run.empty()
                            ? "give a traced run directory (RUN) or --network"
                            : "give either a traced run directory or --network, not both"};
  }
  if (o.run.empty()) {
    if (grid.gpus.empty()) return model::Error{"--gpus is required with --network"};
    auto w = sim::NetworkWorkload::resolve(f.network, catalogs);
    if (!w) return w.error();
    return std::unique_ptr<sim::Workload>(std::move(*w));
  }
  for (const char* flag : {"--gpu", "--step-time", "--layer-profile", "--sync", "--io-time",
                           "--prefetch", "--iterations"}) {
    if (f.given(flag)) {
      return model::Error{std::string(flag) +
                          " describes a network spec; a traced run keeps what it measured"};
    }
  }
  for (const char* flag : {"--overlap", "--precision", "--topk"}) {
    if (f.given(flag)) {
      return model::Error{std::string(flag) +
                          ": a traced run keeps its own overlap, precision and sparsity; sweep "
                          "them with --network"};
    }
  }
  auto w = sim::TracedWorkload::load({o.run}, trace::ImportOptions{},
                                     f.given("--batch") ? f.network.batch : 0);
  if (!w) return w.error();
  if ((*w)->batch() == 0) {
    return model::Error{(*w)->batch_problem() + "; give --batch"};
  }
  const int ranks = (*w)->ranks();
  if (f.given("--gpus") && (grid.gpus.size() != 1 || grid.gpus[0] != ranks)) {
    return model::Error{"--gpus: a traced run replays its own " + std::to_string(ranks) +
                        " ranks; leave --gpus out or give " + std::to_string(ranks)};
  }
  grid.gpus = {ranks};
  if (!f.given("--gpus-per-node"))
    grid.gpus_per_node = sim::run_topology((*w)->dag()).gpus_per_node;
  return std::unique_ptr<sim::Workload>(std::move(*w));
}

// What stays fixed across the sweep, from the first scenario's description.
sim::Description fixed_part(const WhatifOptions& o, const sim::Description& d,
                            const sim::SweepGrid& grid) {
  if (!o.run.empty()) return d;
  sim::Description w;
  for (const auto& [k, v] : d) {
    if (k == "network" || k == "batch per GPU" || k == "gpu" || k == "sync" || k == "prefetch" ||
        k == "compute") {
      w.emplace_back(k, v);
    }
  }
  w.emplace_back("GPUs per node", std::to_string(grid.gpus_per_node));
  w.emplace_back("links not swept",
                 "intra-node " + grid.default_intra + ", inter-node " + grid.default_inter);
  return w;
}

// The report files, refused before anything is simulated when they exist (without --force).
std::vector<std::string> report_files(const sim::Sweep& sweep) {
  std::vector<std::string> files = {"report.html", "report.md", "results.csv", "results.json"};
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    if (sweep.keep_timeline[i]) {
      files.push_back("timelines/" + reports::timeline_file_name(sweep.points[i], i));
    }
  }
  return files;
}

// Whether `p` is something other than a directory (a file, a dangling link), as a message.
std::string not_a_directory(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(p, ec)) || fs::is_directory(p, ec)) return {};
  return "--out: '" + p.string() + "' is not a directory";
}

// Rank 0's checks before the sweep: existing outputs, the plot library, the output directory.
// `created`: the directories made here, removed again when the sweep fails.
int prepare_output(const WhatifOptions& o, const sim::Sweep& sweep, reports::PlotLibrary& plots,
                   std::vector<fs::path>& created) {
  const fs::path dir(o.out);
  for (const fs::path& d : {dir, dir / "timelines"}) {
    if (auto msg = not_a_directory(d); !msg.empty()) return report_error(msg);
  }
  if (!o.force) {
    for (const auto& f : report_files(sweep)) {
      if (model::file_exists((dir / f).string())) {
        return report_error("'" + (dir / f).string() + "' exists; use --force to overwrite");
      }
    }
  }
  auto lib = reports::load_plot_library();
  if (!lib) return report_error(lib.error().message, kExitFailure);
  plots = std::move(*lib);
  std::error_code ec;
  for (const fs::path& d : {dir, dir / "timelines"}) {
    if (!fs::exists(d, ec)) created.insert(created.begin(), d);  // innermost first
  }
  fs::create_directories(dir / "timelines", ec);
  if (ec) {
    return report_error("cannot create '" + (dir / "timelines").string() + "': " + ec.message(),
                        kExitFailure);
  }
  return kExitOk;
}

// With --force, the timelines of an earlier sweep that this one does not write: left there, the
// directory would mix two sweeps. Only timeline files (*.trace.json) are removed.
void remove_stale_timelines(const fs::path& dir, const reports::WhatifReport& report) {
  std::vector<std::string> keep;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    if (!report.rows[i].result.timeline.empty()) {
      keep.push_back(reports::timeline_file_name(report.rows[i].scenario, i));
    }
  }
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir / "timelines", ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".trace.json") && std::find(keep.begin(), keep.end(), name) == keep.end()) {
      stale.push_back(e.path());
    }
  }
  for (const auto& p : stale) fs::remove(p, ec);
}

int write_report(const WhatifOptions& o, const reports::WhatifReport& report,
                 const reports::PlotLibrary& plots) {
  const fs::path dir(o.out);
  if (o.force) remove_stale_timelines(dir, report);
  auto write = [&](const std::string& name, const std::string& content) -> bool {
    auto w = model::write_file((dir / name).string(), content, o.force);
    if (!w) report_error(w.error().message, kExitFailure);
    return w.ok();
  };
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    if (report.rows[i].result.timeline.empty()) continue;
    if (!write("timelines/" + reports::timeline_file_name(report.rows[i].scenario, i),
               reports::timeline_trace(report, report.rows[i]))) {
      return kExitFailure;
    }
  }
  if (!write("results.csv", reports::whatif_csv(report)) ||
      !write("results.json", reports::whatif_json(report)) ||
      !write("report.md", reports::whatif_markdown(report)) ||
      !write("report.html", reports::whatif_html(report, plots))) {
    return kExitFailure;
  }
  return kExitOk;
}

constexpr const char* kHelp =
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
  auto workload = load_workload(o, *catalogs, grid);
  if (!workload) return fail(workload.error().message);
  auto sweep = sim::prepare_sweep(grid, **workload, *catalogs);
  if (!sweep) return fail(sweep.error().message);

  reports::PlotLibrary plots;
  std::vector<fs::path> created;
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

  reports::WhatifReport report;
  report.grid = sweep->grid;
  report.command = command_line(o, sweep->grid);
  report.workload = fixed_part(o, (*workload)->describe(sweep->scenarios.front()), sweep->grid);
  const sim::NetworkSpec& n = o.scenario.network;
  report.title =
      o.run.empty()
          ? n.network + ", " + std::to_string(n.batch) + " samples per GPU, " + n.gpu
          : "traced run " + o.run + ", " + std::to_string(sweep->points.front().gpus) + " ranks";
  for (std::size_t i = 0; i < sweep->points.size(); ++i) {
    report.rows.push_back({sweep->points[i], std::move((*results)[i])});
  }
  if (int rc = write_report(o, report, plots); rc != kExitOk) return rc;
  std::size_t timelines = 0;
  for (bool k : sweep->keep_timeline) timelines += k ? 1 : 0;
  print("whatif: " + std::to_string(report.rows.size()) + " scenarios on " +
        std::to_string(ranks.size()) + (ranks.size() == 1 ? " rank" : " ranks") + "; wrote " +
        o.out + "/report.html, report.md, results.csv, results.json and " +
        std::to_string(timelines) + " timelines\n");
  return kExitOk;
}

}  // namespace

void add_whatif(CLI::App& root, Action& action) {
  auto [sub, opts] = add_command<WhatifOptions>(root, action, "whatif", kHelp, run_whatif);
  sub->add_option("run", opts->run,
                  "A traced run directory (dagsgd train/collect --trace, or Kineto traces) to "
                  "replay on each fabric, instead of --network");
  add_scenario_flags(*sub, opts->scenario, ScenarioUse::kWhatif);
  sub->add_option("--out", opts->out, "Report directory")->required();
  sub->add_flag("--force", opts->force, "Overwrite existing report files");
}

}  // namespace dagsgd::tools
