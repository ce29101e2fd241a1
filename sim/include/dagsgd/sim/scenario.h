// Scenarios: what the user names (a network or a traced run, the hardware, how gradients are
// exchanged) resolved once against the catalogs into what predict, replay, whatif and validate
// simulate. Names are checked here, and only here.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/flag_table.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/sharding.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/sim/cluster_topology.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/trace_replay.h"
#include "dagsgd/trace/bcaffe_log.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::sim {

// A scenario as the user stated it, key/value pairs in a fixed order (echoed by reports).
using Description = std::vector<std::pair<std::string, std::string>>;

// The catalogs names resolve against, loaded once per command.
struct Catalogs {
  model::HardwareCatalog hardware;
  model::ComputeEfficiency efficiency;
  // The bundled catalogs (datasets/hardware/) plus the fabrics of `fabric_files`.
  static model::Expected<Catalogs> load(const std::vector<std::string>& fabric_files = {});
};

// ---------------------------------------------------------------------------------------------
// Hardware and exchange: what a sweep varies.

struct HardwareSpec {
  int nodes = 1;
  int gpus_per_node = 1;
  std::string intra = "pcie3";  // fabric inside a node
  std::string inter = "10gbe";  // fabric between nodes
  // The cluster's topology: a node type (bundled name or file, docs/topology.md), "" for none.
  std::string topology;
  // How nodes are joined: single-switch, fat-tree:OVERSUB[:NODES_PER_LEAF], rail[:OVERSUB].
  std::string cluster_network = "single-switch";
  // analytic (each collective priced alone by its formula), flow (transfers share the
  // topology's links; without a topology, the plain two-fabric one), or auto: flow where a
  // topology is given.
  std::string network_model = "auto";
};

struct ExchangeSpec {
  std::string algorithm = "auto";  // a model::collective_algorithms() name
  // none, wfbp, mgwfbp, bucket:MB[,FIRST_MB], fusion:MB,CYCLE_MS, or framework (the stack's
  // framework grouping)
  std::string overlap = "wfbp";
  std::string precision = "fp32";  // fp32, fp16
  double topk = 0;                 // fraction of gradient elements sent; 0 = dense
  std::string stack;               // a software stack (bundled name or file); "" = none
  std::string sharding = "none";   // none, zero1, zero2, zero3, fsdp (model::parse_sharding)
};

// The overlap policy that stands for the stack framework's grouping.
inline constexpr const char* kFrameworkOverlap = "framework";
// Whether `stack` (a bundled stack or a stack file) has a framework that groups gradients, so
// that kFrameworkOverlap is its natural overlap (a stack that does not load: no; resolving it
// says why).
bool stack_groups_gradients(const std::string& stack);

struct Hardware {
  int nodes = 1;
  int gpus_per_node = 1;
  model::FabricSpec intra;
  model::FabricSpec inter;
  // The cluster the flow-level tier runs on (nullptr: the analytical tier).
  std::shared_ptr<const ClusterTopology> cluster;
  int workers() const { return nodes * gpus_per_node; }
  model::Topology topology() const;  // the links as alpha-beta costs
};

struct Exchange {
  std::string algorithm = "auto";
  model::OverlapPolicy overlap;
  model::Precision precision = model::Precision::kFp32;
  std::string precision_name = "fp32";
  double topk = 0;
  std::shared_ptr<const model::StackSpec> stack;  // nullptr: the formulas on the bare links
  model::Sharding sharding = model::Sharding::kNone;
};

struct Scenario {
  Hardware hardware;
  Exchange exchange;
};

// Errors name the thing ("inter-node fabric: unknown fabric 'x'; valid fabrics: ...").
model::Expected<Hardware> resolve_hardware(const HardwareSpec& spec, const Catalogs& catalogs);
model::Expected<Exchange> resolve_exchange(const ExchangeSpec& spec);
model::Expected<Scenario> resolve_scenario(const HardwareSpec& hardware,
                                           const ExchangeSpec& exchange, const Catalogs& catalogs);

// A traced run (`dag`) replayed on target hardware: `hardware`'s fabrics and cluster on the run's
// own ranks (run_topology's workers), `hardware.gpus_per_node` to a node (nodes follow); with
// `as_traced` the ranks stay where the run placed them, and the cluster has the node type's GPUs
// to a node (`hardware.topology`), else the run's own. A count that does not divide the run's
// ranks is an error. `exchange`'s algorithm and stack (replay_options). With `gpus` (or
// `nodes` of those GPUs per node) other than the run's ranks, the traced ranks stand for a job
// of that many GPUs (ReplayOptions::world, checked by check_scale). The other replay options
// are left at their defaults.
model::Expected<ReplayOptions> replay_target(const trace::TraceDag& dag, HardwareSpec hardware,
                                             const ExchangeSpec& exchange, const Catalogs& catalogs,
                                             bool as_traced, int gpus = 0, int nodes = 0);
// What `dagsgd replay` asks of a traced run: a target fabric (`hardware.intra` and `inter`; both
// empty: the run's own network, calibrated on its own collectives), the exchange's algorithm and
// stack, the communication (modeled or measured) and the host CPU model. `given` names the options
// set, as the command line spells them (a target's options without a target are refused).
struct ReplayRequest {
  HardwareSpec hardware;
  ExchangeSpec exchange;
  bool measured_comm = false;
  int cpus = 0;
  int ranks_per_machine = 0;
  // The job the traced ranks stand for on the target: its GPUs, or its nodes (0: as traced).
  int gpus = 0;
  int nodes = 0;
  std::vector<std::string> given;
};
// The combinations that cannot mean anything, before the run is read.
model::Expected<void> check_replay_request(const ReplayRequest& r);
// The replay options of `r` for a run whose DAG is `dag` (replay_target for a target fabric).
model::Expected<ReplayOptions> replay_request_options(const trace::TraceDag& dag,
                                                      const ReplayRequest& r,
                                                      const Catalogs& catalogs);
// The options that replay a traced run on scenario `s`: its links as the target (and its cluster
// for the flow-level tier), its algorithm and stack, communication modeled. The one route from a
// scenario to a replay: replay_target and TracedWorkload::evaluate both take it.
ReplayOptions replay_options(const Scenario& s);

// ---------------------------------------------------------------------------------------------
// Workloads: what runs on the hardware, resolved once and shared by every scenario of a sweep.

class Workload {
 public:
  virtual ~Workload() = default;
  // The iteration on `s`'s hardware with its exchange (the last simulated iteration's timeline
  // kept when asked).
  virtual model::Expected<PredictResult> evaluate(const Scenario& s, bool keep_timeline) const = 0;
  // The workload and `s` as the user stated them.
  virtual Description describe(const Scenario& s) const = 0;
  // Whether `s` can be evaluated, without simulating (bad input fails here, before a sweep).
  virtual model::Expected<void> check(const Scenario& s) const = 0;
};

// A network definition on a catalog GPU, without a trace.
struct NetworkSpec {
  std::string network;  // bundled name or definition file
  int batch = 64;       // per GPU
  std::string gpu = "v100";
  double step_time_s = 0;     // a measured single-GPU iteration; 0: from FLOPs
  std::string layer_profile;  // B-Caffe per-layer log for the backward times
  bool prefetch = true;
  double io_time_s = 0;  // to read one batch into host memory
  // Samples per second one node's host input pipeline (decode, augmentation) delivers to all
  // its GPUs; 0: no limit. Each GPU then needs batch x gpus-per-node / input_rate per batch
  // (io is the larger of this and io_time_s).
  double input_rate = 0;
  int iterations = 3;        // simulated; the last is reported
  std::string sync = "bsp";  // or easgd:TAU,ALPHA
  // Effects around the wire on GPU ranks (docs/gpu-effects.md): a job-effects file that stands
  // in for the bundled measurement, the compute noise (a cv >= 0; < 0: the file's, else the
  // bundled one for a GPU, none for a CPU node), and the effects switched off (names,
  // comma-separated).
  std::string effects_file;
  double noise_cv = -1;
  std::string effects_off;
};

// The flags that fill a NetworkSpec (model/flag_table.h), but --prefetch (on/off): predict's and
// whatif's, as the command line and the Python module spell them.
const std::vector<model::FlagSpec<NetworkSpec>>& network_spec_flags();

class NetworkWorkload final : public Workload {
 public:
  static model::Expected<std::unique_ptr<NetworkWorkload>> resolve(const NetworkSpec& spec,
                                                                   const Catalogs& catalogs);
  model::Expected<PredictResult> evaluate(const Scenario& s, bool keep_timeline) const override;
  Description describe(const Scenario& s) const override;
  model::Expected<void> check(const Scenario& s) const override;
  // What sim::predict is given for `s`.
  model::Expected<PredictRequest> request(const Scenario& s) const;
  const NetworkSpec& spec() const { return spec_; }
  const model::Network& network() const { return network_; }

 private:
  NetworkWorkload() = default;
  model::Expected<void> resolve_effects();
  NetworkSpec spec_;
  model::Network network_;
  model::GpuSpec gpu_;
  model::ComputeEfficiency efficiency_;
  std::optional<trace::BcaffeLog> profile_;
  std::optional<EasgdConfig> easgd_;
  double noise_cv_ = 0;            // stragglers: 0 when off
  std::string noise_from_;         // where noise_cv_ comes from, for describe()
  double compute_slowdown_ = 1;    // interference: 1 when off
  std::string interference_from_;  // where compute_slowdown_ comes from, for describe()
};

// A traced run (a run directory or Kineto traces), imported once and replayed per scenario on
// the scenario's fabrics; its compute, overlap and precision are what it measured.
class TracedWorkload final : public Workload {
 public:
  // `batch`: samples per rank per iteration, 0 = what the run's manifest says (a run that does
  // not say can be analysed and replayed, but not evaluated as a scenario: check() says why).
  static model::Expected<std::unique_ptr<TracedWorkload>> load(
      const std::vector<std::string>& paths, const trace::ImportOptions& options, int batch = 0);
  model::Expected<PredictResult> evaluate(const Scenario& s, bool keep_timeline) const override;
  Description describe(const Scenario& s) const override;
  model::Expected<void> check(const Scenario& s) const override;
  const trace::ImportedRun& run() const { return run_; }
  const trace::TraceDag& dag() const { return dag_; }
  int batch() const { return batch_; }                                 // 0: not known
  const std::string& batch_problem() const { return batch_problem_; }  // why it is not known
  int ranks() const { return dag_.ranks; }
  // The ranks of the traced job (run_topology): a scenario of another GPU count (a whole
  // multiple) scales the run (ReplayOptions::world).
  int traced_world() const;
  // The GPU counts a sweep scales the run to and its GPUs per node, for describe()
  // (load_sweep_workload sets them from fit_grid_to_run's grid).
  void set_scaled_counts(std::vector<int> counts, int gpus_per_node) {
    scaled_counts_ = std::move(counts);
    scaled_gpus_per_node_ = gpus_per_node;
  }

 private:
  TracedWorkload() = default;
  // Whether `s` scales the run, and the replay options of `s`.
  bool scales(const Scenario& s) const;
  ReplayOptions options_for(const Scenario& s) const;
  std::vector<int> scaled_counts_;
  int scaled_gpus_per_node_ = 0;
  trace::ImportedRun run_;
  trace::TraceDag dag_;
  int batch_ = 0;
  std::string batch_problem_;  // why batch_ is not known
};

// A traced run replayed on one target fabric (replay_trace), in the terms of a prediction so
// that it fits the same reports: the iteration is the replay's mean after warm-up; compute
// (traces do not always split forward from backward) goes to breakdown.forward, device copies
// to h2d, host work and idle time to idle; the one-GPU reference is the replay with free
// communication (weak scaling, compute unchanged). `batch` is per rank, `workers` the GPUs that
// run it (0: the trace's ranks). With `keep_timeline`, the last simulated iteration becomes the
// timeline.
PredictResult replay_as_prediction(const trace::TraceDag& tdag, const ReplayResult& r, int batch,
                                   bool keep_timeline, int workers = 0);

// "easgd:TAU,ALPHA" -> the configuration; "bsp" -> none.
model::Expected<std::optional<EasgdConfig>> parse_sync(const std::string& sync);

}  // namespace dagsgd::sim
