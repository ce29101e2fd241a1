// Collective cost models: the time to aggregate a gradient group across the workers.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// One link class in the alpha-beta-gamma model.
struct LinkCost {
  double alpha_ns = 0;           // per-message startup
  double beta_ns_per_byte = 0;   // 1 / bandwidth
  double gamma_ns_per_byte = 0;  // reduction compute per byte
  Bytes eager_limit = 0;         // above it, rendezvous: +rendezvous_ns per message (0: no step)
  double rendezvous_ns = 0;
  // A shaper's burst (FabricSpec::burst_bytes): bytes a rested link passes without waiting. The
  // formulas do not price it (one collective alone: see burst_wire_bytes); the flow tier and
  // stack calibration do.
  Bytes burst_bytes = 0;
  // The fabric's measured allreduce latencies, by rank count (FabricSpec::measured_allreduce).
  std::vector<MeasuredAllreduce> measured;
  static LinkCost from_fabric(const FabricSpec& f);
};

// The most workers a cost model prices (make_comm_model refuses more): 2^20, beyond every
// machine built so far and small enough that the formulas' integer steps cannot overflow.
inline constexpr std::int64_t kMaxWorkers = std::int64_t{1} << 20;

// Where the workers are: `nodes` nodes of `gpus_per_node` workers; intra links inside a node,
// inter links between nodes.
struct Topology {
  int nodes = 1;
  int gpus_per_node = 1;
  LinkCost intra;
  LinkCost inter;
  // nodes x gpus_per_node; a product beyond int (refused by make_comm_model) comes back as
  // INT_MAX rather than overflowing.
  int workers() const {
    const std::int64_t w = std::int64_t{nodes} * gpus_per_node;
    return w > std::numeric_limits<int>::max() ? std::numeric_limits<int>::max()
                                               : static_cast<int>(w);
  }
};

enum class Precision { kFp32, kFp16 };
Expected<Precision> parse_precision(const std::string& s);
int bytes_per_element(Precision p);

struct ExchangeConfig {
  // ring, tree (double binary tree), recursive_doubling, rabenseifner, binomial (reduce then
  // broadcast, binomial trees), ps (sharded parameter server), asa (alltoall-sum-allgather),
  // hier (hierarchical), auto (by message size, as NCCL; with a stack: as the stack decides).
  std::string algorithm = "auto";
  Precision precision = Precision::kFp32;
  double topk = 0;  // 0: dense; else the fraction of gradient elements sent (values + indices)
  // ps only: 0 = one shard on every worker (colocated); s > 0 = s dedicated server nodes,
  // reached through the inter-node link.
  int ps_servers = 0;
  // The software stack above the links (stack.h), or none: the formulas on the bare links.
  // With a stack, "auto" is the stack's choice, every algorithm pays its per-message and
  // per-collective costs and bandwidth limits, and measured curves are not used.
  std::shared_ptr<const StackSpec> stack;
};

// One collective's time in three parts, for a simulator that runs several at once on one
// progress engine (trace replay): the startup (latency: overlaps other collectives), the body
// (holds the engine: collectives' bodies run one after another) and the tail (the slowest
// rank's lag behind the average one: overlaps the next collective). They sum to exchange_time.
struct CollectivePhases {
  Nanos startup = 0;
  Nanos body = 0;
  Nanos tail = 0;
  // A measured curve that reports the fastest rank: the time until that rank has its result
  // (<= total()); -1 otherwise. Under a rooted algorithm (reduce + broadcast) it is the root,
  // whose broadcast is still on its way to the others (docs/communication.md).
  Nanos first = -1;
  Nanos total() const { return startup + body + tail; }
};

// The cost of aggregating one gradient group; implementations are chosen by name.
// Every time a model returns is >= 0 and never overflows: a time out of range (at or above
// kMaxDuration, e.g. a huge group on a very slow link) comes back saturated, at least
// kMaxDuration. The checked_ functions turn that into an Error; callers that add such times up
// use them (or check `time < kMaxDuration`).
class CommModel {
 public:
  virtual ~CommModel() = default;
  // Time to aggregate a group of `elements` gradient elements over all workers (until the last
  // worker has the result).
  virtual Nanos exchange_time(std::int64_t elements) const = 0;
  // exchange_time, or an Error when it is out of range.
  Expected<Nanos> checked_exchange_time(std::int64_t elements) const;
  // exchange_time in parts. Formulas: startup = the startup latency (at most the total), the
  // rest is body, no tail. Measured curves: docs/communication.md.
  virtual CollectivePhases phases(std::int64_t elements) const;
  // phases, or an Error when their total is out of range.
  Expected<CollectivePhases> checked_phases(std::int64_t elements) const;
  // The startup latency of one collective (the alpha MG-WFBP compares savings against).
  virtual Nanos startup_latency() const = 0;
  // The algorithm actually used for a group of `elements` (resolves "auto").
  virtual std::string algorithm_for(std::int64_t elements) const = 0;
  // The protocol of a stack that chooses one (NCCL's LL, LL128, Simple), else "".
  virtual std::string protocol_for(std::int64_t /*elements*/) const { return ""; }
};

// Topologies beyond kMaxWorkers, and links whose costs are negative, not finite or beyond
// kMaxDuration per message are an Error.
// With algorithm "auto" (or "measured"), a dense allreduce over one fabric whose link carries a
// measured curve for the worker count (LinkCost::measured) is priced from that curve: the
// latencies the library was measured to take, linear between measured sizes, the smallest
// size's latency below them and the formula's growth above the largest. "One fabric": a single
// node (intra link), one worker per node (inter link), or the same curves on both links.
// "measured" without such a curve is an error; explicit formula names ignore curves.
Expected<std::unique_ptr<CommModel>> make_comm_model(const Topology& topo,
                                                     const ExchangeConfig& config);
// The measured curve that prices `topo`'s dense allreduces under "auto" without a stack (the
// rule above), or nullptr.
const MeasuredAllreduce* measured_curve(const Topology& topo);
// The formula-based algorithms and "auto" ("measured" is not among them: it needs a fabric with
// a measured curve).
std::vector<std::string> comm_algorithm_names();
inline constexpr const char* kMeasuredAlgorithm = "measured";
// Every name ExchangeConfig::algorithm accepts: the formulas, "auto" and "measured".
const NameRegistry& collective_algorithms();

// "auto" takes the cheaper of double binary tree and ring, as NCCL's tuning does; without an
// eager/rendezvous step that is the tree below this many bytes (where the two costs cross on
// the inter-node link) and the ring from it on. 0 on one node, where NCCL uses rings.
// See docs/communication.md.
double auto_tree_threshold_bytes(const Topology& topo);

// Every collective the model prices. Sizes follow NCCL's (and nccl-tests') convention: the
// whole vector M, i.e. an all-gather's output, a reduce-scatter's input, the bytes each rank
// sends in an all-to-all (to itself included), a broadcast's or reduce's buffer, and one
// point-to-point message for send/recv.
enum class CollectiveOp {
  kAllreduce,
  kReduceScatter,
  kAllgather,
  kAlltoall,
  kBroadcast,
  kReduce,
  kSendRecv,
};
// "allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce", "sendrecv" (the
// names trace::collective_name gives, plus sendrecv).
const char* collective_op_name(CollectiveOp op);
Expected<CollectiveOp> parse_collective_op(const std::string& name);
// The algorithms the model has for `op` (its rows in model/src/collective_algorithms.cc).
std::vector<std::string> collective_op_algorithms(CollectiveOp op);

// The time of one `op` of `bytes` (the convention above) over `topo`'s workers on the bare
// links, by the formula of `algorithm`: one of collective_op_algorithms(op), or "auto" for the
// cheapest of them at this size (ties: the first). Allreduce's formulas are
// make_comm_model's without a stack. Unknown names list the valid ones; a time out of range
// is an Error.
Expected<Nanos> collective_time(const Topology& topo, CollectiveOp op, const std::string& algorithm,
                                double bytes);

// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busBw = size / time x this factor,
// what the busiest link of a rank carries per byte of the size (the convention above), so that
// a collective's bus bandwidth compares with the link's: 2(n-1)/n for allreduce, (n-1)/n for
// reduce-scatter, all-gather and all-to-all, 1 for broadcast, reduce and send/recv.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

// The reduction cost of a GPU summing in its memory: read two operands and write one per
// element, so 3 bytes of memory traffic per byte reduced (a gamma for LinkCost).
double reduction_ns_per_byte(const GpuSpec& gpu);

}  // namespace dagsgd::model
