// Replay and analysis of a traced run: simulate its DAG with measured compute and measured or
// modeled communication, and explain the iteration (breakdowns, critical path, stragglers).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/units.h"
#include "dagsgd/sim/cluster_topology.h"
#include "dagsgd/sim/engine.h"
#include "dagsgd/sim/flow_network.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::sim {

// Time of one rank in one iteration (or the mean over iterations), ns.
struct RankTime {
  int rank = 0;
  model::Nanos window = 0;        // the iteration
  model::Nanos compute = 0;       // forward, backward, update, io (kernels on a GPU)
  model::Nanos comm_total = 0;    // union of the rank's collectives
  model::Nanos comm_exposed = 0;  // collectives while nothing computes
  model::Nanos overlap = 0;       // collectives while computing
  model::Nanos memcpy = 0;        // device copies and memsets
  model::Nanos host = 0;          // host work outside the phases (launches, issues, waits)
  model::Nanos idle = 0;          // nothing of the rank runs
};

// Where a replay's collective durations come from.
enum class CommSource {
  kMeasured,  // the traced durations
  kRun,       // a model fitted to the run's own collectives
  kFabric,    // a target fabric's model
};
const char* comm_source_name(CommSource s);  // "measured", "run", "fabric"

struct CommModelInfo {
  CommSource source = CommSource::kMeasured;
  std::string algorithm;
  model::Topology topology;
  int points = 0;           // (bytes, time) pairs used for a fit
  double rms_relative = 0;  // of the fit
  std::string note;
};

enum class CommMode { kModeled, kMeasured };

struct ReplayOptions {
  CommMode comm = CommMode::kModeled;
  // A target fabric (intra/inter links): when set, replaces the run's own calibration.
  std::optional<model::Topology> target;
  std::string algorithm = "auto";  // "auto": what the trace says, else NCCL-like choice
  // A software stack for the target (model/stack.h): its algorithm choice and costs; "auto"
  // then is the stack's choice, not the trace's.
  std::shared_ptr<const model::StackSpec> stack;
  // Host CPUs (our runtime's CPU training only): when set, every rank's computation runs on its
  // machine's cores, this many per machine (sim/host_cpu.h). Traced durations are first divided
  // by the traced oversubscription (ranks on the rank's machine / its CPUs, from the manifest's
  // 'machines' and 'cpus'). 0 = not modeled: measured durations as they are.
  int cpus = 0;
  // With `cpus`: ranks per machine on the target, consecutive ranks together (0: as traced).
  int ranks_per_machine = 0;
  // The flow-level tier (with a target): the modeled collectives become transfers on this
  // cluster's links, progressing together and sharing them; its GPU ranks are the run's ranks
  // (with `world`, the target's GPUs).
  std::shared_ptr<const ClusterTopology> cluster;
  // The target's GPU count when the traced ranks stand for a larger job (0: the run's own
  // ranks). `target` then has that many GPUs (nodes x GPUs per node), and the collectives are
  // priced for the groups they would have there (check_scale, docs/communication.md): the whole
  // traced world grows to `world`, a group of one rank per traced node to the target's nodes,
  // a node-local group keeps its size, any other keeps its size and is named.
  int world = 0;
};

// How a replay scaled to another GPU count (ReplayOptions::world) priced the traced groups.
struct ScaleInfo {
  int traced = 0;      // the ranks of the traced job; 0: not scaled
  int gpus = 0;        // the target's
  int grown = 0;       // collectives whose group grew (the whole world, one rank per traced node)
  int node_local = 0;  // collectives that kept their size on one node
  // Collectives that kept their traced size although neither node-local nor growing, by
  // "allreduce of 3 ranks".
  std::vector<std::pair<std::string, int>> kept;
  // What the trace cannot say at the new scale, in one sentence.
  std::string note;
};

// How the host CPUs were modeled (ReplayResult::cpu).
struct CpuModelInfo {
  bool modeled = false;
  int traced_machines = 0;
  double traced_oversubscription = 1;  // the largest: ranks per CPU on one traced machine
  int machines = 0;                    // on the target
  int cpus = 0;                        // per target machine
  double oversubscription = 1;         // the largest on the target
};

struct Straggler {
  int collective = 0;        // index into TraceDag::collectives
  int rank = 0;              // the last to arrive
  model::Nanos late_by = 0;  // its arrival after the next-latest rank's
};

struct PathShare {
  std::string what;  // task kind, or "wait"
  model::Nanos time = 0;
};

struct ReplayResult {
  std::vector<model::Nanos> measured_iteration;   // main rank, every iteration
  std::vector<model::Nanos> predicted_iteration;  // simulated, every iteration
  int warmup = 0;
  double measured_mean_s = 0;  // over the iterations after the warm-up
  double predicted_mean_s = 0;
  double error = 0;                       // (predicted - measured) / measured
  std::vector<RankTime> measured_ranks;   // mean per iteration, per rank
  std::vector<RankTime> predicted_ranks;  // the same from the simulated timeline
  CommModelInfo comm;
  CpuModelInfo cpu;
  int modeled_collectives = 0;   // collectives whose duration came from the model
  int measured_collectives = 0;  // kept as measured (no size, or --comm measured)
  // Of those, the ones a modeled replay could not price, counted by reason ("barrier: no plan
  // in the model", "allgather: no recorded size", "allreduce: one rank"); empty when every
  // collective was priced or communication is measured.
  std::vector<std::pair<std::string, int>> unpriced_collectives;
  // The critical path of the median iteration (simulated), composition largest first.
  int critical_path_iteration = 0;
  std::vector<PathShare> critical_path;
  std::vector<std::string> critical_path_tasks;  // "rank1 kernel 'ncclKernel...'", first 40
  std::size_t critical_path_length = 0;
  std::vector<int> critical_path_ranks;  // ranks the path visits
  std::string bound;
  double if_comm_free = 0;                 // relative change of the predicted mean iteration
  double if_double_network = 0;            // with every collective twice as fast
  std::vector<Straggler> stragglers;       // one per joined collective with a late rank
  std::string network_model = "analytic";  // "flow" with a cluster
  std::vector<LinkUse> busiest_links;      // flow tier: of the critical-path iteration
  ScaleInfo scale;                         // with ReplayOptions::world
  SimResult sim;
};

// The collectives a replay kept measured because the model cannot price them, in one line
// ("3 barrier: no plan in the model, 1 allgather: no recorded size"); "" when none.
std::string unpriced_summary(const ReplayResult& r);

// Whether `options.world` can scale `tdag`: communication modeled on a target of that many
// GPUs, a whole multiple of the traced ranks, on which every node-local and replica group has
// its place, and at least one collective that grows with the job (the whole traced world, or
// one rank per traced node, with a recorded size). replay_trace checks it too.
model::Expected<void> check_scale(const trace::TraceDag& tdag, const ReplayOptions& options);
// Its first condition alone: `gpus` a whole multiple of the `traced` ranks, in whole nodes of
// `gpus_per_node` (fewer GPUs than a node: one node).
model::Expected<void> check_scale_count(int traced, int gpus, int gpus_per_node);

// The sentence a scaled replay's output carries (ScaleInfo::note): "scaled from 2 traced ranks
// to 64: each traced rank's compute stands for 32 GPUs; per-rank noise at 64 GPUs is not in the
// trace"; of several counts, "to 16, 64: ... for 8, 32 GPUs; ... at 16, 64 GPUs ...".
std::string scale_note(int traced, const std::vector<int>& gpus);

// The collectives a scaled replay kept at their traced group size, in one line ("3 allreduce
// of 3 ranks"); "" when none.
std::string kept_size_summary(const ScaleInfo& s);

// `tdag` keeps measured durations; the replay works on a copy of the durations. Everything it
// needs of the run is in the DAG (trace::TraceDag).
model::Expected<ReplayResult> replay_trace(const trace::TraceDag& tdag,
                                           const ReplayOptions& options);

// The measured per-rank means per iteration after the run's warm-up (ReplayResult's
// measured_ranks), without replaying.
std::vector<RankTime> measured_rank_times(const trace::TraceDag& tdag);
// The same per rank for every iteration, the warm-up's included: [rank][iteration], each
// rank's iterations between its own boundaries (the main rank's when it has none).
std::vector<std::vector<RankTime>> measured_iteration_times(const trace::TraceDag& tdag);

// Simple topology for the run: nodes from the hosts the run recorded (ours) or 8 GPUs per node.
model::Topology run_topology(const trace::TraceDag& tdag);

}  // namespace dagsgd::sim
