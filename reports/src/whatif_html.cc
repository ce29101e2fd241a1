// What-if report.html: self-contained, with the plot library inlined and Vega-Lite specs for
// scaling, breakdown and timeline plots.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dagsgd/model/format.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/reports/whatif_report.h"
#include "whatif_common.h"

namespace dagsgd::reports {

using model::Error;
using model::Expected;
using model::fmt;
using model::Nanos;
using Json = nlohmann::ordered_json;
using namespace detail;  // NOLINT(google-build-using-namespace): this file's own helpers

namespace {

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

}  // namespace

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

// ---------------------------------------------------------------------------------------------
// Large sweeps: one configuration at a time, chosen in the page.

// The dimensions other than fabric and GPU count with more than one value: a sweep with any is
// shown one configuration at a time (a sweep without keeps the report it always had).
struct Dimension {
  const char* name;   // the rows' field and, prefixed with "pick_", the Vega-Lite parameter
  const char* title;  // the control's label
  std::vector<std::string> values;
  std::vector<std::string> labels;
};

std::string topk_value(double topk) { return model::num(topk); }
std::string topk_label(double topk) { return topk > 0 ? "top-k " + model::num(topk) : "dense"; }

std::vector<Dimension> varied_dimensions(const sim::SweepGrid& g) {
  std::vector<Dimension> out;
  if (g.algorithms.size() > 1)
    out.push_back({"algorithm", "algorithm", g.algorithms, g.algorithms});
  if (g.overlaps.size() > 1) out.push_back({"overlap", "overlap", g.overlaps, g.overlaps});
  if (g.precisions.size() > 1) {
    out.push_back({"precision", "precision", g.precisions, g.precisions});
  }
  if (g.shardings.size() > 1) out.push_back({"sharding", "sharding", g.shardings, g.shardings});
  if (g.topks.size() > 1) {
    Dimension d{"topk", "gradients", {}, {}};
    for (double k : g.topks) {
      d.values.push_back(topk_value(k));
      d.labels.push_back(topk_label(k));
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::string value_of(const Dimension& d, const sim::SweepPoint& p) {
  const std::string n = d.name;
  if (n == "algorithm") return p.algorithm;
  if (n == "overlap") return p.overlap;
  if (n == "precision") return p.precision;
  if (n == "sharding") return p.sharding;
  return topk_value(p.topk);
}

// Per fabric and GPU count, the row with the highest throughput (the first on a tie), in grid
// order of fabrics and ascending GPU counts.
struct Best {
  std::string fabric;
  int gpus = 0;
  std::size_t row = 0;
};

std::vector<Best> best_rows(const WhatifReport& report, const std::vector<int>& gpus) {
  std::vector<Best> out;
  for (const auto& f : report.grid.fabrics) {
    for (int g : gpus) {
      Best b{f, g, report.rows.size()};
      for (std::size_t i = 0; i < report.rows.size(); ++i) {
        const auto& sc = report.rows[i].scenario;
        if (sc.fabric != f || sc.gpus != g) continue;
        if (b.row == report.rows.size() ||
            report.rows[i].result.throughput > report.rows[b.row].result.throughput) {
          b.row = i;
        }
      }
      if (b.row < report.rows.size()) out.push_back(b);
    }
  }
  return out;
}

// The configuration shown first: the one that is best for the most fabric and GPU count pairs
// (the first in sweep order on a tie).
std::vector<std::string> initial_choice(const WhatifReport& report,
                                        const std::vector<Dimension>& dims,
                                        const std::vector<Best>& best) {
  std::map<std::vector<std::string>, std::pair<int, std::size_t>> wins;  // count, first row
  for (const auto& b : best) {
    std::vector<std::string> key;
    key.reserve(dims.size());
    for (const auto& d : dims) key.push_back(value_of(d, report.rows[b.row].scenario));
    auto it = wins.emplace(key, std::make_pair(0, b.row)).first;
    it->second.first++;
    it->second.second = std::min(it->second.second, b.row);
  }
  std::vector<std::string> choice;
  std::pair<int, std::size_t> top{-1, 0};
  for (const auto& [key, w] : wins) {
    if (w.first > top.first || (w.first == top.first && w.second < top.second)) {
      top = w;
      choice = key;
    }
  }
  return choice;
}

// The chosen configuration as a Vega expression over a row's fields.
std::string chosen_test(const std::vector<Dimension>& dims) {
  std::string t;
  for (const auto& d : dims) {
    t += std::string(t.empty() ? "" : " && ") + "datum." + d.name + " == pick_" + d.name;
  }
  return t;
}

const char* const kFabricPicked = "pick_fabric == 'all' || datum.fabric == pick_fabric";

// The parameters every linked plot declares: one per control, set by the page's script.
Json pick_params(const std::vector<Dimension>& dims, const std::vector<std::string>& choice) {
  Json params = Json::array();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    params.push_back({{"name", std::string("pick_") + dims[i].name}, {"value", choice[i]}});
  }
  params.push_back({{"name", "pick_fabric"}, {"value", "all"}});
  return params;
}

// Throughput or efficiency of the chosen configuration: one line per fabric, the highlighted
// fabric drawn over the others.
Json chosen_scaling_spec(const std::vector<int>& gpus, const std::vector<std::string>& fabrics,
                         const std::vector<Dimension>& dims, const std::vector<std::string>& choice,
                         const char* field, const char* title, const char* axis_title,
                         const char* format) {
  Json spec =
      throughput_spec(Json::array(), gpus, fabrics, false, field, title, axis_title, format);
  spec["data"] = {{"name", "rows"}};
  spec["params"] = pick_params(dims, choice);
  spec["transform"] = Json::array({{{"filter", chosen_test(dims)}}});
  spec["encoding"]["opacity"] = {{"condition", {{"test", kFabricPicked}, {"value", 1}}},
                                 {"value", 0.15}};
  spec["encoding"]["detail"] = {{"field", "fabric"}, {"type", "nominal"}};
  return spec;
}

// The best configuration per fabric and GPU count: its throughput, the configuration in the
// tooltip.
Json best_spec(const std::vector<int>& gpus, const std::vector<std::string>& fabrics,
               const std::vector<Dimension>& dims, const std::vector<std::string>& choice) {
  Json spec = throughput_spec(Json::array(), gpus, fabrics, false, "throughput",
                              "Throughput of the best configuration per fabric and GPU count",
                              "samples/s", ",.0f");
  spec["data"] = {{"name", "best"}};
  spec["params"] = pick_params(dims, choice);
  spec["encoding"]["tooltip"].insert(spec["encoding"]["tooltip"].begin() + 1,
                                     {{"field", "variant"}, {"title", "best configuration"}});
  spec["encoding"]["opacity"] = {{"condition", {{"test", kFabricPicked}, {"value", 1}}},
                                 {"value", 0.15}};
  spec["encoding"]["detail"] = {{"field", "fabric"}, {"type", "nominal"}};
  return spec;
}

// Where the time goes, for the chosen configuration (and the highlighted fabric) only.
Json chosen_breakdown_spec(std::size_t scenarios, const std::vector<Dimension>& dims,
                           const std::vector<std::string>& choice) {
  Json spec = breakdown_spec(Json::array(), scenarios);
  spec["title"] =
      "Where one worker's iteration goes, chosen configuration (overlapped communication hides "
      "behind compute)";
  spec["data"] = {{"name", "parts"}};
  spec["params"] = pick_params(dims, choice);
  Json fields = Json::array({"label", "fabric", "iteration_ms"});
  for (const auto& d : dims) fields.push_back(d.name);
  spec["transform"] =
      Json::array({{{"lookup", "index"},
                    {"from", {{"data", {{"name", "rows"}}}, {"key", "index"}, {"fields", fields}}}},
                   {{"filter", chosen_test(dims)}},
                   {{"filter", kFabricPicked}}});
  return spec;
}

std::string controls_html(const std::vector<Dimension>& dims,
                          const std::vector<std::string>& choice,
                          const std::vector<std::string>& fabrics) {
  std::string h = "<div class=\"controls\" id=\"controls\">Configuration shown:\n";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const auto& d = dims[i];
    h += std::string("<label>") + d.title + " <select data-param=\"pick_" + d.name + "\">";
    for (std::size_t v = 0; v < d.values.size(); ++v) {
      h += "<option value=\"" + html_escape(d.values[v]) + "\"" +
           (d.values[v] == choice[i] ? " selected" : "") + ">" + html_escape(d.labels[v]) +
           "</option>";
    }
    h += "</select></label>\n";
  }
  h += "<label>highlight <select data-param=\"pick_fabric\"><option value=\"all\" "
       "selected>all fabrics</option>";
  for (const auto& f : fabrics) {
    h += "<option value=\"" + html_escape(f) + "\">" + html_escape(f) + "</option>";
  }
  h += "</select></label>\n</div>\n";
  return h;
}

// The best configuration per fabric (rows) and GPU count (columns).
std::string best_table_html(const WhatifReport& report, const std::vector<int>& gpus,
                            const std::vector<Best>& best) {
  std::string h = "<table class=\"best\">\n<tr><th>fabric</th>";
  for (int g : gpus) h += "<th>" + std::to_string(g) + (g == 1 ? " GPU" : " GPUs") + "</th>";
  h += "</tr>\n";
  for (const auto& f : report.grid.fabrics) {
    h += "<tr><th>" + html_escape(f) + "</th>";
    for (int g : gpus) {
      auto it = std::find_if(best.begin(), best.end(),
                             [&](const Best& b) { return b.fabric == f && b.gpus == g; });
      if (it == best.end()) {
        h += "<td></td>";
        continue;
      }
      const auto& row = report.rows[it->row];
      h += "<td class=\"n\">" + fmt("%.0f", row.result.throughput) + "<br><small>" +
           html_escape(sim::variant_label(report.grid, row.scenario)) + "</small></td>";
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

// The page's script for a sweep shown one configuration at a time: the plots share the data
// sets, and each control sets its parameter in every plot that declares it.
const char* const kChosenScript = R"(const views = {};
Promise.all(Object.keys(specs).map(function (id) {
  const spec = Object.assign({datasets: data}, specs[id]);
  return vegaEmbed('#' + id, spec, {actions: false, renderer: 'svg'})
    .then(function (result) { views[id] = result.view; });
})).then(function () {
  document.querySelectorAll('select[data-param]').forEach(function (select) {
    select.addEventListener('change', function () {
      const name = select.getAttribute('data-param');
      document.body.removeAttribute('data-selection-applied');
      Promise.all(Object.values(views).filter(function (view) {
        try { view.signal(name); return true; } catch (e) { return false; }
      }).map(function (view) {
        return view.signal(name, select.value).runAsync();
      })).then(function () {
        document.body.setAttribute('data-selection-applied', name + '=' + select.value);
      });
    });
  });
)";

// How every page's script ends: it says on <body> when the plots are drawn, or why not.
const char* const kScriptEnd =
    R"(  document.body.setAttribute('data-plots-rendered', String(Object.keys(specs).length));
}).catch(function (e) {
  document.body.setAttribute('data-plots-error', String(e));
  console.error(e);
});
</script>
</body>
</html>
)";

}  // namespace

std::string whatif_html(const WhatifReport& report, const PlotLibrary& plots) {
  const auto& grid = report.grid;
  // A sweep over more than fabric and GPU count is shown one configuration at a time.
  const std::vector<Dimension> dims = varied_dimensions(grid);
  const bool chosen = !dims.empty();
  Json rows = Json::array();
  Json parts = Json::array();
  Json timeline = Json::array();
  std::set<int> gpu_set;
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    const auto& sc = report.rows[i].scenario;
    const auto& r = report.rows[i].result;
    const std::string label = sim::point_label(grid, sc);
    std::string variant = sim::variant_label(grid, sc);
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
    if (chosen) {
      // The lines are per fabric (one configuration at a time); the label names the variant.
      rows.back().erase("series");
      rows.back().erase("variant");
      for (const auto& d : dims) rows.back()[d.name] = value_of(d, sc);
    }
    const Parts p = parts_of(r);
    const std::pair<const char*, Nanos> shares[] = {
        {"compute", p.compute}, {"update", p.update},
        {"io + h2d", p.io},     {"comm (exposed)", p.comm_exposed},
        {"idle", p.idle},       {"comm (overlapped)", p.comm_overlapped}};
    int order = 0;
    for (const auto& [name, t] : shares) {
      ++order;
      if (t <= 0) continue;
      if (chosen) {
        // The rest (label, fabric, configuration, iteration) is looked up in the rows.
        parts.push_back(
            {{"index", i}, {"part", name}, {"part_order", order}, {"ms", round6(ms(t))}});
        continue;
      }
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
    any_variant = any_variant || !sim::variant_label(grid, row.scenario).empty();
  Json specs = Json::object();
  Json data = Json::object();  // named data sets the linked plots share (chosen only)
  std::vector<Best> best;
  std::vector<std::string> choice;
  if (chosen) {
    best = best_rows(report, gpus);
    choice = initial_choice(report, dims, best);
    Json best_data = Json::array();
    for (const auto& b : best) {
      Json row = rows[b.row];
      row["variant"] = sim::variant_label(grid, report.rows[b.row].scenario);
      best_data.push_back(std::move(row));
    }
    data["rows"] = std::move(rows);
    data["parts"] = std::move(parts);
    data["best"] = std::move(best_data);
    specs["throughput"] =
        chosen_scaling_spec(gpus, grid.fabrics, dims, choice, "throughput",
                            "Throughput, chosen configuration", "samples/s", ",.0f");
    specs["efficiency"] =
        chosen_scaling_spec(gpus, grid.fabrics, dims, choice, "efficiency",
                            "Scaling efficiency, chosen configuration", "efficiency", ".0%");
    specs["best"] = best_spec(gpus, grid.fabrics, dims, choice);
    specs["breakdown"] = chosen_breakdown_spec(report.rows.size(), dims, choice);
  } else {
    specs["throughput"] = throughput_spec(rows, gpus, grid.fabrics, any_variant, "throughput",
                                          "Throughput", "samples/s", ",.0f");
    specs["efficiency"] = throughput_spec(rows, gpus, grid.fabrics, any_variant, "efficiency",
                                          "Scaling efficiency", "efficiency", ".0%");
    specs["breakdown"] = breakdown_spec(parts, report.rows.size());
  }
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
  if (chosen) {
    h += R"(<style>
.controls { position: sticky; top: 0; z-index: 5; background: #fff; padding: 0.5em 0;
            border-bottom: 1px solid #ddd; display: flex; flex-wrap: wrap; gap: 0 1.5em; }
table.best td { vertical-align: top; }
table.best small { color: #666; }
</style>
)";
  }
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
  h += "</ul>\n";
  if (chosen) {
    h += "<p>" + std::to_string(report.rows.size()) +
         " scenarios: the scaling and breakdown plots show one configuration at a time (first "
         "the one that is best for the most fabric and GPU count pairs); choose another, or "
         "highlight one fabric, here.</p>\n";
    h += controls_html(dims, choice, grid.fabrics);
  }
  h += "<h2>Scaling</h2>\n<div class=\"row\"><div id=\"throughput\"></div>"
       "<div id=\"efficiency\"></div></div>\n";
  if (chosen) {
    h += "<h2>Best configuration per fabric and GPU count</h2>\n<div id=\"best\"></div>\n";
    h += "<p>Samples/s of the best configuration of each fabric and GPU count, and the "
         "configuration:</p>\n";
    h += best_table_html(report, gpus, best);
  }
  h += "<h2>Breakdown</h2>\n<div id=\"breakdown\"></div>\n";
  if (const auto links = link_view_rows(report); !links.empty()) {
    h += "<h2>Busiest links</h2>\n<p>One iteration per fabric at its largest GPU count "
         "(flow-level tier): the links that carried most for their bandwidth.</p>\n<table>\n"
         "<tr><th>scenario</th><th>link</th><th>kind</th><th>busy</th><th>utilization</th>"
         "<th>GB</th></tr>\n";
    for (std::size_t i : links) {
      for (const auto& l : report.rows[i].result.busiest_links) {
        h += "<tr><td>" + html_escape(sim::point_label(grid, report.rows[i].scenario)) +
             "</td><td>" + html_escape(l.link) + "</td><td>" + html_escape(l.kind) +
             "</td><td class=\"n\">" + fmt("%.0f%%", 100 * l.busy) + "</td><td class=\"n\">" +
             fmt("%.0f%%", 100 * l.utilization) + "</td><td class=\"n\">" +
             fmt("%.3f", l.gigabytes) + "</td></tr>\n";
      }
    }
    h += "</table>\n";
  }
  if (!timeline.empty()) {
    h += "<h2>Timelines</h2>\n<p>Full timelines of every worker, for Perfetto: ";
    bool first = true;
    for (std::size_t i = 0; i < report.rows.size(); ++i) {
      if (report.rows[i].result.timeline.empty()) continue;
      const std::string f = "timelines/" + timeline_file_name(report.rows[i].scenario, i);
      h += std::string(first ? "" : ", ") + "<a href=\"" + html_escape(f) + "\">" + html_escape(f) +
           "</a>";
      first = false;
    }
    h += ".</p>\n<div id=\"timeline\"></div>\n";
  }
  if (chosen) {
    h += "<h2>Scenarios</h2>\n<details><summary>All " + std::to_string(report.rows.size()) +
         " scenarios</summary>\n";
    h += "<table>\n<tr><th>scenario</th><th>intra</th><th>inter</th>";
  } else {
    h += "<h2>Scenarios</h2>\n<table>\n<tr><th>scenario</th><th>intra</th><th>inter</th>";
  }
  h += "<th>iteration (ms)</th><th>samples/s</th><th>speed-up</th><th>efficiency</th>"
       "<th>exposed comm</th><th>bottleneck</th></tr>\n";
  for (const auto& row : report.rows) {
    const auto& r = row.result;
    h += "<tr class=\"" + r.bound + "\"><td>" + html_escape(sim::point_label(grid, row.scenario)) +
         "</td><td>" + html_escape(row.scenario.intra) + "</td><td>" +
         html_escape(row.scenario.inter) + "</td><td class=\"n\">" + fmt("%.2f", ms(r.iteration)) +
         "</td><td class=\"n\">" + fmt("%.0f", r.throughput) + "</td><td class=\"n\">" +
         fmt("%.2f", r.speedup) + "</td><td class=\"n\">" + fmt("%.0f%%", 100 * r.efficiency) +
         "</td><td class=\"n\">" + fmt("%.0f%%", 100 * exposed_share(r)) + "</td><td class=\"b\">" +
         html_escape(r.bottleneck) + "</td></tr>\n";
  }
  h += chosen ? "</table>\n</details>\n" : "</table>\n";
  h += "<p>Files beside this report: <code>report.md</code>, <code>results.csv</code>, "
       "<code>results.json</code>.</p>\n";
  h += "<script>" + script_safe(plots.vega) + "\n</script>\n";
  h += "<script>" + script_safe(plots.vega_lite) + "\n</script>\n";
  h += "<script>" + script_safe(plots.vega_embed) + "\n</script>\n";
  h += "<script>\nconst specs = " + json_for_script(specs.dump()) + ";\n";
  if (chosen) {
    h += "const data = " + json_for_script(data.dump()) + ";\n";
    return h + kChosenScript + kScriptEnd;
  }
  h += R"(Promise.all(Object.keys(specs).map(function (id) {
  return vegaEmbed('#' + id, specs[id], {actions: false, renderer: 'svg'});
})).then(function () {
)";
  return h + kScriptEnd;
}

}  // namespace dagsgd::reports
