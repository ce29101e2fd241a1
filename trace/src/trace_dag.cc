// DAG building from imported traces: the entry point, what both builders share, and what the
// run says about its ranks. The builders: trace_dag_ssgd.cc (our runtime's phase spans) and
// trace_dag_kineto.cc (Kineto/PMPI calls, kernels and syncs).
#include "dagsgd/trace/trace_dag.h"

#include "trace_dag_builder.h"

namespace dagsgd::trace {

namespace detail {

model::TaskKind kind_of_phase(Phase p) {
  switch (p) {
    case Phase::kIo:
      return model::TaskKind::kIo;
    case Phase::kH2D:
      return model::TaskKind::kH2D;
    case Phase::kForward:
      return model::TaskKind::kForward;
    case Phase::kBackward:
      return model::TaskKind::kBackward;
    case Phase::kUpdate:
      return model::TaskKind::kUpdate;
    case Phase::kComm:
    case Phase::kNone:
      return model::TaskKind::kOther;
  }
  return model::TaskKind::kOther;
}

Builder::Builder(const ImportedRun& run, TraceDag& out)
    : run_(run), out_(out), name_index_(run.ranks.size()) {}

model::TaskId Builder::add(const model::Task& t, TraceTask info) {
  if (info.event >= 0 && info.rank >= 0) {
    const auto r = static_cast<std::size_t>(info.rank);
    const ImportedRank& rank = run_.ranks[r];
    const std::int32_t s = rank.events[static_cast<std::size_t>(info.event)].name;
    auto& index = name_index_[r];
    if (index.empty()) index.assign(rank.strings.size(), -1);
    auto& slot = index[static_cast<std::size_t>(s)];
    if (slot < 0) {
      slot = static_cast<std::int32_t>(out_.names.size());
      out_.names.push_back(rank.str(s));
    }
    info.name = slot;
  }
  model::TaskId id = out_.dag.add_task(t);
  out_.tasks.push_back(info);
  return id;
}

Builder::EventTask Builder::of_event(std::size_t ri, std::size_t ei, model::ResourceId res) const {
  const ImportedEvent& e = run_.ranks[ri].events[ei];
  EventTask out;
  out.task.duration = e.dur;
  out.task.resource = res;
  out.task.worker = static_cast<std::int32_t>(ri);
  out.info.rank = static_cast<std::int32_t>(ri);
  out.info.event = static_cast<std::int32_t>(ei);
  out.info.measured_start = e.ts - run_.origin;
  out.info.measured_dur = e.dur;
  return out;
}

model::ResourceId Builder::resource(const std::string& name, int capacity) {
  auto it = resources_.find(name);
  if (it != resources_.end()) return it->second;
  auto id = out_.dag.add_resource(name, capacity);
  resources_.emplace(name, id);
  return id;
}

}  // namespace detail

namespace {

// NCCL's kernel names say which algorithm it chose; the first that does speaks for the run.
std::string traced_algorithm(const ImportedRun& run) {
  for (const auto& r : run.ranks) {
    for (const auto& e : r.events) {
      if (e.category != EventCategory::kKernel) continue;
      std::string a = nccl_kernel_algorithm(r.str(e.name));
      if (!a.empty()) return a;
    }
  }
  return "";
}

// Whether the finalized `dag` has no cycle: Kahn's algorithm over its successor lists, which
// finalize() built already (Dag::topological_order builds a Boost graph and sorts by depth-first
// search: 6% of `analyze` of a 313 MB run, to learn only that there is no loop).
bool acyclic(const model::Dag& dag) {
  const auto n = static_cast<model::TaskId>(dag.task_count());
  std::vector<std::int32_t> waiting(static_cast<std::size_t>(n));
  std::vector<model::TaskId> ready;
  for (model::TaskId t = 0; t < n; ++t) {
    waiting[static_cast<std::size_t>(t)] = dag.in_degree(t);
    if (dag.in_degree(t) == 0) ready.push_back(t);
  }
  std::size_t done = 0;
  while (!ready.empty()) {
    const model::TaskId t = ready.back();
    ready.pop_back();
    ++done;
    for (const model::TaskId* s = dag.succ_begin(t); s != dag.succ_end(t); ++s) {
      if (--waiting[static_cast<std::size_t>(*s)] == 0) ready.push_back(*s);
    }
  }
  return done == static_cast<std::size_t>(n);
}

}  // namespace

const char* trace_mode_name(TraceMode m) { return m == TraceMode::kSsgd ? "ssgd" : "kineto"; }

const std::string& TraceDag::task_name(model::TaskId t) const {
  static const std::string kNone;
  const std::int32_t n = tasks[static_cast<std::size_t>(t)].name;
  return n < 0 ? kNone : names[static_cast<std::size_t>(n)];
}

model::Expected<TraceDag> build_trace_dag(const ImportedRun& run) {
  TraceDag out;
  out.ranks = static_cast<int>(run.ranks.size());
  out.source = run.path;
  if (run.ranks.empty()) return model::Error{"'" + run.path + "': no ranks to build a DAG from"};
  if (run.source == RunSource::kDagsgdTrain) {
    DAGSGD_TRY(detail::build_ssgd_dag(run, out));
  } else if (run.source == RunSource::kChakra) {
    DAGSGD_TRY(detail::build_chakra_dag(run, out));
  } else {
    DAGSGD_TRY(detail::build_kineto_dag(run, out));
  }
  if (out.boundary_task.empty() || out.end_task == model::kNoTask) {
    return model::Error{"'" + run.path +
                        "': no iterations found (no ProfilerStep#N annotations and no calls on "
                        "the main thread)"};
  }
  if (run.manifest) {
    // Our runtime's manifest says how many leading iterations were warm-up.
    if (out.mode == TraceMode::kSsgd) out.warmup = run.manifest->iterations.warmup;
    if (out.warmup >= static_cast<int>(out.measured_iteration.size())) out.warmup = 0;
    out.hosts = run.manifest->hosts;
    out.machines = run.manifest->machines;
    out.cpus = run.manifest->cpus;
  }
  out.traced_algorithm = traced_algorithm(run);
  // Our runtime's asa and rsag exchanges are allreduces by those algorithms, whatever the fabric.
  if (out.mode == TraceMode::kSsgd) {
    for (const auto& c : out.collectives) {
      if (detail::is_runtime_allreduce(c.name)) out.exchange_algorithm = c.name;
    }
  }
  out.dag.finalize();
  // Flows, launches and syncs whose times contradict each other (a kernel launched after the
  // sync that waits for it) can close a loop; every consumer (replay, export) needs an order.
  if (!acyclic(out.dag)) {
    // The order's error names a task on the cycle.
    if (auto order = out.dag.topological_order(); !order) {
      return model::Error{"'" + run.path + "': " + order.error().message +
                          " (the trace's launches, flows and syncs contradict each other)"};
    }
  }
  return out;
}

}  // namespace dagsgd::trace
