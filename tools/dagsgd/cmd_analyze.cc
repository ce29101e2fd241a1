// dagsgd analyze: where the time goes in a traced run (per rank, critical path across ranks,
// stragglers, bottleneck), from its DAG replayed with the measured durations.
#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/job_effects_report.h"
#include "dagsgd/reports/trace_report.h"
#include "dagsgd/sim/collective_summary.h"
#include "trace_inputs.h"

namespace dagsgd::tools {

namespace {

struct AnalyzeFlags {
  TraceInputs inputs;
  std::string effects_out;
  bool force = false;
  std::string intra, inter;  // the fabrics the run ran on, for the collectives' bandwidth
};

constexpr const char* kAnalyzeHelp =
    "Where the time goes in a traced run: per rank compute, communication (total, exposed,\n"
    "overlapped), memcpy, host and idle time; the critical path of an iteration across\n"
    "ranks; stragglers; the bottleneck with what-if bounds; the collectives by type (count,\n"
    "bytes, time, bus bandwidth); the job effects (compute kernels slowed beside\n"
    "communication kernels, per-rank iteration noise).\n"
    "Example: dagsgd analyze runs/mlp-wfbp    dagsgd analyze rank0.json.gz rank1.json.gz\n"
    "         dagsgd analyze trace.json.gz --effects-out effects.json\n"
    "         dagsgd analyze trace.json.gz --intra nvlink3 --inter ib-hdr";

int run_analyze(const AnalyzeFlags& o) {
  const TraceInputs& in = o.inputs;
  if (!o.effects_out.empty() && !o.force && model::file_exists(o.effects_out)) {
    return report_error("--effects-out '" + o.effects_out + "' exists; add --force to replace it");
  }
  if (o.intra.empty() != o.inter.empty()) {
    return report_error("--intra and --inter go together (the fabrics the run ran on)");
  }
  auto w = load_traces(in);
  if (!w) return report_error(w.error().message);
  std::optional<model::Topology> fabric;
  if (!o.intra.empty()) {
    auto catalogs = sim::Catalogs::load();
    if (!catalogs) return report_error(catalogs.error().message);
    auto t = sim::traced_fabric((*w)->dag(), o.intra, o.inter, catalogs->hardware);
    if (!t) return report_error(t.error().message);
    fabric = *t;
  }
  const auto collectives = sim::summarize_collectives((*w)->dag(), fabric);
  sim::ReplayOptions ro;
  ro.comm = sim::CommMode::kMeasured;
  auto r = sim::replay_trace((*w)->dag(), ro);
  if (!r) return report_error(r.error().message);
  const sim::JobEffects effects = sim::measure_job_effects((*w)->run(), (*w)->dag());
  if (!o.effects_out.empty()) {
    std::string source;
    for (const auto& p : in.paths) source += (source.empty() ? "" : " ") + p;
    auto written =
        model::write_file(o.effects_out, reports::job_effects_file(effects, source), o.force);
    if (!written) return report_error(written.error().message, kExitFailure);
  }
  print(in.json ? reports::analyze_json((*w)->run(), (*w)->dag(), *r, effects, collectives)
                : reports::analyze_text((*w)->run(), (*w)->dag(), *r, effects, collectives));
  return kExitOk;
}

}  // namespace

void add_analyze(CLI::App& root, Action& action) {
  auto [sub, o] = add_command<AnalyzeFlags>(root, action, "analyze", kAnalyzeHelp, run_analyze);
  add_trace_inputs(*sub, o->inputs);
  sub->add_option("--effects-out", o->effects_out,
                  "Write the measured interference and iteration noise to FILE, the job-effects "
                  "file predict and whatif read with --effects (docs/formats.md)");
  sub->add_flag("--force", o->force, "Replace an existing --effects-out file");
  sub->add_option("--intra", o->intra,
                  "The fabric inside a node the run ran on: each collective type's achieved bus "
                  "bandwidth is shown beside the links its groups cross (with --inter)");
  sub->add_option("--inter", o->inter, "The fabric between nodes the run ran on (with --intra)");
}

}  // namespace dagsgd::tools
