// The what-if report files: CSV, JSON, Markdown, HTML and timelines of a sweep's results.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/sweep_fixtures.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/reports/whatif_report.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/sweep.h"

namespace dagsgd::reports {
namespace {

const model::HardwareCatalog& catalog() { return testing::bundled_catalogs().hardware; }

using testing::small_grid;

// A real prediction of a small three-layer job, so that the rows carry simulated numbers.
sim::PredictResult predict_small(const sim::SweepPoint& s, bool timeline) {
  sim::PredictRequest r;
  r.layers = {{model::from_micros(300), model::from_micros(600), 2'000'000},
              {model::from_micros(200), model::from_micros(400), 500'000},
              {model::from_micros(100), model::from_micros(200), 10'000}};
  r.batch = 32;
  r.update = model::from_micros(50);
  r.topology.nodes = s.nodes;
  r.topology.gpus_per_node = s.gpus_per_node;
  const auto& cat = catalog();
  r.topology.intra = model::LinkCost::from_fabric(*cat.fabric(s.intra));
  r.topology.inter = model::LinkCost::from_fabric(*cat.fabric(s.inter));
  r.exchange.algorithm = s.algorithm;
  r.exchange.precision = *model::parse_precision(s.precision);
  r.overlap = *model::parse_overlap(s.overlap);
  r.keep_timeline = timeline;
  auto out = sim::predict(r);
  EXPECT_TRUE(out.ok()) << out.error().message;
  return *out;
}

WhatifReport small_report(const sim::SweepGrid& grid = small_grid()) {
  WhatifReport rep;
  rep.grid = grid;
  rep.title = "three layers, 32 samples per GPU, v100";
  rep.workload = {{"network", "three layers"}, {"batch per GPU", "32"}};
  rep.command = "dagsgd whatif ...";
  auto scenarios = sim::expand_grid(rep.grid, catalog());
  EXPECT_TRUE(scenarios.ok());
  std::vector<bool> keep(scenarios->size(), false);
  for (std::size_t i : sim::timeline_points(*scenarios)) keep[i] = true;
  for (std::size_t i = 0; i < scenarios->size(); ++i) {
    rep.rows.push_back({(*scenarios)[i], predict_small((*scenarios)[i], keep[i])});
  }
  return rep;
}

TEST(WhatifReportFiles, CsvAndJsonCarryEveryScenario) {
  const auto rep = small_report();
  const std::string csv = whatif_csv(rep);
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, rep.rows.size() + 1);
  EXPECT_EQ(csv.rfind("scenario,fabric,intra,inter,gpus,", 0), 0u);
  auto j = nlohmann::json::parse(whatif_json(rep));
  ASSERT_EQ(j["scenarios"].size(), rep.rows.size());
  for (std::size_t i = 0; i < rep.rows.size(); ++i) {
    const auto& s = j["scenarios"][i];
    const auto& r = rep.rows[i].result;
    EXPECT_DOUBLE_EQ(s["iteration_time_s"].get<double>(), model::to_seconds(r.iteration));
    EXPECT_NEAR(s["throughput_samples_per_s"].get<double>(),
                32.0 * rep.rows[i].scenario.gpus / model::to_seconds(r.iteration), 1e-3);
    EXPECT_TRUE(s.contains("critical_path"));
    EXPECT_TRUE(s["breakdown"].contains("comm_overlapped"));
    EXPECT_EQ(s.contains("timeline"), !r.timeline.empty());
  }
  // The same report gives the same bytes.
  EXPECT_EQ(whatif_json(rep), whatif_json(small_report()));
  const std::string md = whatif_markdown(rep);
  EXPECT_NE(md.find("## Summary"), std::string::npos);
  EXPECT_NE(md.find("10gbe, 8 GPUs, fp32"), std::string::npos);
}

TEST(WhatifReportFiles, HtmlInlinesThePlotLibraryAndNeedsNoNetwork) {
  const auto rep = small_report();
  PlotLibrary lib{"var vega = {}; /* </script> inside */", "var vegaLite = {};",
                  "var vegaEmbed = function () {};"};
  const std::string h = whatif_html(rep, lib);
  EXPECT_NE(h.find("var vegaLite = {};"), std::string::npos);
  EXPECT_NE(h.find("<\\/script> inside"), std::string::npos) << "the library cannot close <script>";
  EXPECT_EQ(h.find("src=\"http"), std::string::npos);
  EXPECT_EQ(h.find("href=\"http"), std::string::npos);
  for (const char* id : {"throughput", "efficiency", "breakdown", "timeline"}) {
    EXPECT_NE(h.find(std::string("<div id=\"") + id + "\">"), std::string::npos) << id;
  }
}

// The JSON after `const NAME = ` in report.html.
nlohmann::json script_json(const std::string& html, const std::string& name) {
  const std::string start = "const " + name + " = ";
  const auto a = html.find(start);
  if (a == std::string::npos) return nullptr;
  const auto b = html.find(";\n", a);
  return nlohmann::json::parse(html.substr(a + start.size(), b - a - start.size()));
}

TEST(WhatifReportFiles, SweepOfOnlyFabricsAndGpuCountsKeepsItsReport) {
  sim::SweepGrid g = small_grid();
  g.precisions = {"fp32"};
  const auto rep = small_report(g);
  const std::string h = whatif_html(rep, PlotLibrary{});
  EXPECT_EQ(h.find("pick_"), std::string::npos);
  EXPECT_EQ(h.find("<details>"), std::string::npos);
  EXPECT_EQ(h.find("<div id=\"best\">"), std::string::npos);
  EXPECT_TRUE(script_json(h, "data").is_null());
  const auto specs = script_json(h, "specs");
  EXPECT_EQ(specs["throughput"]["data"]["values"].size(), rep.rows.size());
  EXPECT_FALSE(specs.contains("best"));
}

// A sweep over algorithms and precisions too: the plots show one configuration, chosen in the
// page; the best configuration per fabric and GPU count is a plot and a table.
TEST(WhatifReportFiles, LargerSweepIsShownOneConfigurationAtATime) {
  sim::SweepGrid g = small_grid();
  g.algorithms = {"ring", "tree"};
  const auto rep = small_report(g);
  const std::string h = whatif_html(rep, PlotLibrary{});
  for (const char* control : {"pick_algorithm", "pick_precision", "pick_fabric"}) {
    EXPECT_NE(h.find(std::string("<select data-param=\"") + control + "\">"), std::string::npos)
        << control;
  }
  EXPECT_EQ(h.find("pick_overlap"), std::string::npos) << "one overlap: nothing to choose";
  const auto specs = script_json(h, "specs");
  const auto data = script_json(h, "data");
  ASSERT_FALSE(data.is_null());
  EXPECT_EQ(data["rows"].size(), rep.rows.size());
  const std::string chosen =
      "datum.algorithm == pick_algorithm && datum.precision == pick_precision";
  for (const char* id : {"throughput", "efficiency"}) {
    EXPECT_EQ(specs[id]["transform"][0]["filter"], chosen) << id;
    EXPECT_EQ(specs[id]["data"]["name"], "rows");
  }
  // The breakdown's parts name their row; the configuration is looked up there.
  const auto& breakdown = specs["breakdown"];
  EXPECT_EQ(breakdown["data"]["name"], "parts");
  EXPECT_EQ(breakdown["transform"][0]["lookup"], "index");
  EXPECT_EQ(breakdown["transform"][1]["filter"], chosen);
  for (const auto& row : data["rows"]) {
    ASSERT_TRUE(row.contains("fabric") && row.contains("algorithm") && row.contains("precision"));
  }
  for (const auto& p : data["parts"]) ASSERT_LT(p["index"].get<std::size_t>(), rep.rows.size());
  // The best configuration of every fabric and GPU count, as a plot and as a table cell.
  std::map<std::pair<std::string, int>, std::size_t> best;
  for (std::size_t i = 0; i < rep.rows.size(); ++i) {
    const auto key = std::make_pair(rep.rows[i].scenario.fabric, rep.rows[i].scenario.gpus);
    auto it = best.find(key);
    if (it == best.end() ||
        rep.rows[i].result.throughput > rep.rows[it->second].result.throughput) {
      best[key] = i;
    }
  }
  ASSERT_EQ(data["best"].size(), best.size());
  std::map<std::string, std::pair<int, std::size_t>> wins;  // count, first row
  for (const auto& b : data["best"]) {
    const std::size_t i = best.at({b["fabric"].get<std::string>(), b["gpus"].get<int>()});
    EXPECT_EQ(b["index"], i);
    EXPECT_EQ(b["variant"], sim::variant_label(rep.grid, rep.rows[i].scenario));
    EXPECT_NE(h.find("<small>" + b["variant"].get<std::string>() + "</small>"), std::string::npos);
    auto [it, fresh] = wins.emplace(b["variant"].get<std::string>(), std::make_pair(0, i));
    it->second.first++;
    it->second.second = std::min(it->second.second, i);
  }
  // First shown: the configuration that is best most often (the earliest on a tie).
  std::string top;
  for (const auto& [variant, w] : wins) {
    if (top.empty() || w.first > wins[top].first ||
        (w.first == wins[top].first && w.second < wins[top].second)) {
      top = variant;
    }
  }
  const std::string algorithm = top.substr(0, top.find(','));
  EXPECT_EQ(specs["throughput"]["params"][0]["value"], algorithm);
  EXPECT_NE(h.find("<option value=\"" + algorithm + "\" selected>"), std::string::npos);
}

TEST(WhatifReportFiles, TimelineIsAChromeTrace) {
  const auto rep = small_report();
  std::size_t checked = 0;
  for (std::size_t i = 0; i < rep.rows.size(); ++i) {
    const auto& row = rep.rows[i];
    if (row.result.timeline.empty()) continue;
    auto j = nlohmann::json::parse(timeline_trace(rep, row));
    std::size_t spans = 0;
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] == "X") {
        ++spans;
        EXPECT_GE(e["dur"].get<double>(), 0);
      }
    }
    EXPECT_EQ(spans, row.result.timeline.size());
    EXPECT_EQ(timeline_file_name(row.scenario, i).find('/'), std::string::npos);
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

// The report of a sweep: its title, what stays fixed, its files (known before the sweep runs) and
// the command line that reproduces it.
TEST(WhatifReportFiles, ReportOfASweepNamesItsFilesBeforeItRuns) {
  sim::Sweep sweep;
  sweep.grid = small_grid();
  auto points = sim::expand_grid(sweep.grid, catalog());
  ASSERT_TRUE(points.ok());
  sweep.points = *points;
  sweep.keep_timeline.assign(sweep.points.size(), false);
  for (std::size_t i : sim::timeline_points(sweep.points)) sweep.keep_timeline[i] = true;
  std::vector<sim::PredictResult> results;
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    results.push_back(predict_small(sweep.points[i], sweep.keep_timeline[i]));
  }
  sim::NetworkSpec n;
  n.network = "three";
  n.batch = 32;
  n.gpu = "v100";
  const sim::Description first = {{"network", "three"}, {"fabric", "pcie3"}, {"gpu", "v100"}};
  auto rep = whatif_report(sweep, results, first, "", n);
  EXPECT_EQ(rep.title, "three, 32 samples per GPU, v100");
  ASSERT_EQ(rep.workload.size(), 4u);  // the spec's entries, GPUs per node, links not swept
  EXPECT_EQ(rep.workload[1].first, "gpu");
  EXPECT_EQ(rep.workload[3].second, "intra-node pcie3, inter-node 10gbe");
  ASSERT_EQ(rep.rows.size(), sweep.points.size());

  std::vector<std::string> written;
  for (const auto& [name, bytes] : whatif_files(rep, PlotLibrary{})) {
    written.push_back(name);
    EXPECT_FALSE(bytes.empty()) << name;
  }
  std::vector<std::string> named = whatif_file_names(sweep);
  std::sort(written.begin(), written.end());
  std::sort(named.begin(), named.end());
  EXPECT_EQ(written, named);
  EXPECT_EQ(named.size(), 4u + 3u);  // report.html, .md, results.csv, .json; a timeline a fabric
  EXPECT_EQ(whatif_summary(rep, 1, "out"),
            "whatif: 18 scenarios on 1 rank; wrote out/report.html, report.md, results.csv, "
            "results.json and 3 timelines\n");

  EXPECT_EQ(whatif_progress(10, 30), "\rwhatif [##########....................] 10/30 scenarios");
  EXPECT_EQ(whatif_progress(30, 30).back(), '\n');

  rep = whatif_report(sweep, results, first, "runs/a", n);
  EXPECT_EQ(rep.title, "traced run runs/a, 1 ranks");
  EXPECT_EQ(rep.workload, first);
}

}  // namespace
}  // namespace dagsgd::reports
