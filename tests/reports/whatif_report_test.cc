// The what-if sweep library: grid expansion, timelines, the wire round trip and the report files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dagsgd/model/hardware.h"
#include "dagsgd/reports/whatif_report.h"
#include "dagsgd/sim/predict.h"

namespace dagsgd::reports {
namespace {

model::HardwareCatalog catalog() {
  auto c = model::HardwareCatalog::load_default();
  EXPECT_TRUE(c.ok()) << c.error().message;
  return *c;
}

WhatifGrid small_grid() {
  WhatifGrid g;
  g.fabrics = {"pcie3", "nvlink2+ib-edr", "10gbe"};
  g.gpus = {1, 4, 8};
  g.gpus_per_node = 4;
  g.default_intra = "pcie3";
  g.default_inter = "10gbe";
  g.precisions = {"fp32", "fp16"};
  return g;
}

// A real prediction of a small three-layer job, so that the rows carry simulated numbers.
sim::PredictResult predict_small(const WhatifScenario& s, bool timeline) {
  sim::PredictRequest r;
  r.layers = {{model::from_micros(300), model::from_micros(600), 2'000'000},
              {model::from_micros(200), model::from_micros(400), 500'000},
              {model::from_micros(100), model::from_micros(200), 10'000}};
  r.batch = 32;
  r.update = model::from_micros(50);
  r.topology.nodes = s.nodes;
  r.topology.gpus_per_node = s.gpus_per_node;
  auto cat = catalog();
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
  auto scenarios = expand_grid(rep.grid, catalog());
  EXPECT_TRUE(scenarios.ok());
  std::vector<bool> keep(scenarios->size(), false);
  for (std::size_t i : timeline_scenarios(*scenarios)) keep[i] = true;
  for (std::size_t i = 0; i < scenarios->size(); ++i) {
    rep.rows.push_back({(*scenarios)[i], predict_small((*scenarios)[i], keep[i])});
  }
  return rep;
}

TEST(WhatifGrid, EveryCombinationInOrderWithFabricScopes) {
  auto s = expand_grid(small_grid(), catalog());
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->size(), 3u * 3u * 2u);
  // An intra-node fabric replaces the intra link, an inter-node one the inter link.
  EXPECT_EQ((*s)[0].intra, "pcie3");
  EXPECT_EQ((*s)[0].inter, "10gbe");
  EXPECT_EQ((*s)[6].intra, "nvlink2");
  EXPECT_EQ((*s)[6].inter, "ib-edr");
  EXPECT_EQ((*s)[12].fabric, "10gbe");
  EXPECT_EQ((*s)[12].intra, "pcie3");
  // Precision varies fastest; GPU counts fill nodes of 4.
  EXPECT_EQ((*s)[0].precision, "fp32");
  EXPECT_EQ((*s)[1].precision, "fp16");
  EXPECT_EQ((*s)[4].gpus, 8);
  EXPECT_EQ((*s)[4].nodes, 2);
  EXPECT_EQ((*s)[4].gpus_per_node, 4);
  EXPECT_EQ((*s)[0].nodes, 1);
  EXPECT_EQ((*s)[0].gpus_per_node, 1);
  EXPECT_EQ(scenario_label(small_grid(), (*s)[5]), "pcie3, 8 GPUs, fp16");
}

TEST(WhatifGrid, BadInputIsNamed) {
  auto g = small_grid();
  g.fabrics = {"pcie3", "warp-drive"};
  auto s = expand_grid(g, catalog());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("warp-drive"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("ib-edr"), std::string::npos) << "valid names listed";
  g = small_grid();
  g.gpus = {1, 6};
  s = expand_grid(g, catalog());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("6 GPUs"), std::string::npos) << s.error().message;
  g = small_grid();
  g.topks = {1.5};
  EXPECT_FALSE(expand_grid(g, catalog()).ok());
}

TEST(WhatifGrid, TimelinePerFabricAtTheLargestGpuCount) {
  auto s = expand_grid(small_grid(), catalog());
  ASSERT_TRUE(s.ok());
  auto t = timeline_scenarios(*s);
  ASSERT_EQ(t.size(), 3u);
  for (std::size_t k = 0; k < t.size(); ++k) {
    EXPECT_EQ((*s)[t[k]].gpus, 8);
    EXPECT_EQ((*s)[t[k]].precision, "fp32");
    EXPECT_EQ((*s)[t[k]].fabric, small_grid().fabrics[k]);
  }
}

TEST(WhatifWire, ResultsReadBackExactly) {
  WhatifScenario sc;
  sc.intra = "pcie3";
  sc.inter = "10gbe";
  sc.nodes = 2;
  sc.gpus_per_node = 4;
  sc.gpus = 8;
  const auto r = predict_small(sc, true);
  ASSERT_FALSE(r.timeline.empty());
  auto back = result_from_wire(result_to_wire(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->iteration, r.iteration);
  EXPECT_EQ(back->throughput, r.throughput);  // bit-exact doubles
  EXPECT_EQ(back->efficiency, r.efficiency);
  EXPECT_EQ(back->speedup, r.speedup);
  EXPECT_EQ(back->bottleneck, r.bottleneck);
  EXPECT_EQ(back->breakdown.comm_exposed, r.breakdown.comm_exposed);
  ASSERT_EQ(back->timeline.size(), r.timeline.size());
  EXPECT_EQ(back->timeline.back().start, r.timeline.back().start);
  EXPECT_EQ(result_to_wire(*back), result_to_wire(r));
  EXPECT_FALSE(result_from_wire("{\"workers\": 1}").ok());
  EXPECT_FALSE(result_from_wire("not json").ok());
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
    EXPECT_EQ(timeline_file_name(row, i).find('/'), std::string::npos);
    ++checked;
  }
  EXPECT_EQ(checked, 3u);
}

}  // namespace
}  // namespace dagsgd::reports
