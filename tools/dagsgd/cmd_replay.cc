// dagsgd replay: simulate a traced run with its measured compute and modeled (or measured)
// communication, on its own network or a target fabric; predicted vs measured.
#include "command.h"
#include "dagsgd/model/io.h"
#include "dagsgd/reports/trace_report.h"
#include "scenario_options.h"
#include "trace_inputs.h"

namespace dagsgd::tools {

namespace {

struct ReplayFlags {
  TraceInputs inputs;
  ScenarioFlags target;  // --intra, --inter, --fabric-file, --algorithm, --gpus-per-node
  std::string comm = "model";
  int cpus = 0;
  int ranks_per_machine = 0;
  std::string timeline;
  bool force = false;
};

// The flags' combinations that cannot mean anything, before the run is read.
model::Expected<void> check_flags(const ReplayFlags& o) {
  const ScenarioFlags& t = o.target;
  if (t.hardware.intra.empty() != t.hardware.inter.empty()) {
    return model::Error{"--intra and --inter go together (the target fabric)"};
  }
  if (t.hardware.intra.empty()) {  // the run's own network
    DAGSGD_TRY(t.refuse({"--fabric-file"}, " needs --intra and --inter"));
    DAGSGD_TRY(t.refuse({"--gpus-per-node"},
                        " lays the run out on a target fabric (--intra/--inter); without one the "
                        "run keeps its own layout"));
    DAGSGD_TRY(t.refuse({"--algorithm"},
                        " applies to a target fabric (--intra/--inter); the run's own calibration "
                        "uses the ring formula"));
    DAGSGD_TRY(t.refuse({"--stack"}, " applies to a target fabric (--intra/--inter)"));
  } else if (o.comm == "measured") {
    return model::Error{"--comm measured replays the traced network; it takes no target fabric"};
  }
  if (auto known = model::collective_algorithms().check(t.exchange.algorithm); !known) {
    return model::with_context("--algorithm", known.error());
  }
  if (o.ranks_per_machine > 0 && o.cpus == 0) {
    return model::Error{"--ranks-per-machine needs --cpus (the cores of each machine)"};
  }
  if (!o.timeline.empty() && !o.force && model::file_exists(o.timeline)) {
    return model::Error{"--timeline '" + o.timeline + "' exists; add --force to replace it"};
  }
  return model::ok();
}

constexpr const char* kReplayHelp =
    "Simulate a traced run with its measured compute and modeled (or measured)\n"
    "communication; print predicted vs measured iteration time and the error.\n"
    "Example: dagsgd replay runs/mlp-wfbp --json --timeline sim.json\n"
    "         dagsgd replay runs/mlp-wfbp --intra nvlink2 --inter ib-edr";

int run_replay(const ReplayFlags& o) {
  if (auto ok = check_flags(o); !ok) return report_error(ok.error().message);
  auto w = load_traces(o.inputs);
  if (!w) return report_error(w.error().message);
  sim::ReplayOptions ro;
  ro.algorithm = o.target.exchange.algorithm;
  if (!o.target.hardware.intra.empty()) {  // --gpus-per-node, else as traced
    auto catalogs = load_catalogs(o.target);
    if (!catalogs) return report_error(catalogs.error().message);
    auto target = sim::replay_target((*w)->dag(), o.target.hardware, o.target.exchange, *catalogs,
                                     !o.target.given("--gpus-per-node"));
    if (!target) return report_error(target.error().message);
    ro = std::move(*target);
  } else if (!o.target.hardware.topology.empty() || o.target.hardware.network_model == "flow") {
    return report_error(
        "--topology and --network-model flow replay onto a target fabric: give "
        "--intra and --inter");
  }
  ro.comm = o.comm == "measured" ? sim::CommMode::kMeasured : sim::CommMode::kModeled;
  ro.cpus = o.cpus;
  ro.ranks_per_machine = o.ranks_per_machine;
  auto r = sim::replay_trace((*w)->dag(), ro);
  if (!r) return report_error(r.error().message);
  if (!o.timeline.empty()) {
    auto written =
        model::write_file(o.timeline, reports::simulated_timeline((*w)->dag(), *r), o.force);
    if (!written) return report_error(written.error().message);
  }
  const auto& run = (*w)->run();
  print(o.inputs.json ? reports::replay_json(run, (*w)->dag(), *r)
                      : reports::replay_text(run, (*w)->dag(), *r));
  return kExitOk;
}

}  // namespace

void add_replay(CLI::App& root, Action& action) {
  auto [sub, o] = add_command<ReplayFlags>(root, action, "replay", kReplayHelp, run_replay);
  add_trace_inputs(*sub, o->inputs);
  add_scenario_flags(*sub, o->target, ScenarioUse::kReplay);
  sub->add_option("--comm", o->comm,
                  "model: collectives from the communication model (calibrated on the run's own "
                  "collectives, or the target fabric); measured: their traced durations")
      ->check(CLI::IsMember({"model", "measured"}));
  sub->add_option("--cpus", o->cpus,
                  "Model host CPUs (dagsgd train runs): each machine has this many cores, shared "
                  "by all its ranks (MPI ranks poll while they wait); traced durations are "
                  "divided by the traced ranks per CPU (from the run's manifest) and multiplied "
                  "by the target's")
      ->check(worker_count());
  sub->add_option("--ranks-per-machine", o->ranks_per_machine,
                  "With --cpus: ranks per machine on the target, consecutive ranks together "
                  "(default: as traced)")
      ->check(worker_count());
  sub->add_option("--timeline", o->timeline,
                  "Write the simulated run as a Perfetto-loadable trace to FILE");
  sub->add_flag("--force", o->force, "Replace an existing --timeline file");
}

}  // namespace dagsgd::tools
