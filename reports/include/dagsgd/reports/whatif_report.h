// What-if reports: a sweep's results as the files people and scripts read (HTML, Markdown, CSV,
// JSON, timelines). The sweep itself is sim's (dagsgd/sim/sweep.h); this only formats.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/scenario.h"
#include "dagsgd/sim/sweep.h"

namespace dagsgd::reports {

struct WhatifRow {
  sim::SweepPoint scenario;
  sim::PredictResult result;  // timeline filled for the timeline points only
};

struct WhatifReport {
  std::string title;          // "resnet50, 64 samples per GPU, v100"
  sim::Description workload;  // what stays fixed across the sweep
  std::string command;        // the command that ran the sweep (without --out and --force)
  sim::SweepGrid grid;
  std::vector<WhatifRow> rows;  // in sweep order
};

// A sweep's report (without its command line): its rows in sweep order, the title and what stays
// fixed, for the traced run in directory `run` (the first scenario's whole description `first`)
// or, when `run` is empty, for `network` (its entries of `first`, the GPUs per node and the links
// that were not swept).
WhatifReport whatif_report(const sim::Sweep& sweep, std::vector<sim::PredictResult> results,
                           const sim::Description& first, const std::string& run,
                           const sim::NetworkSpec& network);
// A terminal progress line: "\rwhatif [####......] 12/30 scenarios", and a newline when done.
std::string whatif_progress(std::size_t done, std::size_t total);
// The line that says what was written: "whatif: 30 scenarios on 1 rank; wrote DIR/report.html,
// ...".
std::string whatif_summary(const WhatifReport& report, int ranks, const std::string& dir);

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
std::string timeline_file_name(const sim::SweepPoint& point, std::size_t index);
std::string timeline_trace(const WhatifReport& report, const WhatifRow& row);

// The report's files, named relative to the report directory: report.html, report.md,
// results.csv, results.json and timelines/<timeline_file_name> for the points that keep one;
// known before the sweep runs, so that existing ones can be refused before anything is simulated.
std::vector<std::string> whatif_file_names(const sim::Sweep& sweep);
// With --force, the timelines of an earlier sweep in `dir`/timelines that `report` does not
// write: left there, the folder would mix two sweeps. Only files named as timeline_file_name
// names them are removed, and nothing when `dir`/timelines is a link (model::remove_stale_outputs).
void remove_stale_timelines(const std::string& dir, const WhatifReport& report);
// Whether `name` is one timeline_file_name could have written.
bool is_timeline_file_name(const std::string& name);
// The same files with their content, the timelines first.
std::vector<std::pair<std::string, std::string>> whatif_files(const WhatifReport& report,
                                                              const PlotLibrary& plots);

}  // namespace dagsgd::reports
