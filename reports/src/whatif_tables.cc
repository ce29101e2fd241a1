// What-if report tables: results.csv, results.json and report.md (and the escaping helpers the
// HTML shares).
#include <nlohmann/json.hpp>

#include "dagsgd/model/format.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/reports/whatif_report.h"
#include "links_json.h"
#include "whatif_common.h"

namespace dagsgd::reports {

using model::fmt;
using model::Nanos;
using model::num;
using Json = nlohmann::ordered_json;
using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

namespace detail {

std::vector<std::size_t> link_view_rows(const WhatifReport& report) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const auto& r = report.rows[i].result;
    if (r.network_model == "flow" && !r.timeline.empty() && !r.busiest_links.empty()) {
      out.push_back(i);
    }
  }
  return out;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// CSV and JSON

std::string whatif_csv(const WhatifReport& report) {
  std::string out =
      "scenario,fabric,intra,inter,gpus,nodes,gpus_per_node,algorithm,algorithm_used,overlap,"
      "precision,topk,iteration_time_s,throughput_samples_per_s,speedup,efficiency,"
      "single_gpu_iteration_time_s,compute_s,comm_total_s,comm_exposed_s,comm_overlapped_s,"
      "io_s,h2d_s,update_s,idle_s,comm_free_iteration_time_s,double_bandwidth_iteration_time_s,"
      "bound,bottleneck\n";
  auto s9 = [](Nanos t) { return fmt("%.9f", model::to_seconds(t)); };
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const auto& sc = report.rows[i].scenario;
    const auto& r = report.rows[i].result;
    const auto& b = r.breakdown;
    const Parts p = parts_of(r);
    std::vector<std::string> f = {
        std::to_string(i),
        csv_field(sc.fabric),
        sc.intra,
        sc.inter,
        std::to_string(sc.gpus),
        std::to_string(sc.nodes),
        std::to_string(sc.gpus_per_node),
        sc.algorithm,
        r.algorithm,
        sc.overlap,
        sc.precision,
        num(sc.topk),
        s9(r.iteration),
        fmt("%.3f", r.throughput),
        fmt("%.6f", r.speedup),
        fmt("%.6f", r.efficiency),
        s9(r.single_gpu_iteration),
        s9(p.compute),
        s9(b.comm_total),
        s9(b.comm_exposed),
        s9(p.comm_overlapped),
        s9(b.io),
        s9(b.h2d),
        s9(b.update),
        s9(b.idle),
        s9(r.if_comm_free),
        s9(r.if_double_bandwidth),
        r.bound,
        csv_field(sim::point_label(report.grid, sc) + ": " + r.bottleneck)};
    for (std::size_t k = 0; k < f.size(); ++k) out += (k ? "," : "") + f[k];
    out += "\n";
  }
  return out;
}

namespace {

Json scenario_json(const WhatifReport& report, std::size_t i) {
  const auto& sc = report.rows[i].scenario;
  const auto& r = report.rows[i].result;
  const auto& b = r.breakdown;
  const Parts p = parts_of(r);
  auto secs = [](Nanos t) { return model::to_seconds(t); };
  Json j;
  j["index"] = i;
  j["label"] = sim::point_label(report.grid, sc);
  j["fabric"] = sc.fabric;
  j["intra"] = sc.intra;
  j["inter"] = sc.inter;
  j["gpus"] = sc.gpus;
  j["nodes"] = sc.nodes;
  j["gpus_per_node"] = sc.gpus_per_node;
  j["algorithm"] = sc.algorithm;
  j["algorithm_used"] = r.algorithm;
  j["overlap"] = sc.overlap;
  j["precision"] = sc.precision;
  j["topk"] = sc.topk;
  j["sharding"] = sc.sharding;
  j["memory_per_gpu_bytes"] = r.memory.total();
  put_headline(j, r);
  j["breakdown"] = {{"compute", secs(p.compute)},
                    {"forward", secs(b.forward)},
                    {"backward", secs(b.backward)},
                    {"comm_total", secs(b.comm_total)},
                    {"comm_exposed", secs(b.comm_exposed)},
                    {"comm_overlapped", secs(p.comm_overlapped)},
                    {"io", secs(b.io)},
                    {"h2d", secs(b.h2d)},
                    {"update", secs(b.update)},
                    {"idle", secs(b.idle)}};
  j["effects"] = effects_json(r);
  j["critical_path"] = critical_path_json(r);
  j["bound"] = r.bound;
  j["bottleneck"] = sim::point_label(report.grid, sc) + ": " + r.bottleneck;
  j["what_if"] = what_if_json(r);
  if (!r.timeline.empty())
    j["timeline"] = "timelines/" + timeline_file_name(report.rows[i].scenario, i);
  detail::add_links_json(j, r.network_model, r.busiest_links);
  return j;
}

}  // namespace

std::string whatif_json(const WhatifReport& report) {
  Json j;
  j["title"] = report.title;
  Json w = Json::object();
  for (const auto& [k, v] : report.workload) w[k] = v;
  j["workload"] = w;
  j["command"] = report.command;
  j["tool_version"] = model::tool_version();
  Json rows = Json::array();
  for (std::size_t i = 0; i < report.rows.size(); ++i) rows.push_back(scenario_json(report, i));
  j["scenarios"] = rows;
  return j.dump(2) + "\n";
}

// ---------------------------------------------------------------------------------------------
// Markdown

namespace detail {

// A few sentences a person reads first: the best configuration, the spread between fabrics at
// the largest GPU count, and what bounds it.
std::vector<std::string> findings(const WhatifReport& report) {
  std::vector<std::string> out;
  if (report.rows.empty()) return out;
  const auto& rows = report.rows;
  int max_gpus = 0;
  for (const auto& r : rows) max_gpus = std::max(max_gpus, r.scenario.gpus);
  std::size_t best = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    if (rows[i].result.throughput > rows[best].result.throughput) best = i;
  }
  out.push_back("Highest throughput: **" + sim::point_label(report.grid, rows[best].scenario) +
                "** — " + fmt("%.0f", rows[best].result.throughput) + " samples/s, " +
                fmt("%.0f%%", 100 * rows[best].result.efficiency) + " scaling efficiency.");
  std::size_t fast = rows.size();
  std::size_t slow = rows.size();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].scenario.gpus != max_gpus) continue;
    if (fast == rows.size() || rows[i].result.iteration < rows[fast].result.iteration) fast = i;
    if (slow == rows.size() || rows[i].result.iteration > rows[slow].result.iteration) slow = i;
  }
  if (fast != slow && fast < rows.size()) {
    out.push_back("At " + std::to_string(max_gpus) + " GPUs, **" +
                  sim::point_label(report.grid, rows[fast].scenario) + "** is " +
                  fmt("%.2f", static_cast<double>(rows[slow].result.iteration) /
                                  static_cast<double>(rows[fast].result.iteration)) +
                  "× faster per iteration than **" +
                  sim::point_label(report.grid, rows[slow].scenario) + "** (" +
                  fmt("%.1f ms", ms(rows[fast].result.iteration)) + " vs " +
                  fmt("%.1f ms", ms(rows[slow].result.iteration)) + ").");
  }
  std::size_t comm_bound = 0;
  for (const auto& r : rows) comm_bound += r.result.bound == "communication-bound" ? 1 : 0;
  out.push_back(std::to_string(comm_bound) + " of " + std::to_string(rows.size()) +
                " scenarios are communication-bound (at least 25% of the iteration is exposed "
                "gradient exchange).");
  return out;
}

}  // namespace detail

namespace {

// Sharding levels side by side, per fabric and GPU count (a grid with several levels): the
// iteration, the communication left exposed, the all-gathers and one GPU's memory.
std::string sharding_section(const WhatifReport& report) {
  if (report.grid.shardings.size() < 2) return "";
  std::string out =
      "\n## Sharding levels per fabric\n\nGradients reduce-scattered, parameters all-gathered "
      "after the step (zero1, zero2) or before each unit's forward and backward (zero3, fsdp); "
      "memory per GPU: model states as the level divides them (ZeRO paper, Adam) plus "
      "activations.\n\n| fabric | GPUs | sharding | iteration (ms) | exposed comm (ms) | "
      "all-gathers | memory per GPU (GiB) | vs the first level |\n"
      "|---|--:|---|--:|--:|--:|--:|--:|\n";
  const WhatifRow* first = nullptr;
  for (const auto& row : report.rows) {
    const auto& sc = row.scenario;
    const auto& r = row.result;
    if (first == nullptr || first->scenario.fabric != sc.fabric ||
        first->scenario.gpus != sc.gpus || sc.sharding == report.grid.shardings.front()) {
      first = &row;
    }
    out += "| " + md_cell(sc.fabric) + " | " + std::to_string(sc.gpus) + " | " + sc.sharding +
           " | " + fmt("%.2f", ms(r.iteration)) + " | " +
           fmt("%.2f", ms(parts_of(r).comm_exposed)) + " | " +
           std::to_string(r.gathers_per_iteration) + " | " +
           fmt("%.2f", r.memory.total() / model::kGiB) + " | " +
           fmt("%.2fx", static_cast<double>(r.iteration) /
                            static_cast<double>(std::max<Nanos>(1, first->result.iteration))) +
           " |\n";
  }
  return out;
}

}  // namespace

std::string whatif_markdown(const WhatifReport& report) {
  std::string out = "# What-if: " + report.title + "\n\n";
  out += "Reproduce: `" + report.command + "`\n\n";
  out += "| workload | |\n|---|---|\n";
  for (const auto& [k, v] : report.workload) out += "| " + md_cell(k) + " | " + md_cell(v) + " |\n";
  out += "\n## Summary\n\n";
  for (const auto& f : findings(report)) out += "- " + f + "\n";
  out += "\n## Scenarios\n\n";
  out +=
      "| scenario | intra | inter | iteration (ms) | samples/s | speed-up | efficiency | compute "
      "(ms) | exposed comm (ms) | overlapped comm (ms) | bound |\n";
  out += "|---|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n";
  for (const auto& row : report.rows) {
    const auto& r = row.result;
    const Parts p = parts_of(r);
    out += "| " + md_cell(sim::point_label(report.grid, row.scenario)) + " | " +
           row.scenario.intra + " | " + row.scenario.inter + " | " + fmt("%.2f", ms(r.iteration)) +
           " | " + fmt("%.0f", r.throughput) + " | " + fmt("%.2f", r.speedup) + " | " +
           fmt("%.0f%%", 100 * r.efficiency) + " | " + fmt("%.2f", ms(p.compute)) + " | " +
           fmt("%.2f", ms(p.comm_exposed)) + " | " + fmt("%.2f", ms(p.comm_overlapped)) + " | " +
           r.bound + " |\n";
  }
  out += sharding_section(report);
  out += "\n## Bottlenecks\n\n";
  for (const auto& row : report.rows) {
    out += "- " + md_cell(sim::point_label(report.grid, row.scenario)) + ": " +
           row.result.bottleneck + "\n";
  }
  out += "\n## Critical path composition\n\n| scenario | composition |\n|---|---|\n";
  for (const auto& row : report.rows) {
    std::string c;
    for (const auto& ph : row.result.critical_path) {
      c += (c.empty() ? "" : ", ") + ph.phase + " " +
           fmt("%.0f%%", 100.0 * static_cast<double>(ph.time) /
                             static_cast<double>(std::max<Nanos>(1, row.result.iteration)));
    }
    out += "| " + md_cell(sim::point_label(report.grid, row.scenario)) + " | " + c + " |\n";
  }
  if (const auto links = link_view_rows(report); !links.empty()) {
    out +=
        "\n## Busiest links\n\nOne iteration per fabric at its largest GPU count (flow-level "
        "tier): the links that carried most for their bandwidth.\n\n| scenario | link | kind | "
        "busy | utilization | GB |\n|---|---|---|--:|--:|--:|\n";
    for (std::size_t i : links) {
      for (const auto& l : report.rows[i].result.busiest_links) {
        out += "| " + md_cell(sim::point_label(report.grid, report.rows[i].scenario)) + " | " +
               md_cell(l.link) + " | " + l.kind + " | " + fmt("%.0f%%", 100 * l.busy) + " | " +
               fmt("%.0f%%", 100 * l.utilization) + " | " + fmt("%.3f", l.gigabytes) + " |\n";
      }
    }
  }
  bool any_timeline = false;
  for (const auto& row : report.rows) any_timeline = any_timeline || !row.result.timeline.empty();
  if (any_timeline) {
    out +=
        "\n## Timelines\n\nOne simulated iteration, every worker (open in https://ui.perfetto.dev "
        "or chrome://tracing):\n\n";
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      if (report.rows[i].result.timeline.empty()) continue;
      out += "- " + md_cell(sim::point_label(report.grid, report.rows[i].scenario)) +
             ": `timelines/" + timeline_file_name(report.rows[i].scenario, i) + "`\n";
    }
  }
  return out;
}

}  // namespace dagsgd::reports
