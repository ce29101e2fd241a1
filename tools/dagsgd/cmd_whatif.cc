// dagsgd whatif: one workload swept across fabrics, GPU counts and communication strategies,
// written as a report (HTML, Markdown, CSV, JSON, timelines); scenarios split across MPI ranks.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
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
#include "scenario_options.h"

namespace dagsgd::tools {

namespace {

struct WhatifOptions {
  ScenarioOptions base;  // network, batch, gpu, step time, ...; the swept fields are overridden
  reports::WhatifGrid grid;
  std::string out;
  bool force = false;
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

std::string command_line(const WhatifOptions& o) {
  const auto& b = o.base;
  const auto& g = o.grid;
  std::string c = "dagsgd whatif --network " + b.network + " --batch " + std::to_string(b.batch) +
                  " --gpu " + b.gpu;
  if (b.step_time > 0) c += " --step-time " + join(std::vector<double>{b.step_time});
  if (!b.layer_profile.empty()) c += " --layer-profile " + b.layer_profile;
  if (!b.fabric_file.empty()) c += " --fabric-file " + b.fabric_file;
  if (b.io_time > 0) c += " --io-time " + join(std::vector<double>{b.io_time});
  if (b.prefetch != "on") c += " --prefetch " + b.prefetch;
  if (b.sync != "bsp") c += " --sync " + b.sync;
  c += " --fabrics " + join(g.fabrics) + " --gpus " + join(g.gpus) + " --gpus-per-node " +
       std::to_string(g.gpus_per_node) + " --intra " + g.default_intra + " --inter " +
       g.default_inter + " --algorithms " + join(g.algorithms) + " --overlap " + join(g.overlaps) +
       " --precision " + join(g.precisions) + " --topk " + join(g.topks);
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

// Runs this rank's share: "index\nlength\nwire" records, where a wire starting with '!' is an
// error message.
std::string run_share(const WhatifOptions& o, const std::vector<reports::WhatifScenario>& all,
                      const std::vector<bool>& keep_timeline, const Ranks& ranks) {
  std::size_t mine = 0;
  for (std::size_t i = 0; i < all.size(); ++i)
    mine += (i % static_cast<std::size_t>(ranks.size()) == static_cast<std::size_t>(ranks.rank()));
  Progress progress(mine, ranks.rank() == 0 && all.size() > 4 && ::isatty(STDERR_FILENO) == 1);
  std::string out;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i % static_cast<std::size_t>(ranks.size()) != static_cast<std::size_t>(ranks.rank())) {
      continue;
    }
    std::string wire;
    auto built = build_scenario(options_for(o, all[i]));
    if (!built.ok()) {
      wire = "!" + built.error().message;
    } else {
      built->request.keep_timeline = keep_timeline[i];
      auto r = sim::predict(built->request);
      wire = r.ok() ? reports::result_to_wire(*r) : "!" + r.error().message;
    }
    out += std::to_string(i) + "\n" + std::to_string(wire.size()) + "\n" + wire;
    progress.step();
  }
  return out;
}

// Keeps what is fixed across the sweep from one scenario's description.
reports::Scenario workload_of(const reports::Scenario& d, const WhatifOptions& o) {
  reports::Scenario w;
  for (const auto& [k, v] : d) {
    if (k == "network" || k == "batch per GPU" || k == "gpu" || k == "sync" || k == "prefetch" ||
        k == "compute") {
      w.emplace_back(k, v);
    }
  }
  w.emplace_back("GPUs per node", std::to_string(o.grid.gpus_per_node));
  w.emplace_back("links not swept",
                 "intra-node " + o.grid.default_intra + ", inter-node " + o.grid.default_inter);
  return w;
}

int run_whatif(const WhatifOptions& o) {
  Ranks ranks;
  const bool root = ranks.rank() == 0;
  auto fail = [&](const std::string& msg, int code = kExitBadInput) {
    return ranks.agree(root ? report_error(msg, code) : code);
  };

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
  auto scenarios = reports::expand_grid(o.grid, *catalog);
  if (!scenarios.ok()) return fail(scenarios.error().message);
  // Every scenario's flags are checked up front, so that a typo fails before a long sweep.
  reports::Scenario description;
  for (std::size_t i = 0; i < scenarios->size(); ++i) {
    auto built = build_scenario(options_for(o, (*scenarios)[i]));
    if (!built.ok()) return fail(built.error().message);
    if (i == 0) description = built->description;
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

  const std::string all = ranks.gather(run_share(o, *scenarios, keep, ranks));
  if (!root) return kExitOk;

  reports::WhatifReport report;
  report.grid = o.grid;
  report.command = command_line(o);
  report.workload = workload_of(description, o);
  report.title =
      o.base.network + ", " + std::to_string(o.base.batch) + " samples per GPU, " + o.base.gpu;
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
      return report_error(reports::scenario_label(o.grid, sc) + ": " + wire.substr(1),
                          kExitFailure);
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
  sub->add_option("--network", b.network,
                  "Bundled network name (alexnet, googlenet, resnet50, vgg16, bert-base, ...) or a "
                  "network definition file")
      ->required();
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
  sub->add_option("--gpus", g.gpus, "GPU counts, comma-separated (e.g. 1,4,8,16,32,64)")
      ->required()
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
  sub->callback([opts, &action] { action = [opts] { return run_whatif(*opts); }; });
}

}  // namespace dagsgd::tools
