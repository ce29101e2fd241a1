// dagsgd analyze: where the time goes in a traced run (per rank, critical path across ranks,
// stragglers, bottleneck), from its DAG replayed with the measured durations.
#include "command.h"
#include "dagsgd/reports/trace_report.h"
#include "trace_inputs.h"

namespace dagsgd::tools {

namespace {

constexpr const char* kAnalyzeHelp =
    "Where the time goes in a traced run: per rank compute, communication (total, exposed,\n"
    "overlapped), memcpy, host and idle time; the critical path of an iteration across\n"
    "ranks; stragglers; the bottleneck with what-if bounds.\n"
    "Example: dagsgd analyze runs/mlp-wfbp    dagsgd analyze rank0.json.gz rank1.json.gz";

int run_analyze(const TraceInputs& in) {
  auto w = load_traces(in);
  if (!w) return report_error(w.error().message);
  sim::ReplayOptions ro;
  ro.comm = sim::CommMode::kMeasured;
  auto r = sim::replay_trace((*w)->dag(), ro);
  if (!r) return report_error(r.error().message);
  print(in.json ? reports::analyze_json((*w)->run(), (*w)->dag(), *r)
                : reports::analyze_text((*w)->run(), (*w)->dag(), *r));
  return kExitOk;
}

}  // namespace

void add_analyze(CLI::App& root, Action& action) {
  auto [sub, in] = add_command<TraceInputs>(root, action, "analyze", kAnalyzeHelp, run_analyze);
  add_trace_inputs(*sub, *in);
}

}  // namespace dagsgd::tools
