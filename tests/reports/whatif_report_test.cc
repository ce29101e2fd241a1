// The what-if report files: CSV, JSON, Markdown, HTML and timelines of a sweep's results.
#include <gtest/gtest.h>

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

WhatifReport small_report() {
  WhatifReport rep;
  rep.grid = small_grid();
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

}  // namespace
}  // namespace dagsgd::reports
