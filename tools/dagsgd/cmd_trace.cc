// dagsgd analyze / dagsgd replay: from the traces of a real run to its DAG, simulated replay,
// critical path and bottleneck (docs/analysis.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/trace_report.h"
#include "dagsgd/sim/trace_replay.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::tools {

namespace {

struct TraceOptions {
  std::vector<std::string> inputs;
  bool strict = false;
  bool json = false;
  // replay only
  std::string comm = "model";
  std::string intra;
  std::string inter;
  std::string fabric_file;
  std::string algorithm = "auto";
  int gpus_per_node = 0;
  int cpus = 0;
  int ranks_per_machine = 0;
  std::string timeline;
  bool force = false;
};

struct Loaded {
  trace::ImportedRun run;
  trace::TraceDag dag;
};

model::Expected<Loaded> load(const TraceOptions& o) {
  trace::ImportOptions io;
  io.strict = o.strict;
  auto run = trace::import_run(o.inputs, io);
  if (!run) return run.error();
  auto dag = trace::build_trace_dag(*run);
  if (!dag) return dag.error();
  return Loaded{std::move(*run), std::move(*dag)};
}

void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

int run_analyze(const TraceOptions& o) {
  auto l = load(o);
  if (!l) return report_error(l.error().message);
  sim::ReplayOptions ro;
  ro.comm = sim::CommMode::kMeasured;
  auto r = sim::replay_trace(l->dag, l->run, ro);
  if (!r) return report_error(r.error().message);
  print(o.json ? reports::analyze_json(l->run, l->dag, *r)
               : reports::analyze_text(l->run, l->dag, *r));
  return kExitOk;
}

int run_replay(const TraceOptions& o) {
  if (o.comm != "model" && o.comm != "measured") {
    return report_error("--comm '" + o.comm + "': expected model or measured");
  }
  if (o.intra.empty() != o.inter.empty()) {
    return report_error("--intra and --inter go together (the target fabric)");
  }
  if (!o.fabric_file.empty() && o.intra.empty()) {
    return report_error("--fabric-file needs --intra and --inter");
  }
  if (o.comm == "measured" && !o.intra.empty()) {
    return report_error("--comm measured replays the traced network; it takes no target fabric");
  }
  if (o.algorithm != "auto" && o.intra.empty()) {
    return report_error(
        "--algorithm applies to a target fabric (--intra/--inter); the run's own "
        "calibration uses the ring formula");
  }
  if (o.algorithm != "auto") {
    auto names = model::comm_algorithm_names();
    names.emplace_back(model::kMeasuredAlgorithm);
    bool known = false;
    std::string list;
    for (const auto& n : names) {
      known = known || n == o.algorithm;
      list += (list.empty() ? "" : ", ") + n;
    }
    if (!known) return report_error("--algorithm '" + o.algorithm + "': unknown; valid: " + list);
  }
  if (!o.timeline.empty() && !o.force && model::file_exists(o.timeline)) {
    return report_error("--timeline '" + o.timeline + "' exists; add --force to replace it");
  }
  sim::ReplayOptions ro;
  ro.comm = o.comm == "measured" ? sim::CommMode::kMeasured : sim::CommMode::kModeled;
  ro.algorithm = o.algorithm;
  if (o.ranks_per_machine > 0 && o.cpus == 0) {
    return report_error("--ranks-per-machine needs --cpus (the cores of each machine)");
  }
  ro.cpus = o.cpus;
  ro.ranks_per_machine = o.ranks_per_machine;
  if (!o.intra.empty()) {
    auto catalog = model::HardwareCatalog::load_default();
    if (!catalog) return report_error(catalog.error().message);
    if (!o.fabric_file.empty()) {
      auto added = catalog->add_fabric_file(o.fabric_file);
      if (!added) return report_error(added.error().message);
    }
    auto intra = catalog->fabric(o.intra);
    if (!intra) return report_error("--intra: " + intra.error().message);
    auto inter = catalog->fabric(o.inter);
    if (!inter) return report_error("--inter: " + inter.error().message);
    model::Topology t;
    t.nodes = 0;
    t.gpus_per_node = 0;
    t.intra = model::LinkCost::from_fabric(*intra);
    t.inter = model::LinkCost::from_fabric(*inter);
    ro.target = t;
  }
  auto l = load(o);
  if (!l) return report_error(l.error().message);
  if (ro.target && o.gpus_per_node > 0) {
    model::Topology base = sim::run_topology(l->run, l->dag);
    int p = base.workers();
    if (p % o.gpus_per_node != 0) {
      return report_error("--gpus-per-node " + std::to_string(o.gpus_per_node) +
                          " does not divide the " + std::to_string(p) + " ranks of the run");
    }
    ro.target->gpus_per_node = o.gpus_per_node;
    ro.target->nodes = p / o.gpus_per_node;
  }
  auto r = sim::replay_trace(l->dag, l->run, ro);
  if (!r) return report_error(r.error().message);
  if (!o.timeline.empty()) {
    auto w =
        model::write_file(o.timeline, reports::simulated_timeline(l->run, l->dag, *r), o.force);
    if (!w) return report_error(w.error().message);
  }
  print(o.json ? reports::replay_json(l->run, l->dag, *r)
               : reports::replay_text(l->run, l->dag, *r));
  return kExitOk;
}

void add_inputs(CLI::App* sub, TraceOptions& o) {
  sub->add_option("RUN", o.inputs,
                  "A run directory (dagsgd train --trace / dagsgd collect), a directory of "
                  "Kineto traces, or one Kineto trace file per rank (.json, .json.gz)")
      ->required();
  sub->add_flag("--strict", o.strict, "Any bad record in a trace is an error (exit 2)");
  sub->add_flag("--json", o.json, "Print one JSON object instead of text");
}

}  // namespace

void add_analyze(CLI::App& root, Action& action) {
  auto opts = std::make_shared<TraceOptions>();
  CLI::App* sub = root.add_subcommand(
      "analyze",
      "Where the time goes in a traced run: per rank compute, communication (total, exposed,\n"
      "overlapped), memcpy, host and idle time; the critical path of an iteration across\n"
      "ranks; stragglers; the bottleneck with what-if bounds.\n"
      "Example: dagsgd analyze runs/mlp-wfbp    dagsgd analyze rank0.json.gz rank1.json.gz");
  add_inputs(sub, *opts);
  sub->callback([opts, &action] { action = [opts] { return run_analyze(*opts); }; });
}

void add_replay(CLI::App& root, Action& action) {
  auto opts = std::make_shared<TraceOptions>();
  CLI::App* sub = root.add_subcommand(
      "replay",
      "Simulate a traced run with its measured compute and modeled (or measured)\n"
      "communication; print predicted vs measured iteration time and the error.\n"
      "Example: dagsgd replay runs/mlp-wfbp --json --timeline sim.json\n"
      "         dagsgd replay runs/mlp-wfbp --intra nvlink2 --inter ib-edr");
  add_inputs(sub, *opts);
  sub->add_option("--comm", opts->comm,
                  "model: collectives from the communication model (calibrated on the run's own "
                  "collectives, or the target fabric); measured: their traced durations")
      ->check(CLI::IsMember({"model", "measured"}));
  sub->add_option("--intra", opts->intra, "Target fabric inside a node (fabrics.json name)");
  sub->add_option("--inter", opts->inter, "Target fabric between nodes (fabrics.json name)");
  sub->add_option("--fabric-file", opts->fabric_file,
                  "Extra fabric definitions (e.g. from 'dagsgd calibrate --out')");
  sub->add_option("--algorithm", opts->algorithm,
                  "Collective algorithm with a target fabric (default auto: the fabric's "
                  "measured allreduce latencies where it has them for the rank count, else what "
                  "the trace says, else the NCCL-like choice by size; 'measured' insists on the "
                  "measured latencies)");
  sub->add_option("--gpus-per-node", opts->gpus_per_node,
                  "Ranks per node on the target (default: from the run's hosts)");
  sub->add_option("--cpus", opts->cpus,
                  "Model host CPUs (dagsgd train runs): each machine has this many cores, shared "
                  "by its ranks' computation; traced durations are first divided by the traced "
                  "ranks per CPU (from the run's manifest)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--ranks-per-machine", opts->ranks_per_machine,
                  "With --cpus: ranks per machine on the target, consecutive ranks together "
                  "(default: as traced)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--timeline", opts->timeline,
                  "Write the simulated run as a Perfetto-loadable trace to FILE");
  sub->add_flag("--force", opts->force, "Replace an existing --timeline file");
  sub->callback([opts, &action] { action = [opts] { return run_replay(*opts); }; });
}

}  // namespace dagsgd::tools
