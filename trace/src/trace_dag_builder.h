// What the two DAG builders (our runtime's phase spans, Kineto/PMPI calls and kernels) share:
// task and resource creation with the provenance of every task. Private to trace/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dagsgd/trace/trace_dag.h"

namespace dagsgd::trace::detail {

using model::EdgeKind;
using model::Nanos;
using model::Task;
using model::TaskId;
using model::TaskKind;

inline bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }
inline bool contains(const std::string& s, const char* p) { return s.find(p) != std::string::npos; }
inline std::int16_t clamp_iter(int k) { return static_cast<std::int16_t>(std::clamp(k, 0, 32767)); }
model::TaskKind kind_of_phase(Phase p);

class Builder {
 public:
  Builder(const ImportedRun& run, TraceDag& out);

  // Adds a task with where it came from; an event's name joins TraceDag::names.
  model::TaskId add(const model::Task& t, TraceTask info);
  model::ResourceId resource(const std::string& name, int capacity = 1);
  // The task of event `ei` of rank `ri` on `res` (its duration and worker) and where it came from
  // (rank, event, measured start and duration); the caller fills in the rest.
  struct EventTask {
    model::Task task;
    TraceTask info;
  };
  EventTask of_event(std::size_t ri, std::size_t ei, model::ResourceId res) const;

 protected:
  const ImportedRun& run_;
  TraceDag& out_;

 private:
  std::map<std::string, model::ResourceId> resources_;
  // Per rank: its string index -> index in out_.names (-1: not there yet).
  std::vector<std::vector<std::int32_t>> name_index_;
};

// Our runtime's exchanges that are allreduces by one algorithm of the model's table, as its
// traces name them (the model's row has the same name): alltoall-sum-allgather and
// reduce-scatter-allgather (runtime/exchange.h); false for every other name.
inline bool is_runtime_allreduce(std::string_view name) { return name == "asa" || name == "rsag"; }

// The DAG of a `dagsgd train` run (mode kSsgd), of Chakra execution traces (trace_dag_chakra.cc,
// mode kKineto) and of any other trace (mode kKineto).
model::Expected<void> build_ssgd_dag(const ImportedRun& run, TraceDag& out);
model::Expected<void> build_chakra_dag(const ImportedRun& run, TraceDag& out);
model::Expected<void> build_kineto_dag(const ImportedRun& run, TraceDag& out);

}  // namespace dagsgd::trace::detail
