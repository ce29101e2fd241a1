// A sweep's results gathered into a what-if report, and the report's files by name
// (whatif_report.h); the formats themselves are in whatif_tables.cc, whatif_html.cc and
// whatif_timelines.cc.
#include <algorithm>
#include <regex>
#include <utility>

#include "dagsgd/reports/whatif_report.h"

#include "dagsgd/model/io.h"

namespace dagsgd::reports {

WhatifReport whatif_report(const sim::Sweep& sweep, std::vector<sim::PredictResult> results,
                           const sim::Description& first, const std::string& run,
                           const sim::NetworkSpec& n) {
  WhatifReport report;
  report.grid = sweep.grid;
  if (!run.empty()) {
    report.title =
        "traced run " + run + ", " + std::to_string(sweep.points.front().gpus) + " ranks";
    report.workload = first;
  } else {
    report.title = n.network + ", " + std::to_string(n.batch) + " samples per GPU, " + n.gpu;
    for (const auto& [k, v] : first) {
      if (k == "network" || k == "batch per GPU" || k == "gpu" || k == "sync" || k == "prefetch" ||
          k == "compute") {
        report.workload.emplace_back(k, v);
      }
    }
    report.workload.emplace_back("GPUs per node", std::to_string(sweep.grid.gpus_per_node));
    report.workload.emplace_back("links not swept", "intra-node " + sweep.grid.default_intra +
                                                        ", inter-node " + sweep.grid.default_inter);
  }
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    report.rows.push_back({sweep.points[i], std::move(results[i])});
  }
  return report;
}

std::string whatif_progress(std::size_t done, std::size_t total) {
  constexpr std::size_t kWidth = 30;
  const std::size_t filled = done * kWidth / total;
  return "\rwhatif [" + std::string(filled, '#') + std::string(kWidth - filled, '.') + "] " +
         std::to_string(done) + "/" + std::to_string(total) + " scenarios" +
         (done == total ? "\n" : "");
}

std::string whatif_summary(const WhatifReport& report, int ranks, const std::string& dir) {
  std::size_t timelines = 0;
  for (const auto& row : report.rows) timelines += row.result.timeline.empty() ? 0 : 1;
  return "whatif: " + std::to_string(report.rows.size()) + " scenarios on " +
         std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") + "; wrote " + dir +
         "/report.html, report.md, results.csv, results.json and " + std::to_string(timelines) +
         " timelines\n";
}

std::vector<std::string> whatif_file_names(const sim::Sweep& sweep) {
  std::vector<std::string> files = {"report.html", "report.md", "results.csv", "results.json"};
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    if (sweep.keep_timeline[i]) {
      files.push_back("timelines/" + timeline_file_name(sweep.points[i], i));
    }
  }
  return files;
}

void remove_stale_timelines(const std::string& dir, const WhatifReport& report) {
  std::vector<std::string> keep;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    if (!report.rows[i].result.timeline.empty()) {
      keep.push_back(timeline_file_name(report.rows[i].scenario, i));
    }
  }
  model::remove_stale_outputs(dir, "timelines", is_timeline_file_name, keep);
}

bool is_timeline_file_name(const std::string& name) {
  // <index>-<fabric>-<gpus>gpus.trace.json, as timeline_file_name writes them.
  static const std::regex kName(R"(\d+-[A-Za-z0-9._+-]+-\d+gpus\.trace\.json)");
  return std::regex_match(name, kName);
}

std::vector<std::pair<std::string, std::string>> whatif_files(const WhatifReport& report,
                                                              const PlotLibrary& plots) {
  std::vector<std::pair<std::string, std::string>> files;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    if (report.rows[i].result.timeline.empty()) continue;
    files.emplace_back("timelines/" + timeline_file_name(report.rows[i].scenario, i),
                       timeline_trace(report, report.rows[i]));
  }
  files.emplace_back("results.csv", whatif_csv(report));
  files.emplace_back("results.json", whatif_json(report));
  files.emplace_back("report.md", whatif_markdown(report));
  files.emplace_back("report.html", whatif_html(report, plots));
  return files;
}

}  // namespace dagsgd::reports
