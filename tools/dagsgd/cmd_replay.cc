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
  // --intra, --inter, --fabric-file, --algorithm, --gpus-per-node, --gpus, --nodes
  ScenarioFlags target;
  std::string comm = "model";
  int cpus = 0;
  int ranks_per_machine = 0;
  std::string timeline;
  bool force = false;
};

// What the flags ask of the run (sim::ReplayRequest).
sim::ReplayRequest request(const ReplayFlags& o) {
  return {.hardware = o.target.hardware,
          .exchange = o.target.exchange,
          .measured_comm = o.comm == "measured",
          .cpus = o.cpus,
          .ranks_per_machine = o.ranks_per_machine,
          .gpus = o.target.gpus,
          .nodes = o.target.given("--nodes") ? o.target.hardware.nodes : 0,
          .given = given_options(*o.target.app)};
}

constexpr const char* kReplayHelp =
    "Simulate a traced run with its measured compute and modeled (or measured)\n"
    "communication; print predicted vs measured iteration time and the error.\n"
    "Example: dagsgd replay runs/mlp-wfbp --json --timeline sim.json\n"
    "         dagsgd replay runs/mlp-wfbp --intra nvlink2 --inter ib-edr\n"
    "         dagsgd replay runs/mlp-wfbp --intra nvlink2 --inter ib-edr --gpus 64 \\\n"
    "           --gpus-per-node 8";

int run_replay(const ReplayFlags& o) {
  const sim::ReplayRequest req = request(o);
  if (auto ok = sim::check_replay_request(req); !ok) return report_error(ok.error().message);
  if (!o.timeline.empty() && !o.force && model::file_exists(o.timeline)) {
    return report_error("--timeline '" + o.timeline + "' exists; add --force to replace it");
  }
  auto w = load_traces(o.inputs);
  if (!w) return report_error(w.error().message);
  // The catalogs price a target fabric; the run's own network needs none.
  auto catalogs = req.hardware.intra.empty() ? sim::Catalogs{} : load_catalogs(o.target);
  if (!catalogs) return report_error(catalogs.error().message);
  auto ro = sim::replay_request_options((*w)->dag(), req, *catalogs);
  if (!ro) return report_error(ro.error().message);
  auto r = sim::replay_trace((*w)->dag(), *ro);
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
