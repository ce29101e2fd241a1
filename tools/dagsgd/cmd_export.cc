// dagsgd export: a traced run's DAG (the one replay simulates) written in another simulator's
// format; today Chakra execution traces, one file per rank, for ASTRA-sim.
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/reports/chakra_export.h"
#include "trace_inputs.h"

namespace dagsgd::tools {

namespace {

struct ExportFlags {
  TraceInputs inputs;
  std::string format;
  std::string out;
  bool force = false;
};

int run_export(const ExportFlags& o) {
  auto w = load_traces(o.inputs);
  if (!w) return report_error(w.error().message);
  const auto& dag = (*w)->dag();
  const auto ranks = reports::chakra_ranks((*w)->run(), dag);
  std::vector<std::string> files;
  files.reserve(ranks.size());
  for (const auto& r : ranks) files.push_back(reports::chakra_file_name(r.rank));
  if (int rc = prepare_outputs(o.out, files, o.force); rc != kExitOk) return rc;
  if (o.force) reports::remove_stale_chakra_files(o.out, ranks);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const std::string bytes = reports::chakra_trace_file((*w)->run(), dag, ranks[i]);
    if (int rc = write_output(o.out, files[i], bytes, true); rc != kExitOk) return rc;
  }
  print(o.inputs.json ? reports::chakra_export_json(dag, ranks, o.out)
                      : reports::chakra_export_text(dag, ranks, o.out));
  return kExitOk;
}

}  // namespace

void add_export(CLI::App& root, Action& action) {
  auto [sub, o] = add_command<ExportFlags>(
      root, action, "export",
      "Write a traced run's DAG (the one replay simulates) in another simulator's format.\n"
      "chakra: one Chakra execution trace per rank, DIR/dagsgd.<rank>.et, for ASTRA-sim\n"
      "(--workload-configuration=DIR/dagsgd); docs/formats.md lists what maps to what.\n"
      "Example: dagsgd export --format chakra runs/mlp-wfbp --out chakra-mlp",
      run_export);
  add_trace_inputs(*sub, o->inputs);
  sub->add_option("--format", o->format, "Output format: chakra")
      ->required()
      ->check(CLI::IsMember({"chakra"}));
  sub->add_option("--out", o->out, "Directory for the files")->required();
  sub->add_flag("--force", o->force, "Overwrite existing files");
}

}  // namespace dagsgd::tools
