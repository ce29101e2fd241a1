// Chakra execution traces from a traced run's DAG: the projection onto ranks (chakra_ranks) and
// the protobuf messages of the vendored schema (trace/proto/chakra/et_def.proto).
#include "dagsgd/reports/chakra_export.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <unordered_map>
#include <utility>

#include "dagsgd/model/check.h"
#include "dagsgd/model/format.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "et_def.pb.h"

namespace dagsgd::reports {

namespace {

using model::EdgeKind;
using model::Nanos;
using model::TaskId;

constexpr std::uint64_t kNone = UINT64_MAX;

// Where each DAG task lands in the ranks' files: a task of one rank is that rank's node; a
// collective's tasks (the join, a dagsgd train run's startup, each rank's own arrival) are the
// collective's node in the file of every rank that takes part, except a rank's tail (its lag
// after the join), which is that rank's only.
class Projection {
 public:
  Projection(const trace::ImportedRun& run, const trace::TraceDag& dag)
      : run_(run), dag_(dag), ranks_(static_cast<std::size_t>(dag.ranks)) {
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r].rank = static_cast<int>(r);
    coll_node_.assign(dag.collectives.size(), std::vector<std::uint64_t>(ranks_.size(), kNone));
    task_node_.assign(dag.dag.task_count(), kNone);
    for (std::size_t ci = 0; ci < dag.collectives.size(); ++ci) {
      const auto& c = dag.collectives[ci];
      for (std::size_t r = 0; r < c.rank_tails.size(); ++r) {
        if (c.rank_tails[r] != model::kNoTask) tail_rank_[c.rank_tails[r]] = static_cast<int>(r);
      }
    }
  }

  std::vector<ChakraRank> build() {
    auto order = dag_.dag.topological_order();
    // build_trace_dag refuses a DAG with a cycle, naming the run.
    DAGSGD_CHECK(order.ok());
    for (TaskId t : *order) place(t);
    for (TaskId t : *order) connect(t);
    for (auto& rank : ranks_) {
      for (auto& n : rank.nodes) {
        for (auto* deps : {&n.data_deps, &n.ctrl_deps}) {
          std::sort(deps->begin(), deps->end());
          deps->erase(std::unique(deps->begin(), deps->end()), deps->end());
        }
        rank.dependencies += n.data_deps.size();
        if (n.collective) ++rank.collectives;
      }
    }
    return std::move(ranks_);
  }

 private:
  const trace::TraceTask& info(TaskId t) const { return dag_.tasks[static_cast<std::size_t>(t)]; }

  // Nodes in topological order of the DAG, so that every dependency has a smaller id.
  void place(TaskId t) {
    const auto& ti = info(t);
    if (ti.collective >= 0) {
      const auto ci = static_cast<std::size_t>(ti.collective);
      for (int r : ranks_of(t)) {
        auto& id = coll_node_[ci][static_cast<std::size_t>(r)];
        if (id == kNone) id = add_collective(r, ci);
      }
      return;
    }
    if (ti.rank < 0) return;  // nothing else spans ranks
    task_node_[static_cast<std::size_t>(t)] = add_task(ti.rank, t);
  }

  // The ranks in whose files a task of a collective appears.
  std::vector<int> ranks_of(TaskId t) const {
    const auto& ti = info(t);
    if (auto it = tail_rank_.find(t); it != tail_rank_.end()) return {it->second};
    if (ti.rank >= 0) return {ti.rank};
    std::vector<int> out;
    const auto& c = dag_.collectives[static_cast<std::size_t>(ti.collective)];
    for (std::size_t r = 0; r < c.span_start.size(); ++r) {
      if (c.span_start[r] >= 0) out.push_back(static_cast<int>(r));
    }
    return out;
  }

  // The node `t` is in rank r's file, or kNone.
  std::uint64_t node_of(TaskId t, int r) const {
    const auto& ti = info(t);
    if (ti.collective >= 0) {
      if (auto it = tail_rank_.find(t); it != tail_rank_.end() && it->second != r) return kNone;
      if (ti.rank >= 0 && ti.rank != r) return kNone;
      return coll_node_[static_cast<std::size_t>(ti.collective)][static_cast<std::size_t>(r)];
    }
    return ti.rank == r ? task_node_[static_cast<std::size_t>(t)] : kNone;
  }

  void connect(TaskId from) {
    const std::vector<int> ranks = info(from).collective >= 0 ? ranks_of(from)
                                   : info(from).rank >= 0     ? std::vector<int>{info(from).rank}
                                                              : std::vector<int>{};
    for (const TaskId* it = dag_.dag.succ_begin(from); it != dag_.dag.succ_end(from); ++it) {
      const EdgeKind kind = dag_.dag.succ_kind(it);
      for (int r : ranks) {
        const std::uint64_t a = node_of(from, r);
        const std::uint64_t b = node_of(*it, r);
        if (a == kNone || b == kNone || a == b) continue;
        ChakraNode& child = ranks_[static_cast<std::size_t>(r)].nodes[b];
        DAGSGD_CHECK(a < b);
        child.data_deps.push_back(a);
        if (kind == EdgeKind::kSequence || kind == EdgeKind::kIterationBoundary) {
          child.ctrl_deps.push_back(a);
        }
      }
    }
  }

  std::uint64_t add_task(int r, TaskId t) {
    const auto& ti = info(t);
    const auto& task = dag_.dag.task(t);
    ChakraNode n;
    n.name = dag_.task_name(t);
    if (n.name.empty()) n.name = ti.gap ? (ti.in_op ? "host work" : "host gap") : "task";
    n.start = ti.measured_start;
    n.duration = task.duration;
    n.kind = task.kind;
    n.layer = task.layer;
    n.iteration = task.iteration;
    n.task = t;
    if (ti.event >= 0) {
      const auto& events = run_.ranks[static_cast<std::size_t>(r)].events;
      n.cpu_op = !events[static_cast<std::size_t>(ti.event)].gpu;
    }
    return push(r, std::move(n));
  }

  std::uint64_t add_collective(int r, std::size_t ci) {
    const auto& c = dag_.collectives[ci];
    const auto& join = dag_.dag.task(c.task);
    ChakraNode n;
    n.name =
        c.name + " group " + std::to_string(c.group) + " iteration " + std::to_string(c.iteration);
    n.collective = chakra_collective(c.kind, n.comm_type);
    n.cpu_op = !n.collective;
    n.start = c.span_start[static_cast<std::size_t>(r)];
    n.duration = join.duration;
    n.kind = model::TaskKind::kComm;
    n.layer = c.group;
    n.iteration = c.iteration;
    n.trace_collective = static_cast<int>(ci);
    n.comm_size = c.bytes;
    n.comm_ranks = c.ranks;
    n.traced_collective = c.name;
    n.task = c.task;
    return push(r, std::move(n));
  }

  std::uint64_t push(int r, ChakraNode n) {
    auto& nodes = ranks_[static_cast<std::size_t>(r)].nodes;
    n.id = nodes.size();
    nodes.push_back(std::move(n));
    return nodes.back().id;
  }

  const trace::ImportedRun& run_;
  const trace::TraceDag& dag_;
  std::vector<ChakraRank> ranks_;
  std::vector<std::vector<std::uint64_t>> coll_node_;  // [collective][rank]
  std::vector<std::uint64_t> task_node_;               // [task], in its rank's file
  std::unordered_map<TaskId, int> tail_rank_;          // a rank's tail -> the rank
};

std::uint64_t micros(Nanos t) { return t <= 0 ? 0 : static_cast<std::uint64_t>((t + 500) / 1000); }

ChakraProtoMsg::AttributeProto* attr(ChakraProtoMsg::Node& n, const char* name) {
  auto* a = n.add_attr();
  a->set_name(name);
  return a;
}

// Writes `m` preceded by its length, as Chakra's encodeMessage does.
void frame(const google::protobuf::Message& m, std::string& out) {
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.WriteVarint32(static_cast<std::uint32_t>(m.ByteSizeLong()));
  m.SerializeWithCachedSizes(&coded);
}

// The node of `rank`'s file that holds task `t`: its own node, or for a collective's task (the
// join, a rank's arrival) the collective's node; kNone when the file has none.
std::uint64_t node_of_task(const trace::TraceDag& dag, const ChakraRank& rank, TaskId t) {
  if (t == model::kNoTask) return kNone;
  const std::int32_t c = dag.tasks[static_cast<std::size_t>(t)].collective;
  for (const auto& n : rank.nodes) {
    if (n.task == t || (c >= 0 && n.trace_collective == c)) return n.id;
  }
  return kNone;
}

}  // namespace

bool chakra_collective(trace::CollectiveKind kind, ChakraCollective& out) {
  // Every collective kind but kNone has its Chakra type.
  static constexpr std::pair<trace::CollectiveKind, ChakraCollective> kTypes[] = {
      {trace::CollectiveKind::kAllreduce, ChakraCollective::kAllReduce},
      // ASTRA-sim has no reduce: an allreduce moves the same bytes per rank as a reduce by
      // reduce-scatter and gather, and ends when the root would have its result.
      {trace::CollectiveKind::kReduce, ChakraCollective::kAllReduce},
      {trace::CollectiveKind::kAllgather, ChakraCollective::kAllGather},
      {trace::CollectiveKind::kBroadcast, ChakraCollective::kBroadcast},
      {trace::CollectiveKind::kAlltoall, ChakraCollective::kAllToAll},
      {trace::CollectiveKind::kReduceScatter, ChakraCollective::kReduceScatter},
      // ASTRA-sim has no barrier: an allreduce of the barrier's 0 bytes synchronises the same
      // ranks; ASTRA-sim raises a collective's size to its smallest chunks
      // (system/Sys.cc:1009-1018).
      {trace::CollectiveKind::kBarrier, ChakraCollective::kAllReduce}};
  for (const auto& [k, type] : kTypes) {
    if (k == kind) {
      out = type;
      return true;
    }
  }
  return false;
}

std::vector<ChakraRank> chakra_ranks(const trace::ImportedRun& run, const trace::TraceDag& dag) {
  return Projection(run, dag).build();
}

std::string chakra_file_name(int rank) { return "dagsgd." + std::to_string(rank) + ".et"; }

void remove_stale_chakra_files(const std::string& dir, const std::vector<ChakraRank>& ranks) {
  std::vector<std::string> keep;
  keep.reserve(ranks.size());
  for (const auto& r : ranks) keep.push_back(chakra_file_name(r.rank));
  auto ours = [](const std::string& name) {
    static const std::regex kName(R"(dagsgd\.\d+\.et)");
    return std::regex_match(name, kName);
  };
  model::remove_stale_outputs(dir, "", ours, keep);
}

std::string chakra_trace_file(const trace::ImportedRun& run, const trace::TraceDag& dag,
                              const ChakraRank& rank) {
  std::string out;
  ChakraProtoMsg::GlobalMetadata meta;
  // The schema version Chakra's own generator writes for this et_def.proto.
  meta.set_version("1.0.0");
  auto meta_attr = [&meta](const char* name) {
    auto* a = meta.add_attr();
    a->set_name(name);
    return a;
  };
  meta_attr("schema")->set_string_val(std::string("dagsgd ") + model::tool_version());
  meta_attr("source")->set_string_val(dag.source);
  meta_attr("trace_mode")->set_string_val(trace::trace_mode_name(dag.mode));
  meta_attr("rank")->set_int64_val(rank.rank);
  meta_attr("ranks")->set_int64_val(dag.ranks);
  const auto& imported = run.ranks[static_cast<std::size_t>(rank.rank)];
  meta_attr("trace_rank")->set_int64_val(imported.rank);
  meta_attr("world_size")->set_int64_val(imported.world_size);
  meta_attr("iterations")->set_int64_val(static_cast<std::int64_t>(dag.measured_iteration.size()));
  // What `dagsgd analyze` and `replay` read back (trace/src/chakra_import.cc): the measured
  // iterations, this rank's measured iteration boundaries, and the warm-up left out of means.
  auto* measured = meta_attr("measured_iteration_ns")->mutable_int64_list();
  for (Nanos t : dag.measured_iteration) measured->add_values(t);
  auto* bounds = meta_attr("iteration_bounds_ns")->mutable_int64_list();
  if (static_cast<std::size_t>(rank.rank) < dag.rank_bounds.size()) {
    for (Nanos t : dag.rank_bounds[static_cast<std::size_t>(rank.rank)]) bounds->add_values(t);
  }
  meta_attr("warmup")->set_int64_val(dag.warmup);
  frame(meta, out);
  // On the main rank, the nodes whose start begins each iteration and whose end ends the last.
  std::unordered_map<std::uint64_t, std::int64_t> starts;
  std::uint64_t end_node = kNone;
  if (rank.rank == dag.main_rank) {
    for (std::size_t k = 0; k < dag.boundary_task.size(); ++k) {
      const std::uint64_t id = node_of_task(dag, rank, dag.boundary_task[k]);
      if (id != kNone) starts.emplace(id, static_cast<std::int64_t>(k));
    }
    end_node = node_of_task(dag, rank, dag.end_task);
  }

  ChakraProtoMsg::Node node;
  for (const auto& n : rank.nodes) {
    node.Clear();
    node.set_id(n.id);
    node.set_name(n.name);
    node.set_type(n.collective ? ChakraProtoMsg::COMM_COLL_NODE : ChakraProtoMsg::COMP_NODE);
    for (auto d : n.ctrl_deps) node.add_ctrl_deps(d);
    for (auto d : n.data_deps) node.add_data_deps(d);
    node.set_start_time_micros(micros(n.start));
    node.set_duration_micros(micros(n.duration));
    attr(node, "is_cpu_op")->set_bool_val(n.cpu_op);
    if (n.collective) {
      attr(node, "comm_type")->set_int64_val(static_cast<std::int64_t>(n.comm_type));
      attr(node, "comm_size")->set_int64_val(n.comm_size);
      attr(node, "comm_ranks")->set_int64_val(n.comm_ranks);
      // The process group: "0", the default group of every NPU the traces give ASTRA-sim
      // (Workload.cc:591-600), as PyTorch's default_pg is "0". Every collective the DAG joins
      // spans every rank of the files; one it cannot join (its other ranks are not in the
      // traces) can only run among the ranks that are.
      attr(node, "pg_name")->set_string_val("0");
      attr(node, "collective")->set_string_val(n.traced_collective);
    }
    // Ours, beside Chakra's: what the task was and its exact duration.
    attr(node, "duration_ns")->set_int64_val(n.duration);
    attr(node, "kind")->set_string_val(model::task_kind_name(n.kind));
    if (n.layer >= 0) attr(node, n.collective ? "group" : "layer")->set_int64_val(n.layer);
    attr(node, "iteration")->set_int64_val(n.iteration);
    if (auto it = starts.find(n.id); it != starts.end()) {
      attr(node, "iteration_start")->set_int64_val(it->second);
    }
    if (n.id == end_node) attr(node, "iteration_end")->set_int64_val(1);
    frame(node, out);
  }
  return out;
}

std::string chakra_export_text(const trace::TraceDag& dag, const std::vector<ChakraRank>& ranks,
                               const std::string& out_dir) {
  std::string s = "export: " + std::to_string(ranks.size()) + " Chakra execution trace" +
                  (ranks.size() == 1 ? "" : "s") + " of '" + dag.source + "' (" +
                  trace::trace_mode_name(dag.mode) + ", " +
                  std::to_string(dag.measured_iteration.size()) + " iterations)\n";
  for (const auto& r : ranks) {
    s += "  " + out_dir + "/" + chakra_file_name(r.rank) + ": " + std::to_string(r.nodes.size()) +
         " nodes (" + std::to_string(r.collectives) + " collectives), " +
         std::to_string(r.dependencies) + " dependencies\n";
  }
  return s;
}

std::string chakra_export_json(const trace::TraceDag& dag, const std::vector<ChakraRank>& ranks,
                               const std::string& out_dir) {
  nlohmann::ordered_json j;
  j["format"] = "chakra";
  j["source"] = dag.source;
  j["trace_mode"] = trace::trace_mode_name(dag.mode);
  j["iterations"] = dag.measured_iteration.size();
  j["out"] = out_dir;
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& r : ranks) {
    files.push_back({{"rank", r.rank},
                     {"file", out_dir + "/" + chakra_file_name(r.rank)},
                     {"nodes", r.nodes.size()},
                     {"collectives", r.collectives},
                     {"dependencies", r.dependencies}});
  }
  j["files"] = files;
  return j.dump(2) + "\n";
}

}  // namespace dagsgd::reports
