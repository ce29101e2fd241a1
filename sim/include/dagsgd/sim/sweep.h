// Sweeps: one workload over a grid of fabrics, GPU counts and exchange strategies, run in this
// process or split across processes by an executor the caller hands in (e.g. MPI ranks).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/sim/predict.h"
#include "dagsgd/sim/scenario.h"

namespace dagsgd::sim {

// What the user asked to sweep. Each fabric is a catalog name or an explicit INTRA+INTER pair;
// a name of scope "intra" replaces the intra-node link (the inter-node one is default_inter),
// a name of scope "inter" replaces the inter-node link, a name of scope "both" is used for both.
// The most points a sweep simulates unless told otherwise (SweepGrid::max_points, whatif's
// --max-points): each point is one prediction (up to kMaxSimulatedTasks tasks, seconds each at
// thousands of GPUs), and the points are expanded in memory (about 400 bytes each) before any runs.
inline constexpr std::size_t kDefaultMaxSweepPoints = 10000;
// The largest --max-points: 1e8 points are 40 GB of expanded grid before the first simulation.
inline constexpr std::size_t kMaxSweepPoints = 10000000;

struct SweepGrid {
  std::vector<std::string> fabrics;
  std::vector<int> gpus;
  int gpus_per_node = 1;
  std::string default_intra = "pcie3";
  std::string default_inter = "10gbe";
  std::vector<std::string> algorithms{"auto"};
  std::vector<std::string> overlaps{"wfbp"};
  std::vector<std::string> precisions{"fp32"};
  std::vector<double> topks{0};
  std::vector<std::string> shardings{"none"};
  // The same for every point (HardwareSpec's and ExchangeSpec's fields of the same names).
  std::string stack;
  std::string topology;
  std::string cluster_network = "single-switch";
  std::string network_model = "auto";
  // The work budget: a grid of more points is refused before it is expanded.
  std::size_t max_points = kDefaultMaxSweepPoints;
  // A traced run's GPU counts that scale it (fit_grid_to_run), for its description.
  std::vector<int> scaled_gpus;
};

// One combination of the grid, by name.
struct SweepPoint {
  std::string fabric;  // as the user named it
  std::string intra;
  std::string inter;
  int gpus = 1;
  int nodes = 1;
  int gpus_per_node = 1;
  std::string algorithm = "auto";
  std::string overlap = "wfbp";
  std::string precision = "fp32";
  double topk = 0;
  std::string sharding = "none";
  std::string stack;
  std::string topology;
  std::string cluster_network = "single-switch";
  std::string network_model = "auto";
  HardwareSpec hardware() const {
    return {nodes, gpus_per_node, intra, inter, topology, cluster_network, network_model};
  }
  ExchangeSpec exchange() const { return {algorithm, overlap, precision, topk, stack, sharding}; }
};

// The swept dimensions other than fabric and GPU count that have more than one value, e.g.
// "ring, fp16"; empty when only fabric and GPU count vary.
std::string variant_label(const SweepGrid& grid, const SweepPoint& p);
// "10gbe, 32 GPUs" plus the variant, for sentences and axis labels.
std::string point_label(const SweepGrid& grid, const SweepPoint& p);

// Every combination, in a fixed order (fabric, GPU count, algorithm, overlap, precision, top-k,
// sharding).
// A GPU count above gpus_per_node must be a multiple of it; fabric names are checked against
// the catalog (unknown names list the valid ones).
model::Expected<std::vector<SweepPoint>> expand_grid(const SweepGrid& grid,
                                                     const model::HardwareCatalog& catalog);

// Points whose simulated iteration is kept as a timeline: per fabric, the largest GPU count
// with the first value of every other dimension.
std::vector<std::size_t> timeline_points(const std::vector<SweepPoint>& points);

// A traced run replays its own ranks unless the grid names other GPU counts (`gpus_given`): its
// GPU counts become its rank count, else each count other than the run's ranks scales the run
// (ReplayOptions::world; check_scale, the error names "--gpus N") and is listed in
// grid.scaled_gpus. Unless `gpus_per_node_given`, its GPUs per node are the run's layout.
model::Expected<void> fit_grid_to_run(SweepGrid& grid, const TracedWorkload& run, bool gpus_given,
                                      bool gpus_per_node_given);

// The workload a sweep runs: the traced run `run` (a directory) or, when `run` is empty, the
// network spec `network` (the grid then needs GPU counts). `given` names the options the caller
// set as the command line spells them: a traced run refuses those it cannot honour (what
// describes a network spec, its overlap, precision and sparsity), reads its batch from `network`
// only when "--batch" was given, and is fitted to `grid` (fit_grid_to_run, with "--gpus" and
// "--gpus-per-node").
model::Expected<std::unique_ptr<Workload>> load_sweep_workload(
    const std::string& run, const NetworkSpec& network, const std::vector<std::string>& given,
    const Catalogs& catalogs, SweepGrid& grid);

// A grid expanded and every point resolved against the catalogs and the workload (so that a
// typo fails before a long sweep).
struct Sweep {
  SweepGrid grid;
  std::vector<SweepPoint> points;
  std::vector<Scenario> scenarios;  // parallel to points
  std::vector<bool> keep_timeline;  // parallel to points
};
model::Expected<Sweep> prepare_sweep(const SweepGrid& grid, const Workload& workload,
                                     const Catalogs& catalogs);

// Where the points run. Point i runs in process i % size(), except the points whose timeline is
// kept (Sweep::keep_timeline), which run in process 0, where the report is written; gather()
// brings every process's bytes to process 0 in rank order (what it returns elsewhere is not
// used).
class SweepExecutor {
 public:
  virtual ~SweepExecutor() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string gather(const std::string& mine) const = 0;
};

// One process.
class SerialExecutor final : public SweepExecutor {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string gather(const std::string& mine) const override { return mine; }
};

// Called after each point this process ran: (done, this process's total).
using SweepProgress = std::function<void(std::size_t done, std::size_t total)>;

// Runs the sweep. On process 0 the results of every point in point order; elsewhere an empty
// list. A point that fails is an error naming it ("10gbe, 32 GPUs: ...").
model::Expected<std::vector<PredictResult>> run_sweep(const Workload& workload, const Sweep& sweep,
                                                      const SweepExecutor& executor,
                                                      const SweepProgress& progress = {});

// A result as JSON that reads back to the same values (integers exact, doubles round-trip), so
// that points computed in other processes give the same report bytes.
std::string result_to_wire(const PredictResult& r);
model::Expected<PredictResult> result_from_wire(const std::string& text);

}  // namespace dagsgd::sim
