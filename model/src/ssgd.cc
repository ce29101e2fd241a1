// Building the S-SGD task DAG and the gradient groups of each overlap policy.
#include "dagsgd/model/ssgd.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "dagsgd/model/check.h"
#include "dagsgd/model/format.h"

namespace dagsgd::model {

std::string OverlapPolicy::name() const {
  switch (kind) {
    case Kind::kNone:
      return "none";
    case Kind::kWfbp:
      return "wfbp";
    case Kind::kMgwfbp:
      return "mgwfbp";
    case Kind::kBucket: {
      double mib = static_cast<double>(bucket_bytes) / (1024.0 * 1024.0);
      char buf[64];
      if (first_bucket_bytes > 0) {
        std::snprintf(buf, sizeof buf, "bucket:%g,%g", mib,
                      static_cast<double>(first_bucket_bytes) / (1024.0 * 1024.0));
      } else {
        std::snprintf(buf, sizeof buf, "bucket:%g", mib);
      }
      return buf;
    }
    case Kind::kFusion: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "fusion:%g,%g",
                    static_cast<double>(bucket_bytes) / (1024.0 * 1024.0),
                    static_cast<double>(cycle) / 1e6);
      return buf;
    }
  }
  return "?";
}

Expected<OverlapPolicy> parse_overlap(const std::string& s) {
  OverlapPolicy p;
  if (s == "none") {
    p.kind = OverlapPolicy::Kind::kNone;
  } else if (s == "wfbp") {
    p.kind = OverlapPolicy::Kind::kWfbp;
  } else if (s == "mgwfbp") {
    p.kind = OverlapPolicy::Kind::kMgwfbp;
  } else if (s.rfind("bucket:", 0) == 0 || s.rfind("fusion:", 0) == 0) {
    // bucket:MB[,FIRST_MB] or fusion:MB,CYCLE_MS
    const bool fusion = s[0] == 'f';
    std::string body = s.substr(7);
    const auto comma = body.find(',');
    std::string first = body.substr(0, comma);
    std::string second = comma == std::string::npos ? "" : body.substr(comma + 1);
    auto positive = [](const std::string& text, double& v) {
      char* end = nullptr;
      v = std::strtod(text.c_str(), &end);
      return !text.empty() && end != nullptr && *end == '\0' && v > 0 && std::isfinite(v);
    };
    double mib = 0;
    double other = 0;
    if (!positive(first, mib)) {
      return Error{"overlap '" + s + "': the " + (fusion ? "fusion" : "bucket") +
                   " size must be a positive number of MiB"};
    }
    if (fusion && !positive(second, other)) {
      return Error{"overlap '" + s + "': expected fusion:MB,CYCLE_MS with a positive cycle"};
    }
    if (!fusion && comma != std::string::npos && !positive(second, other)) {
      return Error{"overlap '" + s + "': the first bucket must be a positive number of MiB"};
    }
    // Range-checked before they become integers: a size of 1 byte to 2^30 MiB (1 PiB, above any
    // model's gradients; the bytes fit int64 many times over), a cycle of 1 ns to kMaxDuration.
    constexpr double kMiB = 1024.0 * 1024.0;
    constexpr double kMaxMiB = 1024.0 * 1024.0 * 1024.0;
    auto size_ok = [&](double v) { return v * kMiB >= 1 && v <= kMaxMiB; };
    if (!size_ok(mib) || (!fusion && comma != std::string::npos && !size_ok(other))) {
      return Error{"overlap '" + s + "': a " + (fusion ? "fusion" : "bucket") +
                   " size must be from 1 byte (" + num(1 / kMiB) + " MiB) to " + num(kMaxMiB) +
                   " MiB (1 PiB)"};
    }
    if (fusion && !(other * 1e6 >= 1 && other * 1e6 < static_cast<double>(kMaxDuration))) {
      return Error{"overlap '" + s + "': the fusion cycle must be from 1e-06 ms (1 ns) to below " +
                   num(static_cast<double>(kMaxDuration) / 1e6) + " ms (11.6 days)"};
    }
    p.kind = fusion ? OverlapPolicy::Kind::kFusion : OverlapPolicy::Kind::kBucket;
    p.bucket_bytes = std::llround(mib * kMiB);
    if (fusion) {
      p.cycle = std::llround(other * 1e6);
    } else if (comma != std::string::npos) {
      p.first_bucket_bytes = std::llround(other * kMiB);
    }
  } else {
    return Error{"unknown overlap policy '" + s +
                 "' (valid: none, wfbp, mgwfbp, bucket:MB[,FIRST_MB], fusion:MB,CYCLE_MS)"};
  }
  return p;
}

namespace {

// End of each layer's backward, measured from the start of backward (tau_b[l] + t_b[l]).
std::vector<Nanos> backward_ends(const std::vector<LayerTime>& layers) {
  std::vector<Nanos> end(layers.size(), 0);
  Nanos t = 0;
  for (std::size_t k = layers.size(); k-- > 0;) {
    t = saturating_add(t, layers[k].backward);
    end[k] = t;
  }
  return end;
}

GradientGroup make_group(const std::vector<LayerTime>& layers, int first, int last,
                         const CommTimeFn& comm) {
  GradientGroup g{first, last, 0, 0};
  for (int l = first; l <= last; ++l)
    g.elements += layers[static_cast<std::size_t>(l)].param_elements;
  g.comm = comm(g.elements);
  return g;
}

}  // namespace

std::vector<GradientGroup> make_groups(const std::vector<LayerTime>& layers,
                                       const OverlapPolicy& policy, const CommTimeFn& comm) {
  std::vector<GradientGroup> groups;
  const int n = static_cast<int>(layers.size());
  auto has_params = [&](int l) { return layers[static_cast<std::size_t>(l)].param_elements > 0; };
  int lowest_param = -1;
  int highest_param = -1;
  for (int l = 0; l < n; ++l) {
    if (has_params(l)) {
      if (lowest_param < 0) lowest_param = l;
      highest_param = l;
    }
  }
  if (lowest_param < 0) return groups;

  switch (policy.kind) {
    case OverlapPolicy::Kind::kNone:
      // After the whole backward, including parameter-free input-side layers.
      groups.push_back(make_group(layers, 0, highest_param, comm));
      break;
    case OverlapPolicy::Kind::kWfbp:
      for (int l = n - 1; l >= 0; --l) {
        if (has_params(l)) groups.push_back(make_group(layers, l, l, comm));
      }
      break;
    case OverlapPolicy::Kind::kBucket: {
      // Reverse layer order; a bucket closes once it holds bucket_bytes of fp32 gradients.
      int last = -1;
      Bytes bytes = 0;
      for (int l = n - 1; l >= 0; --l) {
        if (!has_params(l)) continue;
        if (last < 0) last = l;
        bytes += layers[static_cast<std::size_t>(l)].param_elements * 4;
        const Bytes cap = groups.empty() && policy.first_bucket_bytes > 0
                              ? policy.first_bucket_bytes
                              : policy.bucket_bytes;
        if (bytes >= cap) {
          groups.push_back(make_group(layers, l, last, comm));
          last = -1;
          bytes = 0;
        }
      }
      if (last >= 0) groups.push_back(make_group(layers, lowest_param, last, comm));
      break;
    }
    case OverlapPolicy::Kind::kFusion: {
      // A background thread wakes every cycle and fuses the gradients that became ready since
      // (in order, from the output side) into groups of at most bucket_bytes of fp32; one
      // larger gradient goes alone (Horovod's tensor fusion).
      const std::vector<Nanos> b_end = backward_ends(layers);
      const Nanos cycle = std::max<Nanos>(1, policy.cycle);
      auto window = [&](int l) { return (b_end[static_cast<std::size_t>(l)] + cycle - 1) / cycle; };
      int last = -1;
      int first = -1;  // the group's lowest layer so far: its backward ends last
      Bytes bytes = 0;
      for (int l = n - 1; l >= 0; --l) {
        if (!has_params(l)) continue;
        const Bytes b = layers[static_cast<std::size_t>(l)].param_elements * 4;
        if (last >= 0 && (window(l) != window(first) || bytes + b > policy.bucket_bytes)) {
          groups.push_back(make_group(layers, first, last, comm));
          last = -1;
          bytes = 0;
        }
        if (last < 0) last = l;
        first = l;
        bytes += b;
      }
      if (last >= 0) groups.push_back(make_group(layers, lowest_param, last, comm));
      break;
    }
    case OverlapPolicy::Kind::kMgwfbp: {
      const std::vector<Nanos> b_end = backward_ends(layers);
      Nanos comm_free = 0;  // when the channel is free of the groups already closed
      GradientGroup open = make_group(layers, highest_param, highest_param, comm);
      // Saturating sums: out-of-range times (check_ssgd_config refuses them later) must not
      // overflow here first.
      auto start_of = [&](const GradientGroup& g) {
        return std::max(comm_free, b_end[static_cast<std::size_t>(g.first)]);
      };
      for (int l = highest_param - 1; l >= 0; --l) {
        if (!has_params(l)) continue;
        GradientGroup single = make_group(layers, l, l, comm);
        GradientGroup merged = make_group(layers, l, open.last, comm);
        // Merging delays the open group's start to b[l]'s end but saves one collective's
        // startup; it pays when the delay is below the saving (docs/model.md).
        Nanos delay = b_end[static_cast<std::size_t>(l)] - start_of(open);
        Nanos saving = saturating_add(open.comm, single.comm) - merged.comm;
        if (delay < saving) {
          open = merged;
        } else {
          comm_free = saturating_add(start_of(open), open.comm);
          groups.push_back(open);
          open = single;
        }
      }
      groups.push_back(open);
      break;
    }
  }
  return groups;
}

Expected<void> check_ssgd_config(const SsgdConfig& c, bool compact) {
  if (c.workers < 1)
    return Error{"at least one worker is needed, got " + std::to_string(c.workers)};
  if (c.iterations < 1 || c.iterations > 32767) {
    return Error{"iterations must be from 1 to 32767, got " + std::to_string(c.iterations)};
  }
  if (!c.slowdown.empty() && c.slowdown.size() != static_cast<std::size_t>(c.workers)) {
    return Error{"slow-down factors: " + std::to_string(c.slowdown.size()) + " for " +
                 std::to_string(c.workers) + " workers"};
  }
  const auto layers = static_cast<std::int64_t>(c.layers.size());
  const auto groups = static_cast<std::int64_t>(c.groups.size());
  // In double: the counts themselves may be far beyond int64 for absurd inputs.
  const double per_worker = 2.0 * static_cast<double>(layers) + 3;
  const double tasks = static_cast<double>(c.iterations) *
                       (static_cast<double>(c.workers) * per_worker + static_cast<double>(groups));
  const double edges = static_cast<double>(c.iterations) * static_cast<double>(c.workers) *
                       (per_worker + 2.0 + 2.0 * static_cast<double>(groups));
  if (compact) {
    if (static_cast<std::int64_t>(c.groups.size()) > layers) {
      return Error{"more gradient groups than layers"};
    }
    DAGSGD_TRY(ssgd_task_count(c.workers, layers, static_cast<std::int64_t>(c.groups.size()),
                               c.iterations));
  } else if (tasks > static_cast<double>(kMaxDagTasks) ||
             edges > static_cast<double>(kMaxDagEdges)) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "the DAG of %d workers x %lld layers x %d iterations would hold %.3g tasks and "
                  "%.3g edges: out of range (at most %lld tasks and %lld edges)",
                  c.workers, static_cast<long long>(layers), c.iterations, tasks, edges,
                  static_cast<long long>(kMaxDagTasks), static_cast<long long>(kMaxDagEdges));
    return Error{buf};
  }
  auto in_range = [](Nanos d, const std::string& what) -> Expected<void> {
    if (d < 0 || d >= kMaxDuration) {
      return Error{what + " lasts " + std::to_string(d) +
                   " ns: out of range (a duration must be from 0 to below 1e15 ns, 11.6 days)"};
    }
    return ok();
  };
  DAGSGD_TRY(in_range(c.io, "io"));
  DAGSGD_TRY(in_range(c.h2d, "h2d"));
  DAGSGD_TRY(in_range(c.update, "the update"));
  double compute = static_cast<double>(c.update);  // one worker, one iteration, not slowed
  for (std::size_t l = 0; l < c.layers.size(); ++l) {
    const std::string what = "layer " + std::to_string(l);
    DAGSGD_TRY(in_range(c.layers[l].forward, what + " forward"));
    DAGSGD_TRY(in_range(c.layers[l].backward, what + " backward"));
    compute += static_cast<double>(c.layers[l].forward) + static_cast<double>(c.layers[l].backward);
  }
  double comm = 0;
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    const GradientGroup& gr = c.groups[g];
    const std::string what = "gradient group " + std::to_string(g);
    if (gr.first < 0 || gr.last < gr.first || gr.last >= layers) {
      return Error{what + ": layers [" + std::to_string(gr.first) + ", " + std::to_string(gr.last) +
                   "] are not among the " + std::to_string(layers)};
    }
    DAGSGD_TRY(in_range(gr.comm, what + "'s aggregation"));
    comm += static_cast<double>(gr.comm);
  }
  double slow_sum = static_cast<double>(c.workers);
  double slow_max = 1;
  if (!c.slowdown.empty()) {
    slow_sum = 0;
    for (std::size_t w = 0; w < c.slowdown.size(); ++w) {
      const double f = c.slowdown[w];
      if (!(f > 0) || !std::isfinite(f)) {
        return Error{"worker " + std::to_string(w) + "'s slow-down must be positive and finite"};
      }
      slow_sum += f;
      slow_max = std::max(slow_max, f);
    }
  }
  // A slowed layer or update must stay in range too; compute covers every one of them.
  const double slowed = compute * slow_max;
  if (!(slowed < static_cast<double>(kMaxDuration))) {
    return Error{
        "one worker's forward + backward + update, slowed down, reaches 1e15 ns: out of "
        "range"};
  }
  const double io = static_cast<double>(c.io) + static_cast<double>(c.h2d);
  const double total = static_cast<double>(c.iterations) *
                       (static_cast<double>(c.workers) * io + slow_sum * compute + comm);
  if (!(total < static_cast<double>(kMaxDagTime))) {
    return Error{
        "the DAG's task durations would add up to 2^62 ns or more: out of range for a "
        "simulation"};
  }
  return ok();
}

Dag build_ssgd_dag(const SsgdConfig& c) {
  DAGSGD_CHECK(c.workers >= 1 && c.iterations >= 1);
  DAGSGD_CHECK(c.slowdown.empty() || static_cast<int>(c.slowdown.size()) == c.workers);
  const auto L = static_cast<int>(c.layers.size());
  const auto G = static_cast<int>(c.groups.size());
  Dag dag;
  const std::size_t per_worker = 2 * static_cast<std::size_t>(L) + 3;
  dag.reserve(static_cast<std::size_t>(c.iterations) *
                  (static_cast<std::size_t>(c.workers) * per_worker + static_cast<std::size_t>(G)),
              static_cast<std::size_t>(c.iterations) * static_cast<std::size_t>(c.workers) *
                  (per_worker + 2 * static_cast<std::size_t>(G) + 2));
  std::vector<ResourceId> io_res(static_cast<std::size_t>(c.workers));
  std::vector<ResourceId> copy_res(io_res.size());
  std::vector<ResourceId> compute_res(io_res.size());
  for (int w = 0; w < c.workers; ++w) {
    std::string p = "w" + std::to_string(w) + ".";
    io_res[static_cast<std::size_t>(w)] = dag.add_resource(p + "io");
    copy_res[static_cast<std::size_t>(w)] = dag.add_resource(p + "copy");
    compute_res[static_cast<std::size_t>(w)] = dag.add_resource(p + "compute");
  }
  const ResourceId comm_res = dag.add_resource("comm");

  // Which group each layer's backward triggers (the group's first layer), or -1.
  std::vector<int> triggers(static_cast<std::size_t>(L), -1);
  for (int g = 0; g < G; ++g)
    triggers[static_cast<std::size_t>(c.groups[static_cast<std::size_t>(g)].first)] = g;

  std::vector<TaskId> prev_update(static_cast<std::size_t>(c.workers), kNoTask);
  std::vector<TaskId> prev_h2d(static_cast<std::size_t>(c.workers), kNoTask);
  std::vector<TaskId> comm_tasks(static_cast<std::size_t>(G));
  std::vector<std::vector<TaskId>> trigger_tasks(static_cast<std::size_t>(G));
  std::vector<TaskId> updates(static_cast<std::size_t>(c.workers));

  for (int it = 0; it < c.iterations; ++it) {
    const auto iter = static_cast<std::int16_t>(it);
    for (auto& v : trigger_tasks) v.clear();
    for (int w = 0; w < c.workers; ++w) {
      const auto wi = static_cast<std::size_t>(w);
      const double slow = c.slowdown.empty() ? 1.0 : c.slowdown[wi];
      auto scaled = [slow](Nanos d) {
        return slow == 1.0 ? d : saturating_nanos(static_cast<double>(d) * slow);
      };
      TaskId io = dag.add_task(Task{c.io, io_res[wi], w, -1, iter, TaskKind::kIo});
      TaskId h2d = dag.add_task(Task{c.h2d, copy_res[wi], w, -1, iter, TaskKind::kH2D});
      dag.add_edge(io, h2d, EdgeKind::kData);
      if (it > 0) {
        if (c.prefetch) {
          dag.add_edge(prev_h2d[wi], io, EdgeKind::kIterationBoundary);
        } else {
          dag.add_edge(prev_update[wi], io, EdgeKind::kIterationBoundary);
        }
      }
      prev_h2d[wi] = h2d;
      TaskId prev = h2d;
      for (int l = 0; l < L; ++l) {
        TaskId f = dag.add_task(Task{scaled(c.layers[static_cast<std::size_t>(l)].forward),
                                     compute_res[wi], w, l, iter, TaskKind::kForward});
        dag.add_edge(prev, f, l == 0 ? EdgeKind::kData : EdgeKind::kSequence);
        if (l == 0 && it > 0) dag.add_edge(prev_update[wi], f, EdgeKind::kIterationBoundary);
        prev = f;
      }
      for (int l = L - 1; l >= 0; --l) {
        TaskId b = dag.add_task(Task{scaled(c.layers[static_cast<std::size_t>(l)].backward),
                                     compute_res[wi], w, l, iter, TaskKind::kBackward});
        dag.add_edge(prev, b, EdgeKind::kSequence);
        prev = b;
        int g = triggers[static_cast<std::size_t>(l)];
        if (g >= 0) trigger_tasks[static_cast<std::size_t>(g)].push_back(b);
      }
      updates[wi] =
          dag.add_task(Task{scaled(c.update), compute_res[wi], w, -1, iter, TaskKind::kUpdate});
      dag.add_edge(prev, updates[wi], EdgeKind::kSequence);
    }
    // Collectives after every worker's tasks of this iteration, in issue order (output side
    // first), so task ids follow the order the comm channel serves them.
    for (int g = 0; g < G; ++g) {
      const auto gi = static_cast<std::size_t>(g);
      comm_tasks[gi] =
          dag.add_task(Task{c.groups[gi].comm, comm_res, -1, g, iter, TaskKind::kComm});
      for (TaskId b : trigger_tasks[gi]) dag.add_edge(b, comm_tasks[gi], EdgeKind::kCollectiveJoin);
      for (TaskId u : updates) dag.add_edge(comm_tasks[gi], u, EdgeKind::kData);
    }
    prev_update = updates;
  }
  dag.finalize();
  return dag;
}

Expected<std::int64_t> ssgd_task_count(std::int64_t workers, std::int64_t layers,
                                       std::int64_t groups, std::int64_t iterations) {
  DAGSGD_CHECK(workers >= 1 && layers >= 0 && groups >= 0 && iterations >= 1);
  const std::int64_t per_worker = 2 * layers + 3;
  // In floating point first: the exact product may not fit 64 bits.
  const double tasks = static_cast<double>(iterations) * static_cast<double>(workers) *
                       static_cast<double>(per_worker);
  if (tasks <= static_cast<double>(kMaxSimulatedTasks) && groups <= layers) {
    return iterations * (workers * per_worker + groups);
  }
  DAGSGD_CHECK(groups <= layers);
  auto grouped = [](double v) {
    std::string digits = fmt("%.0f", v);
    for (auto i = static_cast<std::ptrdiff_t>(digits.size()) - 3; i > 0; i -= 3) {
      digits.insert(static_cast<std::size_t>(i), ",");
    }
    return digits;
  };
  return Error{grouped(static_cast<double>(workers)) + " workers x " +
               grouped(static_cast<double>(per_worker)) + " tasks x " +
               grouped(static_cast<double>(iterations)) + " iterations is " + grouped(tasks) +
               " tasks to simulate, more than the " +
               grouped(static_cast<double>(kMaxSimulatedTasks)) +
               " dagsgd simulates (every worker is simulated, and at that size a prediction "
               "takes about 2 GiB and 20 s of CPU time): use fewer GPUs or iterations"};
}

SsgdDag::SsgdDag(SsgdConfig config) : config_(std::move(config)) {
  const SsgdConfig& c = config_;
  DAGSGD_CHECK(c.workers >= 1 && c.iterations >= 1 && !c.layers.empty());
  DAGSGD_CHECK(c.slowdown.empty() || static_cast<int>(c.slowdown.size()) == c.workers);
  layers_ = static_cast<int>(c.layers.size());
  auto count =
      ssgd_task_count(c.workers, layers_, static_cast<std::int64_t>(c.groups.size()), c.iterations);
  DAGSGD_CHECK(count.ok());
  worker_tasks_ = static_cast<std::size_t>(worker_tasks());
  comm_offset_ = static_cast<std::size_t>(c.workers) * worker_tasks_;
  iteration_tasks_ = comm_offset_ + c.groups.size();

  // One template per distinct slowdown, in order of first use.
  std::vector<double> factors;
  auto add_template = [&](double slow) {
    auto scaled = [slow](Nanos d) {
      return slow == 1.0 ? d : static_cast<Nanos>(std::llround(static_cast<double>(d) * slow));
    };
    durations_.push_back(c.io);
    durations_.push_back(c.h2d);
    for (const auto& l : c.layers) durations_.push_back(scaled(l.forward));
    for (auto l = c.layers.rbegin(); l != c.layers.rend(); ++l) {
      durations_.push_back(scaled(l->backward));
    }
    durations_.push_back(scaled(c.update));
    factors.push_back(slow);
  };
  if (c.slowdown.empty()) {
    add_template(1.0);
  } else {
    worker_template_.reserve(c.slowdown.size());
    for (double slow : c.slowdown) {
      auto it = std::find(factors.begin(), factors.end(), slow);
      if (it == factors.end()) {
        add_template(slow);
        it = factors.end() - 1;
      }
      worker_template_.push_back(static_cast<std::int32_t>(it - factors.begin()));
    }
    if (factors.size() == 1) worker_template_.clear();
  }

  trigger_of_position_.assign(worker_tasks_, -1);
  for (std::size_t g = 0; g < c.groups.size(); ++g) {
    const int first = c.groups[g].first;
    DAGSGD_CHECK(first >= 0 && first < layers_);
    const auto position = static_cast<std::size_t>(2 * layers_ + 1 - first);
    DAGSGD_CHECK(trigger_of_position_[position] < 0);
    trigger_of_position_[position] = static_cast<std::int32_t>(g);
  }
}

std::size_t SsgdDag::edge_count() const {
  const auto w = static_cast<std::size_t>(workers());
  const auto l = static_cast<std::size_t>(layers_);
  const auto k = static_cast<std::size_t>(iterations());
  // Per worker and iteration: io->h2d, the L forward and L backward chain edges, b[0]->u; after
  // the first iteration also the boundary edges into io and f[0]; per collective, one edge from
  // every worker's trigger and one to every worker's update.
  const std::size_t per_iteration = w * (2 * l + 2) + 2 * w * config_.groups.size();
  return k * per_iteration + (k - 1) * 2 * w;
}

SsgdDag::Place SsgdDag::place(TaskId id) const {
  DAGSGD_CHECK(id >= 0 && static_cast<std::size_t>(id) < task_count());
  const auto i = static_cast<std::size_t>(id);
  Place p;
  p.iteration = static_cast<int>(i / iteration_tasks_);
  const std::size_t r = i % iteration_tasks_;
  if (r >= comm_offset_) {
    p.worker = -1;
    p.position = static_cast<int>(r - comm_offset_);
  } else {
    p.worker = static_cast<int>(r / worker_tasks_);
    p.position = static_cast<int>(r % worker_tasks_);
  }
  return p;
}

Task SsgdDag::task(TaskId id) const {
  const Place p = place(id);
  const auto iteration = static_cast<std::int16_t>(p.iteration);
  if (p.worker < 0) {
    const auto& g = config_.groups[static_cast<std::size_t>(p.position)];
    return Task{g.comm, 3 * workers(), -1, p.position, iteration, TaskKind::kComm};
  }
  const Nanos d = duration(p.worker, p.position);
  const ResourceId compute = 3 * p.worker + 2;
  if (p.position == kIo) return Task{d, 3 * p.worker, p.worker, -1, iteration, TaskKind::kIo};
  if (p.position == kH2D) {
    return Task{d, 3 * p.worker + 1, p.worker, -1, iteration, TaskKind::kH2D};
  }
  if (p.position < first_backward()) {
    return Task{d, compute, p.worker, p.position - kFirstForward, iteration, TaskKind::kForward};
  }
  if (p.position < update_position()) {
    return Task{d, compute, p.worker, backward_layer(p.position), iteration, TaskKind::kBackward};
  }
  return Task{d, compute, p.worker, -1, iteration, TaskKind::kUpdate};
}

std::string SsgdDag::describe(TaskId id) const { return describe_task(task(id)); }

namespace {
Nanos sum_compute(const std::vector<LayerTime>& layers) {
  Nanos t = 0;
  for (const auto& l : layers) t += l.forward + l.backward;
  return t;
}
}  // namespace

Nanos closed_form_no_overlap(Nanos io, Nanos h2d, const std::vector<LayerTime>& layers,
                             Nanos comm_total, Nanos update) {
  return io + h2d + sum_compute(layers) + comm_total + update;
}

Nanos closed_form_prefetched(Nanos io, Nanos h2d, const std::vector<LayerTime>& layers,
                             Nanos comm_total, Nanos update) {
  return std::max(io + h2d, sum_compute(layers) + comm_total + update);
}

Nanos closed_form_grouped(const std::vector<LayerTime>& layers,
                          const std::vector<GradientGroup>& groups, Nanos update) {
  Nanos t_f = 0;
  for (const auto& l : layers) t_f += l.forward;
  const std::vector<Nanos> b_end = backward_ends(layers);
  Nanos backward_total = layers.empty() ? 0 : b_end[0];
  Nanos comm_end = 0;
  for (const auto& g : groups) {
    comm_end = std::max(comm_end, b_end[static_cast<std::size_t>(g.first)]) + g.comm;
  }
  return t_f + std::max(backward_total, comm_end) + update;
}

}  // namespace dagsgd::model
