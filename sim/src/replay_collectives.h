// How a replay prices a traced collective from the arguments the trace recorded: which of the
// model's collectives it is, its size in the model's convention, and the links its group's
// ranks use (model::collective_time, the flow tier's plan_collective).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/sim/cluster_topology.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::sim::detail {

// The model's collective for a traced kind; nullopt where the model has no plan (barriers,
// names it does not know).
std::optional<model::CollectiveOp> traced_op(trace::CollectiveKind kind);

// The size the model prices (model::CollectiveOp's convention, the whole vector): NCCL records
// an all-gather's input chunk as "In msg nelems" and the gathered output as "Out msg nelems", a
// reduce-scatter the other way round, so the larger of the two; MPI traces record the whole
// buffer as `bytes`.
double traced_size(const trace::TraceCollective& c);

// Whether the trace names the group's ranks and they are not the first `ranks` ranks of the run
// (a node-local group beyond the first node, a replica group across nodes).
bool placed_group(const trace::TraceCollective& c);

// The nodes and GPUs per node of `c`'s group on `topo`'s layout (its links unchanged): a placed
// group spans the nodes its ranks are on (ranks spread unevenly over nodes: one per node, so
// that the slower link prices every step); any other group is the first c.ranks ranks, whole
// nodes of topo.gpus_per_node (fewer: one node).
model::Topology group_topology(const model::Topology& topo, const trace::TraceCollective& c);

// The flow tier's rank order for `c`'s group on `cluster`: a placed group's ranks by node, else
// the cluster's own order for c.ranks GPUs. An Error when a rank is beyond the cluster.
model::Expected<std::vector<int>> group_order(const ClusterTopology& cluster,
                                              const trace::TraceCollective& c);

// How a traced collective's group stands on a larger target (ReplayOptions::world).
enum class GroupScale {
  kWorld,      // the whole traced world: grows to the target's GPUs
  kReplica,    // one rank on each traced node: grows to the target's nodes
  kNodeLocal,  // all its ranks on one traced node: keeps its size, on one target node
  kKept,       // anything else: keeps its size and its ranks
};

// `c`'s group on the target: its scale, its size and its ranks there (empty: the first `ranks`
// ranks), so that group_topology and group_order price it. `traced` is the run's layout
// (run_topology), `target` the target's nodes and GPUs per node; a traced rank r on traced
// node r / traced.gpus_per_node keeps its place in its node. An Error when a node-local or
// replica group has no such place there (the target's nodes too small or too few).
struct ScaledGroup {
  GroupScale how = GroupScale::kKept;
  int ranks = 0;
  std::vector<int> group_ranks;
};
model::Expected<ScaledGroup> scale_group(const model::Topology& traced,
                                         const model::Topology& target,
                                         const trace::TraceCollective& c);

// The algorithm `op` runs: `requested` where the op has an algorithm of that name, else the
// cheapest of its algorithms on `topo` at `bytes` (ties: the first), as collective_time's
// "auto" decides.
model::Expected<std::string> op_algorithm(const model::Topology& topo, model::CollectiveOp op,
                                          const std::string& requested, double bytes);

// The collective's name as the trace gives it; where it gives none (an NCCL kernel without a
// "Collective name"), the kernel's name.
std::string traced_name(const trace::TraceDag& td, const trace::TraceCollective& c);

// Why a collective kept its measured time under a modeled replay ("" when it was priced):
// "barrier: no plan in the model", "allgather: no recorded size", "allreduce: one rank"; a
// collective the trace does not name goes by its kernel's name.
std::string unpriced_reason(const trace::TraceDag& td, const trace::TraceCollective& c);

}  // namespace dagsgd::sim::detail
