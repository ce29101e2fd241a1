// The task DAG of S-SGD: tasks with durations on resources, edges with kinds (DESIGN.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// kMemcpy: device copies other than the input batch (traces); kOther: host work outside the
// S-SGD phases (launching kernels, issuing collectives, waits) found in real traces.
enum class TaskKind : std::uint8_t {
  kIo,
  kH2D,
  kForward,
  kBackward,
  kComm,
  kUpdate,
  kMemcpy,
  kOther
};
inline constexpr int kTaskKindCount = 8;
const char* task_kind_name(TaskKind k);

enum class EdgeKind : std::uint8_t { kSequence, kData, kCollectiveJoin, kIterationBoundary };
const char* edge_kind_name(EdgeKind k);

// The sum of all task durations a DAG may hold (Dag::check_bounds): 2^62 ns, so that every start
// and finish time of a simulation, at most that sum, fits in int64 with room for one more task.
inline constexpr Nanos kMaxDagTime = Nanos{1} << 62;

using TaskId = std::int32_t;
using ResourceId = std::int32_t;
inline constexpr TaskId kNoTask = -1;

// Kept small: a 16,384-GPU ResNet-50 DAG holds tens of millions of these.
struct Task {
  Nanos duration = 0;
  ResourceId resource = 0;
  std::int32_t worker = 0;  // -1 for tasks that span all workers (collectives)
  std::int32_t layer = -1;  // layer index, or gradient group index for kComm
  std::int16_t iteration = 0;
  TaskKind kind = TaskKind::kForward;
};

// "w2 backward[17] it1", "all comm[3] it0".
std::string describe_task(const Task& t);

struct Resource {
  std::string name;  // "w3.compute", "comm", ...
  int capacity = 1;  // tasks it can run at once
};

// A DAG under construction, then frozen (finalize) into compressed successor lists.
class Dag {
 public:
  ResourceId add_resource(std::string name, int capacity = 1);
  // The duration must be from 0 to below kMaxDuration (a broken invariant aborts).
  TaskId add_task(const Task& t);
  void add_edge(TaskId from, TaskId to, EdgeKind kind = EdgeKind::kSequence);
  void reserve(std::size_t tasks, std::size_t edges);

  // Builds the successor lists; call once after the last add_edge.
  void finalize();
  bool finalized() const { return finalized_; }

  std::size_t task_count() const { return tasks_.size(); }
  std::size_t edge_count() const { return edge_from_.size(); }
  const Task& task(TaskId id) const { return tasks_[static_cast<std::size_t>(id)]; }
  Task& mutable_task(TaskId id) { return tasks_[static_cast<std::size_t>(id)]; }
  const std::vector<Task>& tasks() const { return tasks_; }
  const std::vector<Resource>& resources() const { return resources_; }

  // Successors of a task (after finalize).
  const TaskId* succ_begin(TaskId id) const {
    return succ_.data() + succ_offset_[static_cast<std::size_t>(id)];
  }
  const TaskId* succ_end(TaskId id) const {
    return succ_.data() + succ_offset_[static_cast<std::size_t>(id) + 1];
  }
  EdgeKind succ_kind(const TaskId* it) const {
    return succ_kind_[static_cast<std::size_t>(it - succ_.data())];
  }
  std::int32_t in_degree(TaskId id) const { return in_degree_[static_cast<std::size_t>(id)]; }

  // Boost.Graph underneath. Errors name a task on a cycle.
  Expected<std::vector<TaskId>> topological_order() const;
  // The longest path through task durations alone (no resource constraints): its length and
  // the tasks on it, first to last.
  struct Path {
    Nanos length = 0;
    std::vector<TaskId> tasks;
  };
  Expected<Path> longest_path() const;

  std::string describe(TaskId id) const;  // "w2 backward[17] it1"

  // Whether a simulation of this DAG stays inside int64: every duration from 0 to below
  // kMaxDuration and their sum below kMaxDagTime. An Error names the first task out of range.
  // Durations may change after finalize (mutable_task), so a simulator checks right before it
  // runs.
  Expected<void> check_bounds() const;

 private:
  std::vector<Task> tasks_;
  std::vector<Resource> resources_;
  std::vector<TaskId> edge_from_;
  std::vector<TaskId> edge_to_;
  std::vector<EdgeKind> edge_kind_;
  std::vector<std::int64_t> succ_offset_;
  std::vector<TaskId> succ_;
  std::vector<EdgeKind> succ_kind_;
  std::vector<std::int32_t> in_degree_;
  bool finalized_ = false;
};

}  // namespace dagsgd::model
