// What-if sweeps: grid expansion and the report files (CSV, JSON, Markdown, HTML, timelines).
#include "dagsgd/reports/whatif_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/sim/trace_replay.h"
#include "dagsgd/trace/trace_dag.h"
#include "dagsgd/trace/trace_writer.h"

namespace dagsgd::reports {

using model::Error;
using model::Expected;
using model::Nanos;
using Json = nlohmann::ordered_json;

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string num(double v) { return fmt("%g", v); }

double ms(Nanos t) { return model::to_millis(t); }
double round6(double v) { return std::round(v * 1e6) / 1e6; }

// The parts of one worker's iteration as the report shows them (ns).
struct Parts {
  Nanos compute = 0;
  Nanos comm_exposed = 0;
  Nanos comm_overlapped = 0;
  Nanos io = 0;
  Nanos update = 0;
  Nanos idle = 0;
};

Parts parts_of(const sim::PredictResult& r) {
  const auto& b = r.breakdown;
  return {b.forward + b.backward, b.comm_exposed, std::max<Nanos>(0, b.comm_total - b.comm_exposed),
          b.io + b.h2d,           b.update,       b.idle};
}

double exposed_share(const sim::PredictResult& r) {
  return r.iteration > 0
             ? static_cast<double>(r.breakdown.comm_exposed) / static_cast<double>(r.iteration)
             : 0.0;
}

template <typename T>
bool varies(const std::vector<T>& v) {
  return v.size() > 1;
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

// JavaScript inlined in <script> must not contain "</script" (it would end the element); a
// backslash keeps the meaning both in strings and in regular expressions.
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    out += s[i];
    if (s[i] == '<' && i + 7 < s.size() && s[i + 1] == '/') {
      std::string tag = s.substr(i + 2, 6);
      for (char& c : tag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (tag == "script") out += '\\';
    }
  }
  return out;
}

// JSON data in a <script>: '<' only occurs inside strings, where \u003c means the same.
std::string json_for_script(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string lane_of(const sim::TimelineSpan& s) {
  if (s.worker < 0) return "gradient exchange";
  std::string w = "GPU " + std::to_string(s.worker);
  switch (s.kind) {
    case model::TaskKind::kIo:
    case model::TaskKind::kH2D:
      return w + " input";
    case model::TaskKind::kMemcpy:
      return w + " copies";
    case model::TaskKind::kOther:
      return w + " host";
    case model::TaskKind::kComm:
      return w + " communication";
    default:
      return w + " compute";
  }
}

std::string span_name(const sim::TimelineSpan& s) {
  std::string k = model::task_kind_name(s.kind);
  if (s.kind == model::TaskKind::kComm) return "allreduce group " + std::to_string(s.layer);
  if (s.layer >= 0) return k + " layer " + std::to_string(s.layer);
  return k;
}

}  // namespace

std::string variant_label(const WhatifGrid& grid, const WhatifScenario& s) {
  std::vector<std::string> parts;
  if (varies(grid.algorithms)) parts.push_back(s.algorithm);
  if (varies(grid.overlaps)) parts.push_back(s.overlap);
  if (varies(grid.precisions)) parts.push_back(s.precision);
  if (varies(grid.topks)) parts.push_back(s.topk > 0 ? "top-k " + num(s.topk) : "dense");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string scenario_label(const WhatifGrid& grid, const WhatifScenario& s) {
  std::string out = s.fabric + ", " + std::to_string(s.gpus) + (s.gpus == 1 ? " GPU" : " GPUs");
  std::string v = variant_label(grid, s);
  if (!v.empty()) out += ", " + v;
  return out;
}

Expected<std::vector<WhatifScenario>> expand_grid(const WhatifGrid& grid,
                                                  const model::HardwareCatalog& catalog) {
  if (grid.fabrics.empty()) return Error{"--fabrics: give at least one fabric"};
  if (grid.gpus.empty()) return Error{"--gpus: give at least one GPU count"};
  if (grid.gpus_per_node < 1) return Error{"--gpus-per-node must be at least 1"};
  for (const auto& [flag, n] :
       {std::pair<const char*, std::size_t>{"--algorithms", grid.algorithms.size()},
        {"--overlap", grid.overlaps.size()},
        {"--precision", grid.precisions.size()},
        {"--topk", grid.topks.size()}}) {
    if (n == 0) return Error{std::string(flag) + ": give at least one value"};
  }
  struct Pair {
    std::string intra;
    std::string inter;
  };
  std::vector<Pair> pairs;
  for (const auto& f : grid.fabrics) {
    Pair p{grid.default_intra, grid.default_inter};
    if (auto plus = f.find('+'); plus != std::string::npos) {
      p = {f.substr(0, plus), f.substr(plus + 1)};
      for (const auto& name : {p.intra, p.inter}) {
        auto spec = catalog.fabric(name);
        if (!spec.ok()) return Error{"--fabrics '" + f + "': " + spec.error().message};
      }
    } else {
      auto spec = catalog.fabric(f);
      if (!spec.ok()) return Error{"--fabrics '" + f + "': " + spec.error().message};
      if (spec->scope == "intra") {
        p.intra = f;
      } else if (spec->scope == "inter") {
        p.inter = f;
      } else {
        p = {f, f};
      }
    }
    pairs.push_back(p);
  }
  for (int g : grid.gpus) {
    if (g < 1) return Error{"--gpus: GPU counts must be positive (got " + std::to_string(g) + ")"};
    if (g > grid.gpus_per_node && g % grid.gpus_per_node != 0) {
      return Error{"--gpus: " + std::to_string(g) + " GPUs do not fill whole nodes of " +
                   std::to_string(grid.gpus_per_node) + " (--gpus-per-node)"};
    }
  }
  for (double k : grid.topks) {
    if (!(k >= 0 && k <= 1))
      return Error{"--topk: fractions must be in [0, 1] (got " + num(k) + ")"};
  }
  std::vector<WhatifScenario> out;
  for (std::size_t fi = 0; fi < grid.fabrics.size(); ++fi) {
    for (int g : grid.gpus) {
      for (const auto& a : grid.algorithms) {
        for (const auto& o : grid.overlaps) {
          for (const auto& p : grid.precisions) {
            for (double k : grid.topks) {
              WhatifScenario s;
              s.fabric = grid.fabrics[fi];
              s.intra = pairs[fi].intra;
              s.inter = pairs[fi].inter;
              s.gpus = g;
              s.gpus_per_node = std::min(g, grid.gpus_per_node);
              s.nodes = g / s.gpus_per_node;
              s.algorithm = a;
              s.overlap = o;
              s.precision = p;
              s.topk = k;
              out.push_back(std::move(s));
            }
          }
        }
      }
    }
  }
  return out;
}

std::vector<std::size_t> timeline_scenarios(const std::vector<WhatifScenario>& scenarios) {
  // First scenario of each fabric at that fabric's largest GPU count (grid order puts the first
  // value of every other dimension first).
  std::map<std::string, std::size_t> best;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    const auto& s = scenarios[i];
    auto it = best.find(s.fabric);
    if (it == best.end()) {
      best.emplace(s.fabric, i);
      order.push_back(s.fabric);
    } else if (s.gpus > scenarios[it->second].gpus) {
      it->second = i;
    }
  }
  std::vector<std::size_t> out;
  out.reserve(order.size());
  for (const auto& f : order) out.push_back(best[f]);
  return out;
}

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
    std::vector<std::string> f = {std::to_string(i),
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
                                  csv_field(scenario_label(report.grid, sc) + ": " + r.bottleneck)};
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
  j["label"] = scenario_label(report.grid, sc);
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
  j["iteration_time_s"] = secs(r.iteration);
  j["throughput_samples_per_s"] = round6(r.throughput);
  j["speedup"] = round6(r.speedup);
  j["efficiency"] = round6(r.efficiency);
  j["single_gpu_iteration_time_s"] = secs(r.single_gpu_iteration);
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
  Json cp = Json::object();
  for (const auto& ph : r.critical_path) cp[ph.phase] = secs(ph.time);
  j["critical_path"] = {{"tasks", r.critical_path_tasks}, {"composition_s", cp}};
  j["bound"] = r.bound;
  j["bottleneck"] = scenario_label(report.grid, sc) + ": " + r.bottleneck;
  j["what_if"] = {{"comm_free_iteration_time_s", secs(r.if_comm_free)},
                  {"double_bandwidth_iteration_time_s", secs(r.if_double_bandwidth)}};
  if (!r.timeline.empty()) j["timeline"] = "timelines/" + timeline_file_name(report.rows[i], i);
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

namespace {

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
  out.push_back("Highest throughput: **" + scenario_label(report.grid, rows[best].scenario) +
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
                  scenario_label(report.grid, rows[fast].scenario) + "** is " +
                  fmt("%.2f", static_cast<double>(rows[slow].result.iteration) /
                                  static_cast<double>(rows[fast].result.iteration)) +
                  "× faster per iteration than **" +
                  scenario_label(report.grid, rows[slow].scenario) + "** (" +
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
    out += "| " + md_cell(scenario_label(report.grid, row.scenario)) + " | " + row.scenario.intra +
           " | " + row.scenario.inter + " | " + fmt("%.2f", ms(r.iteration)) + " | " +
           fmt("%.0f", r.throughput) + " | " + fmt("%.2f", r.speedup) + " | " +
           fmt("%.0f%%", 100 * r.efficiency) + " | " + fmt("%.2f", ms(p.compute)) + " | " +
           fmt("%.2f", ms(p.comm_exposed)) + " | " + fmt("%.2f", ms(p.comm_overlapped)) + " | " +
           r.bound + " |\n";
  }
  out += "\n## Bottlenecks\n\n";
  for (const auto& row : report.rows) {
    out += "- " + md_cell(scenario_label(report.grid, row.scenario)) + ": " +
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
    out += "| " + md_cell(scenario_label(report.grid, row.scenario)) + " | " + c + " |\n";
  }
  bool any_timeline = false;
  for (const auto& row : report.rows) any_timeline = any_timeline || !row.result.timeline.empty();
  if (any_timeline) {
    out +=
        "\n## Timelines\n\nOne simulated iteration, every worker (open in https://ui.perfetto.dev "
        "or chrome://tracing):\n\n";
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      if (report.rows[i].result.timeline.empty()) continue;
      out += "- " + md_cell(scenario_label(report.grid, report.rows[i].scenario)) +
             ": `timelines/" + timeline_file_name(report.rows[i], i) + "`\n";
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// HTML

Expected<PlotLibrary> load_plot_library() {
  std::string dir;
  if (const char* env = std::getenv("DAGSGD_NODE_MODULES"); env != nullptr && *env != '\0') {
    dir = env;
  } else {
    dir = model::data_dir() + "/../node_modules";
  }
  PlotLibrary lib;
  for (auto [pkg, dest] : {std::pair<const char*, std::string*>{"vega", &lib.vega},
                           {"vega-lite", &lib.vega_lite},
                           {"vega-embed", &lib.vega_embed}}) {
    const std::string path = dir + "/" + pkg + "/build/" + pkg + ".min.js";
    if (!model::file_exists(path)) {
      return Error{"plot library '" + path +
                   "' is missing: run tools/setup (npm ci in the source tree) or set "
                   "DAGSGD_NODE_MODULES to a node_modules folder with vega, vega-lite and "
                   "vega-embed"};
    }
    auto text = model::read_file(path);
    if (!text.ok()) return text.error();
    *dest = std::move(*text);
  }
  return lib;
}

namespace {

// One line per fabric (colour, in the order given) and per variant (dash pattern).
Json throughput_spec(const Json& data, const std::vector<int>& gpus,
                     const std::vector<std::string>& fabrics, bool variants, const char* field,
                     const char* title, const char* axis_title, const char* format) {
  Json tooltip =
      Json::array({{{"field", "label"}, {"title", "scenario"}},
                   {{"field", "throughput"}, {"title", "samples/s"}, {"format", ",.0f"}},
                   {{"field", "efficiency"}, {"title", "efficiency"}, {"format", ".1%"}},
                   {{"field", "speedup"}, {"title", "speed-up"}, {"format", ".2f"}},
                   {{"field", "iteration_ms"}, {"title", "iteration (ms)"}, {"format", ".2f"}},
                   {{"field", "bound"}}});
  Json y = {{"field", field}, {"type", "quantitative"}, {"title", axis_title}};
  if (std::string(format) == ".0%") y["axis"] = {{"format", format}};
  Json spec = {
      {"title", title},
      {"width", 420},
      {"height", 260},
      {"data", {{"values", data}}},
      {"mark", {{"type", "line"}, {"point", {{"size", 60}}}, {"tooltip", true}}},
      {"encoding",
       {{"x",
         {{"field", "gpus"},
          {"type", "quantitative"},
          {"title", "GPUs"},
          {"scale", {{"type", "log"}, {"base", 2}}},
          {"axis", {{"values", gpus}, {"format", "d"}}}}},
        {"y", y},
        {"color",
         {{"field", "fabric"}, {"type", "nominal"}, {"title", "fabric"}, {"sort", fabrics}}},
        {"detail", {{"field", "series"}, {"type", "nominal"}}},
        {"tooltip", tooltip}}}};
  if (variants) {
    spec["encoding"]["strokeDash"] = {
        {"field", "variant"}, {"type", "nominal"}, {"title", nullptr}};
  }
  return spec;
}

Json breakdown_spec(const Json& data, std::size_t scenarios) {
  Json tooltip =
      Json::array({{{"field", "label"}, {"title", "scenario"}},
                   {{"field", "part"}},
                   {{"field", "ms"}, {"title", "time (ms)"}, {"format", ".3f"}},
                   {{"field", "iteration_ms"}, {"title", "iteration (ms)"}, {"format", ".3f"}}});
  Json domain =
      Json::array({"compute", "update", "io + h2d", "comm (exposed)", "idle", "comm (overlapped)"});
  Json range = Json::array({"#4c78a8", "#72b7b2", "#54a24b", "#e45756", "#bab0ac", "#ff9da6"});
  return {
      {"title",
       "Where one worker's iteration goes (overlapped communication hides behind "
       "compute)"},
      {"width", 640},
      {"height", {{"step", 18}}},
      {"data", {{"values", data}}},
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"y",
         {{"field", "label"},
          {"type", "nominal"},
          {"title", nullptr},
          {"sort", {{"field", "index"}, {"op", "min"}}}}},
        {"x",
         {{"field", "ms"}, {"type", "quantitative"}, {"title", "milliseconds"}, {"stack", "zero"}}},
        {"color",
         {{"field", "part"},
          {"type", "nominal"},
          {"title", nullptr},
          {"scale", {{"domain", domain}, {"range", range}}}}},
        {"order", {{"field", "part_order"}, {"type", "quantitative"}}},
        {"tooltip", tooltip}}},
      {"usermeta", {{"scenarios", scenarios}}}};
}

Json timeline_spec(const Json& data) {
  Json tooltip =
      Json::array({{{"field", "scenario"}},
                   {{"field", "task"}},
                   {{"field", "start_ms"}, {"title", "start (ms)"}, {"format", ".3f"}},
                   {{"field", "dur_ms"}, {"title", "duration (ms)"}, {"format", ".3f"}}});
  return {{"title", "One simulated iteration per fabric (GPU 0 and the gradient exchange)"},
          {"data", {{"values", data}}},
          {"facet",
           {{"row",
             {{"field", "scenario"},
              {"type", "nominal"},
              {"title", nullptr},
              {"sort", {{"field", "order"}, {"op", "min"}}},
              {"header", {{"labelAngle", 0}, {"labelAlign", "left"}, {"labelOrient", "top"}}}}}}},
          {"resolve", {{"scale", {{"x", "independent"}}}}},
          {"spec",
           {{"width", 640},
            {"height", {{"step", 16}}},
            {"mark", {{"type", "bar"}, {"tooltip", true}}},
            {"encoding",
             {{"y", {{"field", "lane"}, {"type", "nominal"}, {"title", nullptr}}},
              {"x", {{"field", "start_ms"}, {"type", "quantitative"}, {"title", "ms"}}},
              {"x2", {{"field", "end_ms"}}},
              {"color", {{"field", "kind"}, {"type", "nominal"}, {"title", "task"}}},
              {"tooltip", tooltip}}}}}};
}

}  // namespace

std::string whatif_html(const WhatifReport& report, const PlotLibrary& plots) {
  const auto& grid = report.grid;
  Json rows = Json::array();
  Json parts = Json::array();
  Json timeline = Json::array();
  std::set<int> gpu_set;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const auto& sc = report.rows[i].scenario;
    const auto& r = report.rows[i].result;
    const std::string label = scenario_label(grid, sc);
    std::string variant = variant_label(grid, sc);
    gpu_set.insert(sc.gpus);
    rows.push_back({{"index", i},
                    {"label", label},
                    {"series", variant.empty() ? sc.fabric : sc.fabric + " (" + variant + ")"},
                    {"fabric", sc.fabric},
                    {"variant", variant},
                    {"gpus", sc.gpus},
                    {"throughput", round6(r.throughput)},
                    {"efficiency", round6(r.efficiency)},
                    {"speedup", round6(r.speedup)},
                    {"iteration_ms", round6(ms(r.iteration))},
                    {"bound", r.bound}});
    const Parts p = parts_of(r);
    const std::pair<const char*, Nanos> shares[] = {
        {"compute", p.compute}, {"update", p.update},
        {"io + h2d", p.io},     {"comm (exposed)", p.comm_exposed},
        {"idle", p.idle},       {"comm (overlapped)", p.comm_overlapped}};
    int order = 0;
    for (const auto& [name, t] : shares) {
      ++order;
      if (t <= 0) continue;
      parts.push_back({{"index", i},
                       {"label", label},
                       {"part", name},
                       {"part_order", order},
                       {"ms", round6(ms(t))},
                       {"iteration_ms", round6(ms(r.iteration))}});
    }
    for (const auto& s : r.timeline) {
      if (s.worker > 0) continue;  // GPU 0 stands for every worker; the files hold them all
      // Input prefetched during the previous iteration is drawn from the window's start.
      if (s.start + s.duration <= 0) continue;
      const Nanos start = std::max<Nanos>(0, s.start);
      timeline.push_back({{"scenario", label},
                          {"order", i},
                          {"lane", lane_of(s)},
                          {"kind", model::task_kind_name(s.kind)},
                          {"task", span_name(s)},
                          {"start_ms", round6(ms(start))},
                          {"end_ms", round6(ms(s.start + s.duration))},
                          {"dur_ms", round6(ms(s.duration))}});
    }
  }
  std::vector<int> gpus(gpu_set.begin(), gpu_set.end());
  bool any_variant = false;
  for (const auto& row : report.rows)
    any_variant = any_variant || !variant_label(grid, row.scenario).empty();
  Json specs = Json::object();
  specs["throughput"] = throughput_spec(rows, gpus, grid.fabrics, any_variant, "throughput",
                                        "Throughput", "samples/s", ",.0f");
  specs["efficiency"] = throughput_spec(rows, gpus, grid.fabrics, any_variant, "efficiency",
                                        "Scaling efficiency", "efficiency", ".0%");
  specs["breakdown"] = breakdown_spec(parts, report.rows.size());
  if (!timeline.empty()) specs["timeline"] = timeline_spec(timeline);

  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  h += "<title>What-if: " + html_escape(report.title) + "</title>\n";
  h += R"(<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1150px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ddd; padding: 2px 8px; }
th { background: #f4f4f4; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.communication-bound td.b { color: #c0392b; }
code { background: #f4f4f4; padding: 1px 4px; }
.row { display: flex; flex-wrap: wrap; gap: 2em; }
.findings li { margin-bottom: 0.3em; }
</style>
)";
  h += "</head>\n<body>\n";
  h += "<h1>What-if: " + html_escape(report.title) + "</h1>\n";
  h += "<p>Reproduce: <code>" + html_escape(report.command) + "</code></p>\n";
  h += "<table>\n";
  for (const auto& [k, v] : report.workload) {
    h += "<tr><th>" + html_escape(k) + "</th><td>" + html_escape(v) + "</td></tr>\n";
  }
  h += "</table>\n<h2>Summary</h2>\n<ul class=\"findings\">\n";
  for (const auto& f : findings(report)) {
    // Markdown bold to HTML.
    std::string e = html_escape(f);
    std::string o;
    bool open = false;
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (e.compare(i, 2, "**") == 0) {
        o += open ? "</b>" : "<b>";
        open = !open;
        ++i;
      } else {
        o += e[i];
      }
    }
    h += "<li>" + o + "</li>\n";
  }
  h += "</ul>\n<h2>Scaling</h2>\n<div class=\"row\"><div id=\"throughput\"></div>"
       "<div id=\"efficiency\"></div></div>\n";
  h += "<h2>Breakdown</h2>\n<div id=\"breakdown\"></div>\n";
  if (!timeline.empty()) {
    h += "<h2>Timelines</h2>\n<p>Full timelines of every worker, for Perfetto: ";
    bool first = true;
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      if (report.rows[i].result.timeline.empty()) continue;
      const std::string f = "timelines/" + timeline_file_name(report.rows[i], i);
      h += std::string(first ? "" : ", ") + "<a href=\"" + html_escape(f) + "\">" + html_escape(f) +
           "</a>";
      first = false;
    }
    h += ".</p>\n<div id=\"timeline\"></div>\n";
  }
  h += "<h2>Scenarios</h2>\n<table>\n<tr><th>scenario</th><th>intra</th><th>inter</th>"
       "<th>iteration (ms)</th><th>samples/s</th><th>speed-up</th><th>efficiency</th>"
       "<th>exposed comm</th><th>bottleneck</th></tr>\n";
  for (const auto& row : report.rows) {
    const auto& r = row.result;
    h += "<tr class=\"" + r.bound + "\"><td>" + html_escape(scenario_label(grid, row.scenario)) +
         "</td><td>" + html_escape(row.scenario.intra) + "</td><td>" +
         html_escape(row.scenario.inter) + "</td><td class=\"n\">" + fmt("%.2f", ms(r.iteration)) +
         "</td><td class=\"n\">" + fmt("%.0f", r.throughput) + "</td><td class=\"n\">" +
         fmt("%.2f", r.speedup) + "</td><td class=\"n\">" + fmt("%.0f%%", 100 * r.efficiency) +
         "</td><td class=\"n\">" + fmt("%.0f%%", 100 * exposed_share(r)) + "</td><td class=\"b\">" +
         html_escape(r.bottleneck) + "</td></tr>\n";
  }
  h += "</table>\n";
  h += "<p>Files beside this report: <code>report.md</code>, <code>results.csv</code>, "
       "<code>results.json</code>.</p>\n";
  h += "<script>" + script_safe(plots.vega) + "\n</script>\n";
  h += "<script>" + script_safe(plots.vega_lite) + "\n</script>\n";
  h += "<script>" + script_safe(plots.vega_embed) + "\n</script>\n";
  h += "<script>\nconst specs = " + json_for_script(specs.dump()) + ";\n";
  h += R"(Promise.all(Object.keys(specs).map(function (id) {
  return vegaEmbed('#' + id, specs[id], {actions: false, renderer: 'svg'});
})).then(function () {
  document.body.setAttribute('data-plots-rendered', String(Object.keys(specs).length));
}).catch(function (e) {
  document.body.setAttribute('data-plots-error', String(e));
  console.error(e);
});
</script>
</body>
</html>
)";
  return h;
}

// ---------------------------------------------------------------------------------------------
// Timelines

std::string timeline_file_name(const WhatifRow& row, std::size_t index) {
  std::string f;
  for (char c : row.scenario.fabric) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '+' || c == '_';
    f += ok ? c : '_';
  }
  return std::to_string(index) + "-" + f + "-" + std::to_string(row.scenario.gpus) +
         "gpus.trace.json";
}

std::string timeline_trace(const WhatifReport& report, const WhatifRow& row) {
  const auto& r = row.result;
  std::string out = "{\"schemaVersion\":1,\"displayTimeUnit\":\"ms\",\"otherData\":{\"scenario\":";
  trace::append_json_string(out, scenario_label(report.grid, row.scenario));
  out += ",\"title\":";
  trace::append_json_string(out, report.title);
  out += "},\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const trace::Event& e) {
    if (!first) out += ",\n";
    first = false;
    trace::append_event_json(out, e);
  };
  // Collectives span every worker; they get their own process after the workers.
  const std::int64_t comm_pid = r.workers;
  for (int w = 0; w <= r.workers; ++w) {
    trace::Event m;
    m.ph = 'M';
    m.name = "process_name";
    m.pid = w;
    m.args.push_back({"name", w < r.workers ? "GPU " + std::to_string(w) : "gradient exchange"});
    emit(m);
  }
  for (const auto& s : r.timeline) {
    trace::Event e;
    e.ph = 'X';
    e.name = span_name(s);
    const bool comm = s.kind == model::TaskKind::kComm;
    e.cat = comm ? trace::cat::kUserAnnotation : trace::cat::kKernel;
    e.ts = s.start;
    e.dur = s.duration;
    e.pid = s.worker < 0 ? comm_pid : s.worker;
    // Threads as the HTML lanes: compute, input, copies, host work, the rank's own collectives.
    switch (s.kind) {
      case model::TaskKind::kIo:
      case model::TaskKind::kH2D:
        e.tid = 1;
        break;
      case model::TaskKind::kMemcpy:
        e.tid = 2;
        break;
      case model::TaskKind::kOther:
        e.tid = 3;
        break;
      case model::TaskKind::kComm:
        e.tid = s.worker < 0 ? 0 : 4;
        break;
      default:
        e.tid = 0;
    }
    e.args.push_back({trace::arg::kPhase, std::string(model::task_kind_name(s.kind))});
    if (s.layer >= 0) e.args.push_back({trace::arg::kLayer, std::int64_t{s.layer}});
    if (comm) e.args.push_back({trace::arg::kAlgorithm, r.algorithm});
    emit(e);
  }
  out += "\n]}\n";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Traced runs

namespace {

std::string percent(double x) { return fmt("%.0f%%", 100.0 * x); }

std::string times_faster(Nanos base, Nanos better) {
  if (better <= 0 || better >= base) return "no faster";
  const double b = static_cast<double>(base);
  const double t = static_cast<double>(better);
  return fmt("%.2fx faster", b / t) + fmt(" (-%.0f%%)", 100.0 * (1.0 - t / b));
}

Nanos scaled_ns(double seconds, double relative_change) {
  return std::llround(seconds * (1.0 + relative_change) * 1e9);
}

}  // namespace

sim::PredictResult replay_as_prediction(const trace::TraceDag& tdag, const sim::ReplayResult& r,
                                        int batch, bool keep_timeline) {
  sim::PredictResult p;
  p.workers = tdag.ranks;
  p.iteration = scaled_ns(r.predicted_mean_s, 0.0);
  p.if_comm_free = scaled_ns(r.predicted_mean_s, r.if_comm_free);
  p.if_double_bandwidth = scaled_ns(r.predicted_mean_s, r.if_double_network);
  p.single_gpu_iteration = p.if_comm_free;
  if (p.iteration > 0) {
    p.throughput = static_cast<double>(batch) * p.workers / model::to_seconds(p.iteration);
    p.speedup = static_cast<double>(p.workers) * static_cast<double>(p.single_gpu_iteration) /
                static_cast<double>(p.iteration);
    p.efficiency = p.speedup / p.workers;
  }
  for (const auto& rt : r.predicted_ranks) {
    if (rt.rank != tdag.main_rank) continue;
    p.breakdown.forward = rt.compute;
    p.breakdown.comm_total = rt.comm_total;
    p.breakdown.comm_exposed = rt.comm_exposed;
    p.breakdown.h2d = rt.memcpy;
    p.breakdown.idle = rt.idle + rt.host;
  }
  for (const auto& ps : r.critical_path) p.critical_path.push_back({ps.what, ps.time});
  p.critical_path_tasks = r.critical_path_length;
  p.algorithm = r.comm.algorithm;
  p.tasks = tdag.dag.task_count();
  p.events = r.sim.events;
  const double exposed = p.iteration > 0 ? static_cast<double>(p.breakdown.comm_exposed) /
                                               static_cast<double>(p.iteration)
                                         : 0.0;
  p.bound = p.workers > 1 && exposed >= 0.25 ? "communication-bound" : r.bound;
  p.bottleneck = p.bound + ": " + percent(exposed) +
                 " of the iteration is exposed communication (" + p.algorithm +
                 "); free communication would be " + times_faster(p.iteration, p.if_comm_free) +
                 ", twice the bandwidth " + times_faster(p.iteration, p.if_double_bandwidth);
  if (keep_timeline && !tdag.boundary_task.empty() && tdag.end_task != model::kNoTask) {
    const Nanos ws = r.sim.start[static_cast<std::size_t>(tdag.boundary_task.back())];
    const Nanos we = r.sim.finish[static_cast<std::size_t>(tdag.end_task)];
    for (std::size_t i = 0; i < tdag.dag.task_count(); ++i) {
      const Nanos s = r.sim.start[i];
      const Nanos f = r.sim.finish[i];
      if (f <= ws || s >= we || f <= s) continue;
      const model::Task& t = tdag.dag.task(static_cast<model::TaskId>(i));
      p.timeline.push_back({t.worker, t.kind, t.layer, s - ws, f - s});
    }
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Wire format

std::string result_to_wire(const sim::PredictResult& r) {
  nlohmann::json j;
  const auto& b = r.breakdown;
  j["workers"] = r.workers;
  j["iteration"] = r.iteration;
  j["single"] = r.single_gpu_iteration;
  j["throughput"] = r.throughput;
  j["speedup"] = r.speedup;
  j["efficiency"] = r.efficiency;
  j["breakdown"] = {b.forward, b.backward, b.comm_total, b.comm_exposed,
                    b.update,  b.io,       b.h2d,        b.idle};
  nlohmann::json cp = nlohmann::json::array();
  for (const auto& p : r.critical_path) cp.push_back({p.phase, p.time});
  j["critical_path"] = cp;
  j["critical_path_tasks"] = r.critical_path_tasks;
  j["bound"] = r.bound;
  j["bottleneck"] = r.bottleneck;
  j["if_comm_free"] = r.if_comm_free;
  j["if_double_bandwidth"] = r.if_double_bandwidth;
  j["algorithm"] = r.algorithm;
  j["tasks"] = r.tasks;
  j["events"] = r.events;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : r.groups) groups.push_back({g.first, g.last, g.elements, g.comm});
  j["groups"] = groups;
  nlohmann::json tl = nlohmann::json::array();
  for (const auto& s : r.timeline) {
    tl.push_back({s.worker, static_cast<int>(s.kind), s.layer, s.start, s.duration});
  }
  j["timeline"] = tl;
  return j.dump();
}

Expected<sim::PredictResult> result_from_wire(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    sim::PredictResult r;
    r.workers = j.at("workers").get<int>();
    r.iteration = j.at("iteration").get<Nanos>();
    r.single_gpu_iteration = j.at("single").get<Nanos>();
    r.throughput = j.at("throughput").get<double>();
    r.speedup = j.at("speedup").get<double>();
    r.efficiency = j.at("efficiency").get<double>();
    const auto& b = j.at("breakdown");
    r.breakdown = {b.at(0).get<Nanos>(), b.at(1).get<Nanos>(), b.at(2).get<Nanos>(),
                   b.at(3).get<Nanos>(), b.at(4).get<Nanos>(), b.at(5).get<Nanos>(),
                   b.at(6).get<Nanos>(), b.at(7).get<Nanos>()};
    for (const auto& p : j.at("critical_path")) {
      r.critical_path.push_back({p.at(0).get<std::string>(), p.at(1).get<Nanos>()});
    }
    r.critical_path_tasks = j.at("critical_path_tasks").get<std::size_t>();
    r.bound = j.at("bound").get<std::string>();
    r.bottleneck = j.at("bottleneck").get<std::string>();
    r.if_comm_free = j.at("if_comm_free").get<Nanos>();
    r.if_double_bandwidth = j.at("if_double_bandwidth").get<Nanos>();
    r.algorithm = j.at("algorithm").get<std::string>();
    r.tasks = j.at("tasks").get<std::size_t>();
    r.events = j.at("events").get<std::uint64_t>();
    for (const auto& g : j.at("groups")) {
      r.groups.push_back({g.at(0).get<int>(), g.at(1).get<int>(), g.at(2).get<std::int64_t>(),
                          g.at(3).get<Nanos>()});
    }
    for (const auto& s : j.at("timeline")) {
      const int kind = s.at(1).get<int>();
      if (kind < 0 || kind >= model::kTaskKindCount) return Error{"result: bad task kind"};
      r.timeline.push_back({s.at(0).get<int>(), static_cast<model::TaskKind>(kind),
                            s.at(2).get<int>(), s.at(3).get<Nanos>(), s.at(4).get<Nanos>()});
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("result: malformed: ") + e.what()};
  }
}

}  // namespace dagsgd::reports
