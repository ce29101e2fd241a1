// A collective as the flow-level tier sees it: phases that run one after another, each a fixed
// part (startup latencies, rendezvous, reduction: what the analytical model charges for them)
// followed by point-to-point transfers between GPU ranks that share the cluster's links. The
// transfers of one phase advance together: a ring step waits for its slowest edge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// The most transfers the flow tier builds for one collective pattern: with their routes and
// link usage about 64 bytes each, so at most about 2 GiB (measured: 33.5 million transfers of a
// colocated parameter server over 4,096 GPUs took 2.0 GiB). A pattern with more is refused
// before it is built; the analytical tier prices any size.
inline constexpr double kMaxFlowTransfers = 33'554'432;  // 2^25

struct Transfer {
  int src = 0;  // GPU rank
  int dst = 0;
};

// Which transfers each phase makes; independent of the message size, so one pattern serves
// every collective of an algorithm over the same ranks.
struct FlowPattern {
  std::string algorithm;
  std::vector<std::vector<Transfer>> phases;
  // A rooted algorithm (binomial reduce + broadcast): how many leading phases its root (the
  // first rank of the order) waits for; the later ones carry the result to the others while the
  // root goes on. 0: every rank has its result only at the end.
  std::size_t root_phases = 0;
};

struct FlowPhaseAmount {
  double fixed = 0;  // ns before the transfers: startups (+ rendezvous) and reduction
  double bytes = 0;  // carried by every transfer of the phase
  // bytes/ns one transfer can reach whatever the links leave it (0: no limit): a stack's
  // efficiency or per-connection rate is a property of each transfer, not of the wire, so
  // transfers in flight together still fill the wire.
  double rate_cap = 0;
};

struct FlowPlan {
  std::shared_ptr<const FlowPattern> pattern;
  std::vector<FlowPhaseAmount> amounts;  // one per pattern phase
  // What the analytical tier charges for it: equal to the flow tier's time when no link is
  // shared more than the formula assumes.
  Nanos analytical = 0;
};

// How many transfers the flow tier builds for one `op` by `algorithm` (one of
// collective_op_algorithms(op)) over `topo`'s workers, without building them: what
// kMaxFlowTransfers bounds.
Expected<double> flow_transfer_count(const Topology& topo, CollectiveOp op,
                                     const std::string& algorithm);

// Builds flow plans for one group of ranks under one exchange configuration; patterns are made
// once per algorithm and shared.
class CollectiveFlows {
 public:
  // `order`: the ranks taking part, in the order the library arranges them (its ring: node by
  // node, each node's GPUs in their intra-node ring order); rank / topo.gpus_per_node is the
  // node of a rank. `topo` prices the fixed parts (its link classes' alpha, rendezvous, gamma)
  // and decides "auto" as the analytical tier does.
  static Expected<CollectiveFlows> make(const Topology& topo, const ExchangeConfig& config,
                                        std::vector<int> order);

  // The plan of one collective of `elements` gradient elements (the dense allreduce, or the
  // top-k allgather when config.topk > 0). Parameter servers on dedicated nodes have no GPU
  // endpoints: their phases are all fixed (the analytical cost). An Error when its pattern
  // would hold more than kMaxFlowTransfers transfers.
  Expected<FlowPlan> plan(std::int64_t elements) const;
  // The plan of one `op` of `bytes` (CollectiveOp's convention) by `algorithm`, one of
  // collective_op_algorithms(op) ("auto" is an Error: the flow tier needs the transfers of one
  // algorithm), on the bare links; `analytical` is collective_time's. An Error when its
  // pattern would hold more than kMaxFlowTransfers transfers.
  Expected<FlowPlan> plan_collective(CollectiveOp op, const std::string& algorithm,
                                     double bytes) const;
  const CommModel& analytical() const { return *analytical_; }

 private:
  Topology topo_;
  ExchangeConfig config_;
  std::vector<int> order_;
  std::shared_ptr<const CommModel> analytical_;
  mutable std::vector<std::shared_ptr<const FlowPattern>> patterns_;  // by algorithm, made once
  // Per algorithm and plan length, made once: each plan phase's transfer steps and its share of
  // the phase's bytes (what the amounts need of the transfers, which depend on nothing else).
  struct Skeleton {
    std::string key;
    std::vector<std::pair<std::size_t, double>> phases;
  };
  mutable std::vector<Skeleton> skeletons_;
};

}  // namespace dagsgd::model
