// dagsgd whatif: one workload swept across fabrics, GPU counts and communication strategies,
// written as a report (HTML, Markdown, CSV, JSON, timelines); scenarios split across MPI ranks.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#ifdef DAGSGD_WITH_MPI
#include <mpi.h>
#endif

#include "command.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/whatif_report.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/trace_replay.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"
#include "scenario_options.h"

namespace dagsgd::tools {

namespace {

struct WhatifOptions {
  std::string run;       // a traced run directory (RUN mode), or empty (network-spec mode)
  ScenarioOptions base;  // network, batch, gpu, step time, ...; the swept fields are overridden
  reports::WhatifGrid grid;
  std::string out;
  bool force = false;
  std::vector<std::string> given;  // the options that appeared on the command line
  bool has(const char* flag) const {
    return std::find(given.begin(), given.end(), flag) != given.end();
  }
};

// A traced run, imported once and replayed per scenario.
struct TracedRun {
  trace::ImportedRun run;
  trace::TraceDag dag;
  int batch = 0;  // per rank
  int gpus_per_node = 1;
};

// The ranks this process shares the sweep with. MPI is only initialized when a launcher started
// us, so a plain run stays a single process without an MPI singleton.
class Ranks {
 public:
  Ranks() {
#ifdef DAGSGD_WITH_MPI
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
      if (std::getenv(var) != nullptr) {
        MPI_Init(nullptr, nullptr);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        mpi_ = true;
        break;
      }
    }
#endif
  }
  ~Ranks() {
#ifdef DAGSGD_WITH_MPI
    if (mpi_) MPI_Finalize();
#endif
  }
  Ranks(const Ranks&) = delete;
  Ranks& operator=(const Ranks&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Rank 0's verdict (0 = go on) reaches every rank.
  int agree(int code) const {
#ifdef DAGSGD_WITH_MPI
    if (mpi_) MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
    return code;
  }

  // Concatenates every rank's bytes at rank 0, in rank order.
  std::string gather(const std::string& mine) const {
#ifdef DAGSGD_WITH_MPI
    if (mpi_) {
      int n = static_cast<int>(mine.size());
      std::vector<int> sizes(static_cast<std::size_t>(size_));
      MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
      std::vector<int> offsets(static_cast<std::size_t>(size_), 0);
      int total = 0;
      for (std::size_t r = 0; r < sizes.size(); ++r) {
        offsets[r] = total;
        total += sizes[r];
      }
      std::string all(rank_ == 0 ? static_cast<std::size_t>(total) : 0, '\0');
      MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, 0,
                  MPI_COMM_WORLD);
      return all;
    }
#endif
    return mine;
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  bool mpi_ = false;
};

class Progress {
 public:
  explicit Progress(std::size_t total, bool show) : total_(total), show_(show) {}
  void step() {
    ++done_;
    if (!show_) return;
    constexpr int kWidth = 30;
    const auto filled = static_cast<int>(done_ * kWidth / total_);
    std::fprintf(stderr, "\rwhatif [%s%s] %zu/%zu scenarios", std::string(filled, '#').c_str(),
                 std::string(static_cast<std::size_t>(kWidth - filled), '.').c_str(), done_,
                 total_);
    if (done_ == total_) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  std::size_t total_;
  std::size_t done_ = 0;
  bool show_;
};

template <typename T>
std::string join(const std::vector<T>& v) {
  std::string out;
  for (const auto& x : v) {
    if (!out.empty()) out += ",";
    if constexpr (std::is_same_v<T, std::string>) {
      out += x;
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", static_cast<double>(x));
      out += buf;
    }
  }
  return out;
}

std::string command_line(const WhatifOptions& o, const reports::WhatifGrid& g) {
  const auto& b = o.base;
  std::string c = "dagsgd whatif";
  if (!o.run.empty()) {
    c += " " + o.run;
    if (o.has("--batch")) c += " --batch " + std::to_string(b.batch);
  } else {
    c += " --network " + b.network + " --batch " + std::to_string(b.batch) + " --gpu " + b.gpu;
    if (b.step_time > 0) c += " --step-time " + join(std::vector<double>{b.step_time});
    if (!b.layer_profile.empty()) c += " --layer-profile " + b.layer_profile;
    if (b.io_time > 0) c += " --io-time " + join(std::vector<double>{b.io_time});
    if (b.prefetch != "on") c += " --prefetch " + b.prefetch;
    if (b.sync != "bsp") c += " --sync " + b.sync;
  }
  if (!b.fabric_file.empty()) c += " --fabric-file " + b.fabric_file;
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

ScenarioOptions options_for(const WhatifOptions& o, const reports::WhatifScenario& s) {
  ScenarioOptions so = o.base;
  so.nodes = s.nodes;
  so.gpus_per_node = s.gpus_per_node;
  so.intra = s.intra;
  so.inter = s.inter;
  so.algorithm = s.algorithm;
  so.overlap = s.overlap;
  so.precision = s.precision;
  so.topk = s.topk;
  return so;
}

using SimulateFn = std::function<std::string(std::size_t index)>;

// Runs this rank's share: "index\nlength\nwire" records, where a wire starting with '!' is an
// error message.
std::string run_share(std::size_t scenarios, const SimulateFn& simulate, const Ranks& ranks) {
  const auto size = static_cast<std::size_t>(ranks.size());
  const auto rank = static_cast<std::size_t>(ranks.rank());
  std::size_t mine = 0;
  for (std::size_t i = 0; i < scenarios; ++i) mine += i % size == rank ? 1 : 0;
  Progress progress(mine, rank == 0 && scenarios > 4 && ::isatty(STDERR_FILENO) == 1);
  std::string out;
  for (std::size_t i = rank; i < scenarios; i += size) {
    const std::string wire = simulate(i);
    out += std::to_string(i) + "\n" + std::to_string(wire.size()) + "\n" + wire;
    progress.step();
  }
  return out;
}

std::string spec_wire(const WhatifOptions& o, const reports::WhatifScenario& s, bool timeline) {
  auto built = build_scenario(options_for(o, s));
  if (!built.ok()) return "!" + built.error().message;
  built->request.keep_timeline = timeline;
  auto r = sim::predict(built->request);
  return r.ok() ? reports::result_to_wire(*r) : "!" + r.error().message;
}

std::string replay_wire(const TracedRun& t, const model::HardwareCatalog& catalog,
                        const reports::WhatifScenario& s, bool timeline) {
  sim::ReplayOptions ro;
  ro.comm = sim::CommMode::kModeled;
  ro.algorithm = s.algorithm;
  model::Topology target;
  target.nodes = s.nodes;
  target.gpus_per_node = s.gpus_per_node;
  target.intra = model::LinkCost::from_fabric(*catalog.fabric(s.intra));
  target.inter = model::LinkCost::from_fabric(*catalog.fabric(s.inter));
  ro.target = target;
  auto r = sim::replay_trace(t.dag, t.run, ro);
  if (!r.ok()) return "!" + r.error().message;
  return reports::result_to_wire(reports::replay_as_prediction(t.dag, *r, t.batch, timeline));
}

// Imports the run and checks the flags that a traced run cannot honour.
model::Expected<TracedRun> load_traced_run(const WhatifOptions& o) {
  for (const char* flag : {"--network", "--gpu", "--step-time", "--layer-profile", "--sync",
                           "--io-time", "--prefetch", "--iterations"}) {
    if (o.has(flag)) {
      return model::Error{std::string(flag) +
                          " describes a network spec; a traced run keeps what it measured"};
    }
  }
  for (const char* flag : {"--overlap", "--precision", "--topk"}) {
    if (o.has(flag)) {
      return model::Error{std::string(flag) +
                          ": a traced run keeps its own overlap, precision and sparsity; sweep "
                          "them with --network"};
    }
  }
  TracedRun t;
  auto run = trace::import_run({o.run}, trace::ImportOptions{});
  if (!run.ok()) return run.error();
  t.run = std::move(*run);
  auto dag = trace::build_trace_dag(t.run);
  if (!dag.ok()) return dag.error();
  t.dag = std::move(*dag);
  if (o.has("--batch")) {
    t.batch = o.base.batch;
  } else if (t.run.manifest && t.run.manifest->config.count("batch") != 0) {
    const std::string& b = t.run.manifest->config.at("batch");
    char* end = nullptr;
    const long v = std::strtol(b.c_str(), &end, 10);
    if (b.empty() || *end != '\0' || v < 1 || v > 1'000'000'000) {
      return model::Error{"run '" + o.run +
                          "': manifest.json: config 'batch' is not a positive "
                          "integer ('" +
                          b + "')"};
    }
    t.batch = static_cast<int>(v);
  } else {
    return model::Error{"run '" + o.run +
                        "' does not record its batch size; give --batch "
                        "(samples per rank per iteration)"};
  }
  t.gpus_per_node = o.has("--gpus-per-node") ? o.grid.gpus_per_node
                                             : sim::run_topology(t.run, t.dag).gpus_per_node;
  return t;
}

// Keeps what is fixed across the sweep from one scenario's description.
reports::Scenario workload_of(const reports::Scenario& d, const reports::WhatifGrid& grid) {
  reports::Scenario w;
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

reports::Scenario run_workload(const WhatifOptions& o, const TracedRun& t) {
  reports::Scenario w;
  w.emplace_back("traced run", o.run + " (" + trace::run_source_name(t.run.source) + ")");
  w.emplace_back("ranks", std::to_string(t.dag.ranks));
  if (t.run.manifest) {
    const auto& m = *t.run.manifest;
    if (!m.model.empty()) w.emplace_back("model", m.model);
    for (const char* k : {"exchange", "overlap", "precision", "topk", "sync"}) {
      if (m.config.count(k) != 0) w.emplace_back(k, m.config.at(k));
    }
    if (m.iterations.mean_s > 0) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f ms", m.iterations.mean_s * 1e3);
      w.emplace_back("measured iteration", buf);
    }
  }
  w.emplace_back("batch per rank", std::to_string(t.batch));
  w.emplace_back("GPUs per node", std::to_string(t.gpus_per_node));
  w.emplace_back("compute", "as traced (replayed by 'dagsgd replay' on each target fabric)");
  return w;
}

int run_whatif(const WhatifOptions& o) {
  Ranks ranks;
  const bool root = ranks.rank() == 0;
  auto fail = [&](const std::string& msg, int code = kExitBadInput) {
    return ranks.agree(root ? report_error(msg, code) : code);
  };

  if (o.has("--network") == !o.run.empty()) {
    return fail(o.run.empty() ? "give a traced run directory (RUN) or --network"
                              : "give either a traced run directory or --network, not both");
  }
  auto catalog = model::HardwareCatalog::load_default();
  if (!catalog.ok()) return fail(catalog.error().message);
  if (!o.base.fabric_file.empty()) {
    auto added = catalog->add_fabric_file(o.base.fabric_file);
    if (!added.ok()) return fail(added.error().message);
  }
  for (const auto& [flag, name] :
       {std::pair<const char*, std::string>{"--intra", o.grid.default_intra},
        {"--inter", o.grid.default_inter}}) {
    auto f = catalog->fabric(name);
    if (!f.ok()) return fail(std::string(flag) + ": " + f.error().message);
  }
  reports::WhatifGrid grid = o.grid;
  std::optional<TracedRun> traced;
  if (!o.run.empty()) {
    auto t = load_traced_run(o);
    if (!t.ok()) return fail(t.error().message);
    traced = std::move(*t);
    const int run_ranks = traced->dag.ranks;
    if (o.has("--gpus") && (grid.gpus.size() != 1 || grid.gpus[0] != run_ranks)) {
      return fail("--gpus: a traced run replays its own " + std::to_string(run_ranks) +
                  " ranks; leave --gpus out or give " + std::to_string(run_ranks));
    }
    grid.gpus = {run_ranks};
    grid.gpus_per_node = traced->gpus_per_node;
  } else if (grid.gpus.empty()) {
    return fail("--gpus is required with --network");
  }
  auto scenarios = reports::expand_grid(grid, *catalog);
  if (!scenarios.ok()) return fail(scenarios.error().message);
  // Every scenario's flags are checked up front, so that a typo fails before a long sweep.
  reports::Scenario description;
  if (!traced) {
    for (std::size_t i = 0; i < scenarios->size(); ++i) {
      auto built = build_scenario(options_for(o, (*scenarios)[i]));
      if (!built.ok()) return fail(built.error().message);
      if (i == 0) description = built->description;
    }
  } else {
    for (const auto& a : grid.algorithms) {
      if (a == "auto") continue;
      const auto names = model::comm_algorithm_names();
      if (std::find(names.begin(), names.end(), a) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        return fail("--algorithms '" + a + "': unknown; valid: auto, " + list);
      }
    }
  }
  std::vector<bool> keep(scenarios->size(), false);
  for (std::size_t i : reports::timeline_scenarios(*scenarios)) keep[i] = true;

  namespace fs = std::filesystem;
  const fs::path dir(o.out);
  reports::PlotLibrary plots;
  if (root) {
    // Refuse before simulating anything: existing outputs and a missing plot library.
    std::vector<std::string> files = {"report.html", "report.md", "results.csv", "results.json"};
    for (std::size_t i = 0; i < keep.size(); ++i) {
      if (keep[i]) {
        files.push_back("timelines/" +
                        reports::timeline_file_name(reports::WhatifRow{(*scenarios)[i], {}}, i));
      }
    }
    int code = 0;
    if (!o.force) {
      for (const auto& f : files) {
        if (model::file_exists((dir / f).string())) {
          code = report_error("'" + (dir / f).string() + "' exists; use --force to overwrite");
          break;
        }
      }
    }
    if (code == 0) {
      auto lib = reports::load_plot_library();
      if (!lib.ok()) {
        code = report_error(lib.error().message, kExitFailure);
      } else {
        plots = std::move(*lib);
      }
    }
    if (code == 0) {
      std::error_code ec;
      fs::create_directories(dir / "timelines", ec);
      if (ec)
        code = report_error("cannot create '" + (dir / "timelines").string() + "': " + ec.message(),
                            kExitFailure);
    }
    if (ranks.agree(code) != 0) return code;
  } else if (ranks.agree(0) != 0) {
    return kExitBadInput;
  }

  SimulateFn simulate = [&](std::size_t i) {
    return traced ? replay_wire(*traced, *catalog, (*scenarios)[i], keep[i])
                  : spec_wire(o, (*scenarios)[i], keep[i]);
  };
  const std::string all = ranks.gather(run_share(scenarios->size(), simulate, ranks));
  if (!root) return kExitOk;

  reports::WhatifReport report;
  report.grid = grid;
  report.command = command_line(o, grid);
  if (traced) {
    report.workload = run_workload(o, *traced);
    report.title = "traced run " + o.run + ", " + std::to_string(traced->dag.ranks) + " ranks";
  } else {
    report.workload = workload_of(description, grid);
    report.title =
        o.base.network + ", " + std::to_string(o.base.batch) + " samples per GPU, " + o.base.gpu;
  }
  report.rows.resize(scenarios->size());
  std::vector<bool> seen(scenarios->size(), false);
  std::size_t pos = 0;
  while (pos < all.size()) {
    const std::size_t nl1 = all.find('\n', pos);
    const std::size_t nl2 = all.find('\n', nl1 + 1);
    const std::size_t index = std::stoul(all.substr(pos, nl1 - pos));
    const std::size_t len = std::stoul(all.substr(nl1 + 1, nl2 - nl1 - 1));
    const std::string wire = all.substr(nl2 + 1, len);
    pos = nl2 + 1 + len;
    const auto& sc = (*scenarios)[index];
    if (!wire.empty() && wire[0] == '!') {
      return report_error(reports::scenario_label(grid, sc) + ": " + wire.substr(1), kExitFailure);
    }
    // Serial runs take the same round trip as results from other ranks: identical bytes.
    auto r = reports::result_from_wire(wire);
    if (!r.ok()) return report_error(r.error().message, kExitFailure);
    report.rows[index] = {sc, std::move(*r)};
    seen[index] = true;
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) return report_error("scenario " + std::to_string(i) + " was not simulated", 1);
  }

  auto write = [&](const std::string& name, const std::string& content) -> bool {
    auto w = model::write_file((dir / name).string(), content, o.force);
    if (!w.ok()) report_error(w.error().message, kExitFailure);
    return w.ok();
  };
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    if (!keep[i]) continue;
    if (!write("timelines/" + reports::timeline_file_name(report.rows[i], i),
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
  std::printf(
      "whatif: %zu scenarios on %d rank%s; wrote %s/report.html, report.md, results.csv, "
      "results.json and %zu timelines\n",
      report.rows.size(), ranks.size(), ranks.size() == 1 ? "" : "s", o.out.c_str(),
      static_cast<std::size_t>(std::count(keep.begin(), keep.end(), true)));
  return kExitOk;
}

}  // namespace

void add_whatif(CLI::App& root, Action& action) {
  auto opts = std::make_shared<WhatifOptions>();
  CLI::App* sub = root.add_subcommand(
      "whatif",
      "Sweep one workload across fabrics, GPU counts and communication strategies and write\n"
      "a report (report.html, report.md, results.csv, results.json, timelines/) to --out.\n"
      "Every combination of the list options is one scenario. Under mpirun the scenarios are\n"
      "split across ranks and rank 0 writes the report.\n"
      "Example: dagsgd whatif --network resnet50 --batch 64 --gpu v100 \\\n"
      "  --fabrics pcie3,nvlink2,10gbe,100gbe,ib-edr --gpus 1,4,8,16,32,64 --gpus-per-node 4 \\\n"
      "  --out whatif-resnet50");
  ScenarioOptions& b = opts->base;
  reports::WhatifGrid& g = opts->grid;
  sub->add_option("run", opts->run,
                  "A traced run directory (dagsgd train/collect --trace, or Kineto traces) to "
                  "replay on each fabric, instead of --network");
  sub->add_option("--network", b.network,
                  "Bundled network name (alexnet, googlenet, resnet50, vgg16, bert-base, ...) or a "
                  "network definition file");
  sub->add_option("--batch", b.batch, "Samples per GPU per iteration")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--gpu", b.gpu, "GPU (or CPU node) from the catalog: k80, p100, v100, ...")
      ->capture_default_str();
  sub->add_option("--step-time", b.step_time,
                  "Measured single-GPU iteration time in seconds; layer times are scaled to it")
      ->check(CLI::PositiveNumber);
  sub->add_option("--layer-profile", b.layer_profile,
                  "Per-layer backward profile (B-Caffe log format) for the network's layers")
      ->check(CLI::ExistingFile);
  sub->add_option("--fabric-file", b.fabric_file,
                  "Extra fabric definitions (e.g. from 'dagsgd calibrate --out')")
      ->check(CLI::ExistingFile);
  sub->add_option("--fabrics", g.fabrics,
                  "Fabrics to compare, comma-separated: catalog names (an intra-node fabric "
                  "replaces --intra, an inter-node one --inter) or INTRA+INTER pairs")
      ->required()
      ->delimiter(',');
  sub->add_option("--gpus", g.gpus,
                  "GPU counts, comma-separated (e.g. 1,4,8,16,32,64); a traced run keeps its own")
      ->delimiter(',');
  sub->add_option("--gpus-per-node", g.gpus_per_node, "GPUs (workers) per node")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--intra", g.default_intra,
                  "Intra-node link for fabrics that only name the inter-node one")
      ->capture_default_str();
  sub->add_option("--inter", g.default_inter,
                  "Inter-node link for fabrics that only name the intra-node one")
      ->capture_default_str();
  sub->add_option("--algorithms", g.algorithms,
                  "Collective algorithms: ring, tree, recursive_doubling, rabenseifner, ps, asa, "
                  "hier, auto")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--overlap", g.overlaps, "Overlap policies: none, wfbp, mgwfbp, bucket:MB")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--precision", g.precisions, "Gradient precisions: fp32, fp16")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--topk", g.topks, "Fractions of gradient elements sent (0 = dense)")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--sync", b.sync, "bsp, or easgd:TAU,ALPHA")->capture_default_str();
  sub->add_option("--io-time", b.io_time, "Seconds to read one batch into host memory")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--prefetch", b.prefetch, "Overlap input loading: on, off")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  sub->add_option("--iterations", b.iterations, "Iterations to simulate (the last is reported)")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  sub->add_option("--out", opts->out, "Report directory")->required();
  sub->add_flag("--force", opts->force, "Overwrite existing report files");
  sub->callback([opts, sub, &action] {
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->count() > 0) opts->given.push_back(opt->get_name());
    }
    action = [opts] { return run_whatif(*opts); };
  });
}

}  // namespace dagsgd::tools
