// The scenario flags (scenario_options.h): one declaration and one help text per flag.
#include "scenario_options.h"

#include "command.h"

namespace dagsgd::tools {

namespace {

const char* const kOverlapHelp =
    "none, wfbp, mgwfbp, bucket:MB[,FIRST_MB] (PyTorch DDP), fusion:MB,CYCLE_MS (Horovod), or "
    "framework (the --stack framework's grouping; the default with such a stack)";

const char* const kShardingHelp =
    "none (allreduce), zero1 (optimizer state sharded), zero2 (and gradients), zero3 or fsdp "
    "(and parameters, all-gathered before each unit's forward and backward); docs/"
    "communication.md";

// The network-spec flags (a traced run keeps what it measured).
void add_network_flags(CLI::App& app, sim::NetworkSpec& n, ScenarioUse use) {
  add_flag_table(app, n, sim::network_spec_flags());
  if (use == ScenarioUse::kPredict) app.get_option("--network")->required();
  app.add_option_function<std::string>(
         "--prefetch", [&n](const std::string& v) { n.prefetch = v == "on"; },
         "Overlap input loading with the previous iteration: on, off (default on)")
      ->check(CLI::IsMember({"on", "off"}));
}

}  // namespace

bool ScenarioFlags::given(const std::string& flag) const {
  return app != nullptr && app->count(flag) > 0;
}

model::Expected<void> ScenarioFlags::refuse(std::initializer_list<const char*> flags,
                                            const std::string& why) const {
  for (const char* flag : flags) {
    if (given(flag)) return model::Error{flag + why};
  }
  return model::ok();
}

void add_scenario_flags(CLI::App& app, ScenarioFlags& f, ScenarioUse use) {
  f.app = &app;
  const bool sweep = use == ScenarioUse::kWhatif;
  if (use != ScenarioUse::kReplay) add_network_flags(app, f.network, use);
  if (use == ScenarioUse::kPredict) {
    app.add_option("--nodes", f.hardware.nodes, "Number of nodes")
        ->check(worker_count())
        ->capture_default_str();
  }
  if (use == ScenarioUse::kReplay) {
    app.add_option("--gpus", f.gpus,
                   "GPUs of the job the traced ranks stand for on the target fabric (default: "
                   "the run's ranks): each traced rank keeps its compute, the collectives are "
                   "priced for the groups they have at that scale (docs/communication.md)")
        ->check(worker_count());
    app.add_option("--nodes", f.hardware.nodes,
                   "Nodes of the job the traced ranks stand for: --gpus in whole nodes of "
                   "--gpus-per-node")
        ->check(worker_count());
  }
  auto* per_node = app.add_option(
      "--gpus-per-node", sweep ? f.grid.gpus_per_node : f.hardware.gpus_per_node,
      use == ScenarioUse::kReplay ? "Ranks per node on the target (default: from the run's "
                                    "hosts)"
                                  : "GPUs (workers) per node");
  per_node->check(worker_count());
  if (use != ScenarioUse::kReplay) per_node->capture_default_str();
  std::string& intra = sweep ? f.grid.default_intra : f.hardware.intra;
  std::string& inter = sweep ? f.grid.default_inter : f.hardware.inter;
  auto* intra_opt = app.add_option("--intra", intra,
                                   sweep ? "Intra-node link for fabrics that only name the "
                                           "inter-node one"
                                         : "Interconnect inside a node (pcie3, nvlink2, ...)");
  auto* inter_opt = app.add_option("--inter", inter,
                                   sweep ? "Inter-node link for fabrics that only name the "
                                           "intra-node one"
                                         : "Interconnect between nodes (10gbe, ib-edr, ...)");
  if (use == ScenarioUse::kReplay) {
    // A replay has a target fabric only when asked for one.
    intra.clear();
    inter.clear();
  } else {
    intra_opt->capture_default_str();
    inter_opt->capture_default_str();
  }
  app.add_option("--topology", f.hardware.topology,
                 "Node type of the cluster (a bundled one, see 'dagsgd topology list', or a "
                 "file): collectives become transfers that share its links (flow-level tier)");
  app.add_option("--cluster-network", f.hardware.cluster_network,
                 "How nodes are joined: single-switch, fat-tree:OVERSUB[:NODES_PER_LEAF], "
                 "rail[:OVERSUB]")
      ->capture_default_str();
  app.add_option(
         "--network-model", f.hardware.network_model,
         "analytic (each collective priced alone), flow (transfers share links), or auto "
         "(flow where --topology is given or the inter-node fabric has a burst_bytes shaper)")
      ->check(CLI::IsMember({"auto", "analytic", "flow"}))
      ->capture_default_str();
  app.add_option("--fabric-file", f.fabric_file,
                 "Extra fabric definitions (e.g. from 'dagsgd calibrate --out')")
      ->check(CLI::ExistingFile);
  app.add_option(
      "--stack", sweep ? f.grid.stack : f.exchange.stack,
      "Software stack above the links: a stack (" + model::bundled_stacks().list() +
          "), a short name (pytorch-ddp, horovod, nccl, ...), FRAMEWORK+LIBRARY (e.g. "
          "pytorch-ddp+nccl-2.7-socket; 'dagsgd stack list' shows them all), or a stack file, "
          "e.g. from 'dagsgd calibrate --stack S --link F --out': the library's algorithm choice "
          "and costs and the framework's grouping (docs/communication.md)");
  if (use != ScenarioUse::kReplay) {
    // Without --overlap, a stack whose framework groups gradients sets the grouping.
    app.parse_complete_callback([&f, sweep] {
      const std::string& stack = sweep ? f.grid.stack : f.exchange.stack;
      if (f.given("--overlap") || !sim::stack_groups_gradients(stack)) return;
      if (sweep) {
        f.grid.overlaps = {sim::kFrameworkOverlap};
      } else {
        f.exchange.overlap = sim::kFrameworkOverlap;
      }
    });
  }
  const std::string algorithms = model::collective_algorithms().list();
  if (sweep) {
    app.add_option("--fabrics", f.grid.fabrics,
                   "Fabrics to compare, comma-separated: catalog names (an intra-node fabric "
                   "replaces --intra, an inter-node one --inter) or INTRA+INTER pairs")
        ->required()
        ->delimiter(',');
    app.add_option("--gpus", f.grid.gpus,
                   "GPU counts, comma-separated (e.g. 1,4,8,16,32,64); a traced run: its own ranks "
                   "by default, each other count (a whole multiple of them) scales it")
        ->check(worker_count())
        ->delimiter(',');
    app.add_option("--algorithms", f.grid.algorithms, "Collective algorithms: " + algorithms)
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--overlap", f.grid.overlaps, std::string("Overlap policies: ") + kOverlapHelp)
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--precision", f.grid.precisions, "Gradient precisions: fp32, fp16")
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--topk", f.grid.topks, "Fractions of gradient elements sent (0 = dense)")
        ->check(fraction())
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--sharding", f.grid.shardings, std::string("Sharding levels: ") + kShardingHelp)
        ->delimiter(',')
        ->capture_default_str();
    app.add_option("--max-points", f.grid.max_points,
                   "Refuse a grid of more points than this (the product of the lists above)")
        ->check(whole_number(1, static_cast<long>(sim::kMaxSweepPoints)))
        ->capture_default_str();
    return;
  }
  app.add_option("--algorithm", f.exchange.algorithm,
                 use == ScenarioUse::kReplay
                     ? "Collective algorithm with a target fabric (default auto: the fabric's "
                       "measured allreduce latencies where it has them for the rank count, else "
                       "what the trace says, else the NCCL-like choice by size; 'measured' "
                       "insists on the measured latencies): " +
                           algorithms
                     : "Collective algorithm: " + algorithms)
      ->capture_default_str();
  if (use == ScenarioUse::kReplay) return;
  app.add_option("--overlap", f.exchange.overlap, kOverlapHelp)->capture_default_str();
  app.add_option("--precision", f.exchange.precision,
                 "Gradient precision on the wire and compute: fp32, fp16")
      ->capture_default_str();
  app.add_option("--topk", f.exchange.topk,
                 "Send only this fraction of gradient elements (0 = dense)")
      ->check(fraction())
      ->capture_default_str();
  app.add_option("--sharding", f.exchange.sharding, kShardingHelp)->capture_default_str();
}

model::Expected<sim::Catalogs> load_catalogs(const ScenarioFlags& f) {
  if (f.fabric_file.empty()) return sim::Catalogs::load();
  return sim::Catalogs::load({f.fabric_file});
}

model::Expected<int> gpus_per_node(const ScenarioFlags& f, int otherwise) {
  if (f.given("--gpus-per-node") || f.hardware.topology.empty()) return otherwise;
  auto node = sim::load_node_type(f.hardware.topology);
  if (!node) return model::with_context("--topology", node.error());
  return node->gpus_per_node();
}

}  // namespace dagsgd::tools
