// What-if sweeps: the grid of scenarios (fabrics x GPU counts x strategies), their predicted
// results, and the report files people and scripts read (HTML, Markdown, CSV, JSON, timelines).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/reports/predict_report.h"
#include "dagsgd/sim/predict.h"

namespace dagsgd::trace {
struct TraceDag;
}
namespace dagsgd::sim {
struct ReplayResult;
}

namespace dagsgd::reports {

// What the user asked to sweep. Each fabric is a catalog name or an explicit INTRA+INTER pair;
// a name of scope "intra" replaces the intra-node link (the inter-node one is default_inter),
// a name of scope "inter" replaces the inter-node link, a name of scope "both" is used for both.
struct WhatifGrid {
  std::vector<std::string> fabrics;
  std::vector<int> gpus;
  int gpus_per_node = 1;
  std::string default_intra = "pcie3";
  std::string default_inter = "10gbe";
  std::vector<std::string> algorithms{"auto"};
  std::vector<std::string> overlaps{"wfbp"};
  std::vector<std::string> precisions{"fp32"};
  std::vector<double> topks{0};
};

struct WhatifScenario {
  std::string fabric;  // as the user named it
  std::string intra;
  std::string inter;
  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  std::string algorithm = "auto";
  std::string overlap = "wfbp";
  std::string precision = "fp32";
  double topk = 0;
};

// The swept dimensions other than fabric and GPU count that have more than one value, e.g.
// "ring, fp16"; empty when only fabric and GPU count vary.
std::string variant_label(const WhatifGrid& grid, const WhatifScenario& s);
// "10gbe, 32 GPUs" plus the variant, for sentences and axis labels.
std::string scenario_label(const WhatifGrid& grid, const WhatifScenario& s);

// Every combination, in a fixed order (fabric, GPU count, algorithm, overlap, precision, top-k).
// A GPU count above gpus_per_node must be a multiple of it; fabric names are checked against
// the catalog (unknown names list the valid ones).
model::Expected<std::vector<WhatifScenario>> expand_grid(const WhatifGrid& grid,
                                                         const model::HardwareCatalog& catalog);

// Scenarios whose simulated iteration is kept as a timeline: per fabric, the largest GPU count
// with the first value of every other dimension.
std::vector<std::size_t> timeline_scenarios(const std::vector<WhatifScenario>& scenarios);

struct WhatifRow {
  WhatifScenario scenario;
  sim::PredictResult result;  // timeline filled for the timeline scenarios only
};

struct WhatifReport {
  std::string title;    // "resnet50, 64 samples per GPU, v100"
  Scenario workload;    // what stays fixed across the sweep
  std::string command;  // a command line that reproduces the sweep (without --out)
  WhatifGrid grid;
  std::vector<WhatifRow> rows;  // in expand_grid order
};

// results.csv: one header line, one line per scenario; times in seconds.
std::string whatif_csv(const WhatifReport& report);
// results.json: {"workload", "command", "scenarios": [...]}; deterministic bytes.
std::string whatif_json(const WhatifReport& report);
// report.md: summary, the table and the bottleneck of every scenario.
std::string whatif_markdown(const WhatifReport& report);

// The minified JavaScript of vega, vega-lite and vega-embed, inlined into report.html so that it
// opens offline.
struct PlotLibrary {
  std::string vega;
  std::string vega_lite;
  std::string vega_embed;
};
// From $DAGSGD_NODE_MODULES, else the node_modules/ beside the data directory (what tools/setup
// installs); the error names the missing file and how to install it.
model::Expected<PlotLibrary> load_plot_library();

// report.html: self-contained, with Vega-Lite plots (throughput and efficiency against GPU
// count per fabric, breakdown bars per scenario, one iteration's timeline per fabric).
std::string whatif_html(const WhatifReport& report, const PlotLibrary& plots);

// File name (under timelines/) and content (Chrome/Kineto trace JSON that Perfetto opens) of
// the simulated iteration of row `index`.
std::string timeline_file_name(const WhatifRow& row, std::size_t index);
std::string timeline_trace(const WhatifReport& report, const WhatifRow& row);

// A traced run replayed on one target fabric (sim::replay_trace), in the terms of a prediction so
// that it fits the same report: the iteration is the replay's mean after warm-up; compute (traces
// do not always split forward from backward) goes to breakdown.forward, device copies to h2d,
// host work and idle time to idle; the one-GPU reference is the replay with free communication
// (weak scaling, compute unchanged). `batch` is per rank. With `keep_timeline`, the last
// simulated iteration becomes the timeline.
sim::PredictResult replay_as_prediction(const trace::TraceDag& tdag, const sim::ReplayResult& r,
                                        int batch, bool keep_timeline);

// A result as JSON that reads back to the same values (integers exact, doubles round-trip), so
// that rows computed on other MPI ranks give the same report bytes.
std::string result_to_wire(const sim::PredictResult& r);
model::Expected<sim::PredictResult> result_from_wire(const std::string& text);

}  // namespace dagsgd::reports
