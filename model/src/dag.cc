// The task DAG: compact storage for simulation, Boost.Graph for ordering and longest paths.
#include "dagsgd/model/dag.h"

#include <algorithm>
#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>

#include "dagsgd/model/check.h"

namespace dagsgd::model {

const char* task_kind_name(TaskKind k) {
  static constexpr const char* kNames[] = {"io",   "h2d",    "forward", "backward",
                                           "comm", "update", "memcpy",  "other"};
  static_assert(std::size(kNames) == kTaskKindCount);
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "?";
}

const char* edge_kind_name(EdgeKind k) {
  static constexpr const char* kNames[] = {"sequence", "data", "collective_join",
                                           "iteration_boundary"};
  const auto i = static_cast<std::size_t>(k);
  return i < std::size(kNames) ? kNames[i] : "?";
}

ResourceId Dag::add_resource(std::string name, int capacity) {
  DAGSGD_CHECK(!finalized_ && capacity >= 1);
  resources_.push_back(Resource{std::move(name), capacity});
  return static_cast<ResourceId>(resources_.size() - 1);
}

TaskId Dag::add_task(const Task& t) {
  DAGSGD_CHECK(!finalized_);
  DAGSGD_CHECK(t.resource >= 0 && static_cast<std::size_t>(t.resource) < resources_.size());
  // Builders take durations from checked input (check_ssgd_config, the importer's ranges): one out
  // of range here is a bug in the caller, never a number to simulate with.
  DAGSGD_CHECK(t.duration >= 0 && t.duration < kMaxDuration);
  tasks_.push_back(t);
  return static_cast<TaskId>(tasks_.size() - 1);
}

void Dag::add_edge(TaskId from, TaskId to, EdgeKind kind) {
  DAGSGD_CHECK(!finalized_);
  DAGSGD_CHECK(from >= 0 && static_cast<std::size_t>(from) < tasks_.size());
  DAGSGD_CHECK(to >= 0 && static_cast<std::size_t>(to) < tasks_.size());
  edge_from_.push_back(from);
  edge_to_.push_back(to);
  edge_kind_.push_back(kind);
}

void Dag::reserve(std::size_t tasks, std::size_t edges) {
  tasks_.reserve(tasks);
  edge_from_.reserve(edges);
  edge_to_.reserve(edges);
  edge_kind_.reserve(edges);
}

void Dag::finalize() {
  DAGSGD_CHECK(!finalized_);
  const std::size_t n = tasks_.size();
  succ_offset_.assign(n + 1, 0);
  in_degree_.assign(n, 0);
  for (std::size_t e = 0; e < edge_from_.size(); ++e) {
    ++succ_offset_[static_cast<std::size_t>(edge_from_[e]) + 1];
    ++in_degree_[static_cast<std::size_t>(edge_to_[e])];
  }
  for (std::size_t i = 0; i < n; ++i) succ_offset_[i + 1] += succ_offset_[i];
  succ_.resize(edge_from_.size());
  succ_kind_.resize(edge_from_.size());
  std::vector<std::int64_t> fill(succ_offset_.begin(), succ_offset_.end() - 1);
  // Edges keep their insertion order within a task's successors: deterministic simulation.
  for (std::size_t e = 0; e < edge_from_.size(); ++e) {
    auto pos = static_cast<std::size_t>(fill[static_cast<std::size_t>(edge_from_[e])]++);
    succ_[pos] = edge_to_[e];
    succ_kind_[pos] = edge_kind_[e];
  }
  finalized_ = true;
}

namespace {

using CsrGraph = boost::compressed_sparse_row_graph<boost::directedS>;

CsrGraph make_csr(const std::vector<TaskId>& from, const std::vector<TaskId>& to, std::size_t n) {
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  edges.reserve(from.size());
  for (std::size_t e = 0; e < from.size(); ++e) {
    edges.emplace_back(static_cast<std::size_t>(from[e]), static_cast<std::size_t>(to[e]));
  }
  std::sort(edges.begin(), edges.end());
  return CsrGraph(boost::edges_are_sorted, edges.begin(), edges.end(), n);
}

}  // namespace

Expected<std::vector<TaskId>> Dag::topological_order() const {
  CsrGraph g = make_csr(edge_from_, edge_to_, tasks_.size());
  std::vector<std::size_t> reversed;
  reversed.reserve(tasks_.size());
  try {
    boost::topological_sort(g, std::back_inserter(reversed));
  } catch (const boost::not_a_dag&) {
    // Find a task on a cycle to name: Kahn's algorithm leaves exactly the cyclic part.
    std::vector<std::int32_t> deg(tasks_.size(), 0);
    for (auto t : edge_to_) ++deg[static_cast<std::size_t>(t)];
    std::vector<std::size_t> stack;
    for (std::size_t i = 0; i < deg.size(); ++i) {
      if (deg[i] == 0) stack.push_back(i);
    }
    CsrGraph::out_edge_iterator ei, ee;
    while (!stack.empty()) {
      auto v = stack.back();
      stack.pop_back();
      for (std::tie(ei, ee) = boost::out_edges(v, g); ei != ee; ++ei) {
        auto w = boost::target(*ei, g);
        if (--deg[w] == 0) stack.push_back(w);
      }
    }
    auto it = std::find_if(deg.begin(), deg.end(), [](std::int32_t d) { return d > 0; });
    auto culprit = static_cast<TaskId>(it - deg.begin());
    return Error{"the task graph has a cycle through " + describe(culprit)};
  }
  std::vector<TaskId> order(reversed.rbegin(), reversed.rend());
  return order;
}

Expected<Dag::Path> Dag::longest_path() const {
  auto order = topological_order();
  if (!order.ok()) return order.error();
  CsrGraph g = make_csr(edge_from_, edge_to_, tasks_.size());
  const std::size_t n = tasks_.size();
  std::vector<Nanos> finish(n, 0);
  std::vector<TaskId> pred(n, kNoTask);
  std::vector<Nanos> start(n, 0);
  CsrGraph::out_edge_iterator ei, ee;
  for (TaskId v : *order) {
    auto vi = static_cast<std::size_t>(v);
    finish[vi] = start[vi] + tasks_[vi].duration;
    for (std::tie(ei, ee) = boost::out_edges(vi, g); ei != ee; ++ei) {
      auto w = boost::target(*ei, g);
      if (finish[vi] > start[w] || (finish[vi] == start[w] && pred[w] == kNoTask)) {
        start[w] = finish[vi];
        pred[w] = v;
      }
    }
  }
  Path p;
  if (n == 0) return p;
  auto last = static_cast<TaskId>(std::max_element(finish.begin(), finish.end()) - finish.begin());
  p.length = finish[static_cast<std::size_t>(last)];
  for (TaskId t = last; t != kNoTask; t = pred[static_cast<std::size_t>(t)]) p.tasks.push_back(t);
  std::reverse(p.tasks.begin(), p.tasks.end());
  return p;
}

Expected<void> Dag::check_bounds() const {
  Nanos total = 0;
  for (std::size_t i = 0; i < tasks_.size(); ++i) {
    const Nanos d = tasks_[i].duration;
    if (d < 0 || d >= kMaxDuration) {
      return Error{"task " + describe(static_cast<TaskId>(i)) + " lasts " + std::to_string(d) +
                   " ns: out of range (a duration must be from 0 to below 1e15 ns, 11.6 days)"};
    }
    total += d;  // below 2^62 + 1e15: no overflow
    if (total >= kMaxDagTime) {
      return Error{"the tasks' durations add up to more than 2^62 ns (at task " +
                   describe(static_cast<TaskId>(i)) + "): out of range for a simulation"};
    }
  }
  return ok();
}

std::string Dag::describe(TaskId id) const { return describe_task(task(id)); }

std::string describe_task(const Task& t) {
  std::string s = t.worker >= 0 ? "w" + std::to_string(t.worker) + " " : std::string("all ");
  s += task_kind_name(t.kind);
  if (t.layer >= 0) s += "[" + std::to_string(t.layer) + "]";
  s += " it" + std::to_string(t.iteration);
  return s;
}

}  // namespace dagsgd::model
