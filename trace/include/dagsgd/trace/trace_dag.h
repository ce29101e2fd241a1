// The task DAG of a traced run: program order per CPU thread, kernel order per stream, launch ->
// kernel, synchronizations, and the cross-rank join of every collective (DESIGN.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/dag.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/units.h"
#include "dagsgd/trace/collective.h"
#include "dagsgd/trace/importer.h"

namespace dagsgd::trace {

// How the DAG was read from the traces.
enum class TraceMode {
  kSsgd,    // our runtime's phase spans (dagsgd train)
  kKineto,  // calls, kernels and syncs (Kineto/PyTorch profiler, our PMPI tracer)
};
const char* trace_mode_name(TraceMode m);  // "ssgd", "kineto"

// Where a task of the DAG came from, parallel to the Dag's tasks.
struct TraceTask {
  std::int32_t rank = 0;            // -1 for a cross-rank collective join
  std::int32_t event = -1;          // index into the rank's events; -1 for gaps and joins
  std::int32_t collective = -1;     // index into TraceDag::collectives for comm tasks
  std::int32_t name = -1;           // index into TraceDag::names; -1 for gaps and joins
  model::Nanos measured_start = 0;  // on the run's axis, relative to ImportedRun::origin
  model::Nanos measured_dur = 0;
  bool main_thread = false;  // on the thread that carries the iterations (ProfilerStep)
  bool gap = false;          // host time between two recorded calls
  bool in_op = false;        // a gap inside a recorded op or annotation: host work, not idle
  Phase phase = Phase::kNone;
};

// One collective across the ranks: its join task, what each rank brought and when.
struct TraceCollective {
  std::string name;  // allreduce, broadcast, ... (as the trace names it)
  CollectiveKind kind = CollectiveKind::kNone;
  std::int64_t bytes = 0;  // per rank
  // NCCL's "Out msg nelems" in bytes (an all-gather's gathered output, a reduce-scatter's
  // chunk); -1 when the trace does not say.
  std::int64_t out_bytes = -1;
  int ranks = 1;  // ranks that take part (group size)
  // The process group's ranks when the trace names them (NCCL's "Process Group Ranks"), else
  // empty. A joined collective of a group smaller than the run joins those ranks only.
  std::vector<int> group_ranks;
  int iteration = 0;
  int group = -1;                       // our gradient group (bucket), or the order on the rank
  model::TaskId task = model::kNoTask;  // the join (or the rank's own kernel when not joined)
  // Our runtime's collectives (mode "ssgd"; kNoTask / empty in Kineto traces): a zero-length
  // task before the join and, per rank, its lag after the join until it observed the
  // completion (the first rank's is zero). A replay onto a target fabric gives them the modeled
  // startup and slowest-rank tail (model::CollectivePhases). They overlap other collectives; the
  // join does not.
  model::TaskId startup_task = model::kNoTask;
  std::vector<model::TaskId> rank_tails;  // per rank of the trace; kNoTask: no consumer there
  // Our runtime's collectives: a zero-length task after the join that every rank's tail but
  // rank 0's waits for. Under a rooted algorithm (libnbc's binomial reduce + broadcast, rooted
  // at rank 0) a replay puts the broadcast there: the root has its result when the reduction
  // is in, the others when the broadcast has reached them. kNoTask when rank 0 or no other rank
  // has a tail.
  model::TaskId spread_task = model::kNoTask;
  bool joined = false;               // every rank of the group is in the trace
  model::Nanos measured = 0;         // service time after the last rank arrived
  model::Nanos completed = -1;       // measured completion (first rank to observe it)
  std::vector<model::Nanos> arrive;  // per rank of the trace: measured arrival (issue end)
  // Per rank: the measured span of its part (issue to observed completion; the kernel), -1 when
  // the rank has none.
  std::vector<model::Nanos> span_start;
  std::vector<model::Nanos> span_end;
};

struct TraceDag {
  model::Dag dag;
  std::vector<TraceTask> tasks;
  std::vector<TraceCollective> collectives;
  TraceMode mode = TraceMode::kKineto;
  std::string source;  // where the run was read from (its directory or first file), for messages
  int ranks = 1;
  int main_rank = 0;
  // Iteration boundaries on the main rank's main thread: task whose simulated start begins
  // iteration k (boundary_task[k]), and after the last, the task whose finish ends it.
  std::vector<model::TaskId> boundary_task;
  model::TaskId end_task = model::kNoTask;
  std::vector<model::Nanos> measured_iteration;  // per iteration, on the main rank
  std::vector<std::string> iteration_names;      // "ProfilerStep#4", ...
  int warmup = 0;                                // leading iterations left out of means
  // Measured iteration boundaries per rank (start of each iteration, then the end).
  std::vector<std::vector<model::Nanos>> rank_bounds;
  // Where the ranks ran, from our runtime's manifest (empty when the run does not say): per
  // rank, its host name, its machine (kernel boot id: ranks with one share its cores) and the
  // CPUs it could use.
  std::vector<std::string> hosts;
  std::vector<std::string> machines;
  std::vector<int> cpus;
  // The algorithm NCCL's kernel names carry ("ring", "tree"), or "" when the trace says none.
  std::string traced_algorithm;
  // Our runtime's own exchange when it is not the library's allreduce ("asa", "rsag"; "" for
  // every other run): the algorithm its allreduce spans run on any fabric. A fabric's measured
  // curves and a stack's rules describe the library's MPI_Iallreduce, another operation, so
  // neither chooses for these spans.
  std::string exchange_algorithm;
  // A resource with unlimited slots: collectives joined there progress together (the flow-level
  // tier shares their links) instead of one after another.
  model::ResourceId concurrent_resource = -1;
  // Names of the events tasks came from (TraceTask::name), deduplicated across ranks.
  std::vector<std::string> names;
  const std::string& task_name(model::TaskId t) const;  // "" for gaps and joins
};

// Builds the DAG with measured durations everywhere (comm tasks: their measured duration after
// the join). Replay changes comm durations afterwards through Dag::mutable_task.
model::Expected<TraceDag> build_trace_dag(const ImportedRun& run);

}  // namespace dagsgd::trace
