// A traced run's collectives by type: how many, how many bytes, how long, and the bus bandwidth
// they achieved (nccl-tests' definition) beside the bandwidth of the links their groups cross.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::sim {

struct CollectiveTypeSummary {
  // "allreduce", "allgather", ...; for kinds the model lacks, the trace's name (an NCCL
  // kernel's where the trace names no collective)
  std::string type;
  int count = 0;
  int unsized = 0;        // of them, without a recorded size (left out of bytes and bandwidth)
  double bytes = 0;       // summed sizes, model::CollectiveOp's convention (the whole vector)
  model::Nanos time = 0;  // summed measured time (after the last rank arrived, when joined)
  // Achieved bus bandwidth, bytes/ns = GB/s: sum(size x model::bus_bandwidth_factor) over the
  // sized collectives' summed time; 0 when they took no time or the model has no such type.
  double bus_gbps = 0;
  // With a fabric: the bandwidth of the slowest link class the type's groups cross (inter-node
  // where a group spans nodes), GB/s; 0 without one.
  double fabric_gbps = 0;
};

// One row per collective type in the run, in the order of model::CollectiveOp (types the model
// has no plan for last, by name). `fabric`: the links the run ran on, laid out as the run
// (replay's target topology), or nullopt.
std::vector<CollectiveTypeSummary> summarize_collectives(
    const trace::TraceDag& td, const std::optional<model::Topology>& fabric);

// The run's own layout (run_topology) with the links of the fabrics `intra` and `inter` of
// `catalog`: what the run ran on, for summarize_collectives. Unknown names list the fabrics.
model::Expected<model::Topology> traced_fabric(const trace::TraceDag& td, const std::string& intra,
                                               const std::string& inter,
                                               const model::HardwareCatalog& catalog);

}  // namespace dagsgd::sim
