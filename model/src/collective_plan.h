// The phases of one collective under each algorithm (their table is collective_algorithms.cc):
// shared by the cost model (which prices them), the flow tier (which turns them into transfers)
// and the calibration (which fits alpha and beta to them), so all three use one formula.
#pragma once

#include <string>
#include <vector>

#include "dagsgd/model/collective_flows.h"
#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/stack.h"

namespace dagsgd::model::detail {

inline constexpr const char* kAuto = "auto";
// What algorithm_for reports for a top-k exchange: the ring allgather of the sparse values.
inline constexpr const char* kSparse = "allgather";

// floor(log2 p) and ceil(log2 p) for p >= 1.
inline int floor_log2(int p) {
  int k = 0;
  while ((2 << k) <= p) ++k;
  return k;
}
inline int ceil_log2(int p) {
  const int k = floor_log2(p);
  return (1 << k) < p ? k + 1 : k;
}

enum class LinkClass { kIntra, kInter };

// A run of sequential messages on one link class. Its cost is
//   messages * (alpha + [message_bytes > eager_limit] * rendezvous) + wire_bytes * beta
//   + reduce_bytes * gamma.
struct Phase {
  LinkClass link = LinkClass::kInter;
  double messages = 0;       // startup latencies paid one after another
  double message_bytes = 0;  // size of each message: decides eager or rendezvous
  double wire_bytes = 0;     // bytes through the busiest endpoint's link, one direction
  double reduce_bytes = 0;   // bytes summed on the critical path
};
using Plan = std::vector<Phase>;

struct Shape {
  int nodes = 1;
  int gpus_per_node = 1;
  int ps_servers = 0;
  int workers() const { return nodes * gpus_per_node; }
};

// Flat algorithms over more than one node are bound by the inter-node link (each ring or tree
// edge that leaves a node crosses its NIC); on one node by the intra-node link.
inline LinkClass flat_link(const Shape& s) {
  return s.nodes > 1 ? LinkClass::kInter : LinkClass::kIntra;
}

// The transfers of one plan phase for the flow tier, in sub-steps that run one after another
// (recursive doubling's exchanges), and the bytes of each transfer as a share of the phase's
// wire bytes per sub-step (an endpoint that sends to several peers at once splits its bytes
// among them). No steps: the phase is computation or fixed cost only.
struct PhaseTransfers {
  std::vector<std::vector<Transfer>> steps;
  double share = 1;
};

class Patterns;  // collective_patterns.h: rings, trees and exchanges over ranks in their order

using PlanFn = void (*)(Plan& plan, const Shape& shape, double bytes);
// One PhaseTransfers per phase of `plan` (which PlanFn built for `shape`).
using TransfersFn = std::vector<PhaseTransfers> (*)(const Plan& plan, const Patterns& pat,
                                                    const Shape& shape);
// How many transfers the TransfersFn builds for `plan` over `shape` (every step of every phase):
// what the flow tier holds for one pattern, known before it is built.
using CountFn = double (*)(const Plan& plan, const Shape& shape);

// One row of the table of collective algorithms (collective_algorithms.cc): everything the
// model knows about an algorithm, in one place.
struct CollectiveAlgorithm {
  CollectiveOp collective;
  const char* name;
  PlanFn plan;             // the alpha-beta-gamma phases (analytical tier, calibration)
  TransfersFn transfers;   // the point-to-point transfers of each phase (flow tier)
  CountFn transfer_count;  // how many transfers `transfers` builds
  bool single_link;        // its plan uses one link class: calibration can fit it from one log
  const char* source;      // where the plan comes from
};

// The row of `collective` named `name`, or nullptr.
const CollectiveAlgorithm* find_algorithm(CollectiveOp collective, const std::string& name);
// The names of `collective`'s rows, in table order.
std::vector<std::string> algorithm_names(CollectiveOp collective);

// Whether the flow tier may build `a`'s transfers for `plan` over `shape`: an Error when they
// would be more than kMaxFlowTransfers, naming the collective, the algorithm and the ranks.
Expected<void> check_transfer_count(const CollectiveAlgorithm& a, const Plan& plan,
                                    const Shape& shape);

// The plan of a dense allreduce of `bytes` per worker; `algorithm` is a concrete name (not
// "auto"). Unknown names list the valid ones.
Expected<Plan> allreduce_plan(const std::string& algorithm, const Shape& shape, double bytes);

// The plan of a top-k exchange: a ring allgather of `local_bytes` (values and indices) per worker.
Plan sparse_allgather_plan(const Shape& shape, double local_bytes);

// The allreduce algorithms whose plan uses one link class only (what calibration from one log
// can fit).
std::vector<std::string> single_link_algorithms();

double phase_cost(const Phase& phase, const LinkCost& link);

// Per phase of `plan` (`algorithm` over `p` ranks, one per node), the wire bytes that wait for
// the links' rate when every node's port starts the collective with `burst` bytes of a shaper's
// allowance in each direction (FabricSpec::burst_bytes) and takes nothing back during it: per
// transfer step, the most any port carries beyond what it has left. A phase without transfers
// keeps its wire bytes. The flow tier prices the same allowance link by link (FlowNetwork).
// An Error where the transfers would be more than kMaxFlowTransfers.
Expected<std::vector<double>> burst_wire_bytes(const std::string& algorithm, const Plan& plan,
                                               int p, double burst);

// How a software stack runs one allreduce: the algorithm (and protocol) it uses, the links as
// it sees them (alpha plus its per-message cost, the bandwidth its protocol and connections
// reach), and what it adds once per collective. Shared by the cost model, the flow tier and
// the stack calibration, so that all three price a stack the same way.
struct StackChoice {
  std::string algorithm;
  std::string protocol;  // "" when the library has no protocols
  LinkCost intra;        // the links as the stack sees them
  LinkCost inter;
  double fixed_ns = 0;     // per collective: library, protocol and framework costs
  double bytes = 0;        // per rank on the wire
  double intra_scale = 1;  // the stack's beta over the bare link's, per link class
  double inter_scale = 1;
  // The protocol's part (for calibration): its bandwidth factor and per-message costs.
  double protocol_efficiency = 1;
  double protocol_message_intra_ns = 0;
  double protocol_message_inter_ns = 0;
};

// The bytes per element on the wire under `stack` (mixed precision may keep fp32 gradients).
int stack_bytes_per_element(const StackSpec& stack, Precision precision);

// The stack's choice for an allreduce of `bytes` per rank on `topo`'s links; `algorithm` is a
// formula name (priced with the stack's costs) or "auto" (the stack's tables or costs decide).
// `with_framework`: add the framework's per-collective costs (a micro-benchmark has none).
StackChoice stack_choice(const StackSpec& stack, const Topology& topo, const Shape& shape,
                         const std::string& algorithm, double bytes, bool with_framework = true);

// The choice's cost: its plan on its links plus the fixed part; startup_only: no byte terms.
double stack_cost(const StackChoice& choice, const Shape& shape, bool startup_only);

}  // namespace dagsgd::model::detail
