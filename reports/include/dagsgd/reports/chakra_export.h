// A traced run's DAG as Chakra execution traces (one file per rank, the format ASTRA-sim reads):
// the nodes each rank's file holds, and their bytes. The mapping is in docs/formats.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/units.h"
#include "dagsgd/trace/collective.h"
#include "dagsgd/trace/importer.h"
#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::reports {

// Chakra's CollectiveCommType values (et_def.proto) of the types ASTRA-sim's workload layer
// issues (astra-sim/workload/Workload.cc:347-390).
enum class ChakraCollective : int {
  kAllReduce = 0,
  kAllGather = 2,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7,
};

// One node of a rank's execution trace.
struct ChakraNode {
  std::uint64_t id = 0;  // in the rank's file; every dependency has a smaller id
  std::string name;
  bool collective = false;  // COMM_COLL_NODE; else COMP_NODE
  bool cpu_op = true;       // host work (is_cpu_op); GPU kernels and copies are not
  // Every dependency a simulator must honour (ASTRA-sim schedules on data_deps only), and the
  // subset that is program order on one thread or stream (DAG sequence and iteration edges).
  std::vector<std::uint64_t> data_deps;
  std::vector<std::uint64_t> ctrl_deps;
  model::Nanos start = 0;     // measured, on the run's axis
  model::Nanos duration = 0;  // what replay uses: the DAG task's (a collective: its join's)
  model::TaskKind kind = model::TaskKind::kOther;
  int layer = -1;             // layer, or gradient group of a collective; -1 when none
  int iteration = 0;          // of the trace
  int trace_collective = -1;  // index into TraceDag::collectives; -1 for compute nodes
  ChakraCollective comm_type = ChakraCollective::kAllReduce;  // collectives only
  std::int64_t comm_size = 0;                                 // bytes per rank (collectives)
  int comm_ranks = 0;                                         // ranks taking part (collectives)
  std::string traced_collective;  // the collective as traced ("reduce", "barrier"); collectives
  model::TaskId task = model::kNoTask;  // the DAG task (a collective: its join)
};

struct ChakraRank {
  int rank = 0;  // index of the rank in the run (the NPU id of its file)
  std::vector<ChakraNode> nodes;
  std::size_t collectives = 0;   // nodes that are collectives
  std::size_t dependencies = 0;  // data_deps over all nodes
};

// The DAG replay uses, projected onto each rank: the rank's tasks become nodes, each collective
// the rank takes part in becomes one collective node in its file (a collective's cross-rank join
// is implicit in Chakra: every rank issues it), and every DAG edge between two of the rank's
// nodes becomes a dependency. Ranks in the run's order.
std::vector<ChakraRank> chakra_ranks(const trace::ImportedRun& run, const trace::TraceDag& dag);

// The Chakra collective ASTRA-sim runs for ours: only the types its workload layer issues
// (astra-sim/workload/Workload.cc:347-390: ALL_REDUCE, ALL_TO_ALL, ALL_GATHER, REDUCE_SCATTER,
// BROADCAST; any other type throws). A reduce becomes an ALL_REDUCE of its size and a barrier an
// ALL_REDUCE of its 0 bytes (docs/formats.md says why). False when there is none (a
// point-to-point NCCL kernel: the trace does not say its peer); such nodes are exported as
// compute with their measured time.
bool chakra_collective(trace::CollectiveKind kind, ChakraCollective& out);

// The rank's execution-trace file: the GlobalMetadata message, then its nodes in id order, each
// message preceded by its length as a varint (Chakra's encodeMessage framing).
std::string chakra_trace_file(const trace::ImportedRun& run, const trace::TraceDag& dag,
                              const ChakraRank& rank);

// "dagsgd.<rank>.et": ASTRA-sim reads <prefix>.<npu>.et for --workload-configuration=<prefix>.
std::string chakra_file_name(int rank);

// With --force: removes the dagsgd.<n>.et files in `dir` that an export of `ranks` does not
// write (an earlier export of more ranks), so that ASTRA-sim never reads a mix of two runs.
// Other files, and anything when `dir` is not a folder of its own, are left alone.
void remove_stale_chakra_files(const std::string& dir, const std::vector<ChakraRank>& ranks);

// What `dagsgd export` prints: one line per file and the totals, or one JSON object.
std::string chakra_export_text(const trace::TraceDag& dag, const std::vector<ChakraRank>& ranks,
                               const std::string& out_dir);
std::string chakra_export_json(const trace::TraceDag& dag, const std::vector<ChakraRank>& ranks,
                               const std::string& out_dir);

}  // namespace dagsgd::reports
