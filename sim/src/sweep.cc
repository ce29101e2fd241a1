// Sweeps (sweep.h): grid expansion, resolution of every point up front, and the run of this
// process's share with the results brought to process 0 through the wire codec.
#include "dagsgd/sim/sweep.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "dagsgd/model/format.h"
#include "dagsgd/model/interrupt.h"
#include "dagsgd/sim/trace_replay.h"
#include "given_flags.h"

namespace dagsgd::sim {

using model::Error;
using model::Expected;
using model::Nanos;

std::string variant_label(const SweepGrid& grid, const SweepPoint& p) {
  std::vector<std::string> parts;
  if (grid.algorithms.size() > 1) parts.push_back(p.algorithm);
  if (grid.overlaps.size() > 1) parts.push_back(p.overlap);
  if (grid.precisions.size() > 1) parts.push_back(p.precision);
  if (grid.topks.size() > 1) parts.push_back(p.topk > 0 ? "top-k " + model::num(p.topk) : "dense");
  if (grid.shardings.size() > 1) parts.push_back(p.sharding);
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : ", ") + part;
  return out;
}

std::string point_label(const SweepGrid& grid, const SweepPoint& p) {
  std::string out = p.fabric + ", " + std::to_string(p.gpus) + (p.gpus == 1 ? " GPU" : " GPUs");
  std::string v = variant_label(grid, p);
  if (!v.empty()) out += ", " + v;
  return out;
}

namespace {

struct LinkPair {
  std::string intra;
  std::string inter;
};

// The intra/inter fabrics a swept fabric name stands for.
Expected<LinkPair> links_of(const std::string& f, const SweepGrid& grid,
                            const model::HardwareCatalog& catalog) {
  LinkPair p{grid.default_intra, grid.default_inter};
  if (auto plus = f.find('+'); plus != std::string::npos) {
    p = {f.substr(0, plus), f.substr(plus + 1)};
    for (const auto& name : {p.intra, p.inter}) {
      auto spec = catalog.fabric(name);
      if (!spec) return model::with_context("fabric '" + f + "'", spec.error());
    }
    return p;
  }
  auto spec = catalog.fabric(f);
  if (!spec) return model::with_context("fabric '" + f + "'", spec.error());
  if (spec->scope == "intra") {
    p.intra = f;
  } else if (spec->scope == "inter") {
    p.inter = f;
  } else {
    p = {f, f};
  }
  return p;
}

Expected<void> check_grid(const SweepGrid& grid) {
  if (grid.fabrics.empty()) return Error{"sweep: give at least one fabric"};
  if (grid.gpus.empty()) return Error{"sweep: give at least one GPU count"};
  if (grid.gpus_per_node < 1) return Error{"sweep: GPUs per node must be at least 1"};
  for (const auto& [what, n] :
       {std::pair<const char*, std::size_t>{"collective algorithm", grid.algorithms.size()},
        {"overlap policy", grid.overlaps.size()},
        {"precision", grid.precisions.size()},
        {"top-k fraction", grid.topks.size()},
        {"sharding level", grid.shardings.size()}}) {
    if (n == 0) return Error{std::string("sweep: give at least one ") + what};
  }
  for (int g : grid.gpus) {
    if (g < 1) return Error{"GPU counts must be positive (got " + std::to_string(g) + ")"};
    if (g > grid.gpus_per_node && g % grid.gpus_per_node != 0) {
      return Error{std::to_string(g) + " GPUs do not fill whole nodes of " +
                   std::to_string(grid.gpus_per_node) + " GPUs"};
    }
  }
  for (double k : grid.topks) {
    if (!(k >= 0 && k <= 1)) {
      return Error{"top-k fractions must be in [0, 1] (got " + model::num(k) + ")"};
    }
  }
  // The product of the dimensions, saturating: it is checked before anything is expanded.
  if (grid.max_points < 1 || grid.max_points > kMaxSweepPoints) {
    return Error{"sweep: the point limit must be from 1 to " + std::to_string(kMaxSweepPoints) +
                 " (got " + std::to_string(grid.max_points) + ")"};
  }
  std::size_t points = 1;
  std::string dims;
  for (std::size_t n :
       {grid.fabrics.size(), grid.gpus.size(), grid.algorithms.size(), grid.overlaps.size(),
        grid.precisions.size(), grid.topks.size(), grid.shardings.size()}) {
    points = points > kMaxSweepPoints ? points : points * n;
    dims += (dims.empty() ? "" : " x ") + std::to_string(n);
  }
  if (points > grid.max_points) {
    return Error{
        "sweep: the grid has " +
        (points > kMaxSweepPoints ? "more than " + std::to_string(kMaxSweepPoints)
                                  : std::to_string(points)) +
        " points (fabrics x GPU counts x algorithms x overlaps x precisions x top-k x sharding "
        "levels: " +
        dims + "), more than the limit of " + std::to_string(grid.max_points) +
        "; give fewer values, or raise the limit with --max-points (at most " +
        std::to_string(kMaxSweepPoints) + ")"};
  }
  return model::ok();
}

}  // namespace

Expected<std::vector<SweepPoint>> expand_grid(const SweepGrid& grid,
                                              const model::HardwareCatalog& catalog) {
  DAGSGD_TRY(check_grid(grid));
  std::vector<LinkPair> pairs;
  for (const auto& f : grid.fabrics) {
    auto p = links_of(f, grid, catalog);
    if (!p) return p.error();
    pairs.push_back(std::move(*p));
  }
  // What every point shares.
  SweepPoint shared;
  shared.stack = grid.stack;
  shared.topology = grid.topology;
  shared.cluster_network = grid.cluster_network;
  shared.network_model = grid.network_model;
  std::vector<SweepPoint> out;
  for (std::size_t fi = 0; fi < grid.fabrics.size(); ++fi) {
    for (int g : grid.gpus) {
      for (const auto& a : grid.algorithms) {
        for (const auto& o : grid.overlaps) {
          for (const auto& p : grid.precisions) {
            for (double k : grid.topks) {
              for (const auto& sh : grid.shardings) {
                SweepPoint s = shared;
                s.fabric = grid.fabrics[fi];
                s.intra = pairs[fi].intra;
                s.inter = pairs[fi].inter;
                s.gpus = g;
                s.gpus_per_node = std::min(g, grid.gpus_per_node);
                s.nodes = g / s.gpus_per_node;
                s.algorithm = a;
                s.overlap = o;
                s.precision = p;
                s.topk = k;
                s.sharding = sh;
                out.push_back(std::move(s));
              }
            }
          }
        }
      }
    }
  }
  return out;
}

std::vector<std::size_t> timeline_points(const std::vector<SweepPoint>& points) {
  // First point of each fabric at that fabric's largest GPU count (grid order puts the first
  // value of every other dimension first).
  std::map<std::string, std::size_t> best;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& s = points[i];
    auto it = best.find(s.fabric);
    if (it == best.end()) {
      best.emplace(s.fabric, i);
      order.push_back(s.fabric);
    } else if (s.gpus > points[it->second].gpus) {
      it->second = i;
    }
  }
  std::vector<std::size_t> out;
  out.reserve(order.size());
  for (const auto& f : order) out.push_back(best[f]);
  return out;
}

Expected<void> fit_grid_to_run(SweepGrid& grid, const TracedWorkload& run, bool gpus_given,
                               bool gpus_per_node_given) {
  const int ranks = run.ranks();
  const model::Topology traced = run_topology(run.dag());
  if (!gpus_given) grid.gpus = {ranks};
  if (!gpus_per_node_given) grid.gpus_per_node = traced.gpus_per_node;
  // Every other count scales the run: checked here, on the layout expand_grid gives it, so
  // that a count that does not fit is named by its flag before anything is resolved.
  std::vector<int> scaled;
  for (int g : grid.gpus) {
    if (g == ranks || g == traced.workers()) continue;
    const int per_node = std::max(1, std::min(g, grid.gpus_per_node));
    ReplayOptions ro;
    ro.world = g;
    ro.target = model::Topology{};
    ro.target->nodes = g / per_node;
    ro.target->gpus_per_node = per_node;
    if (auto ok = check_scale(run.dag(), ro); !ok) {
      return Error{"--gpus " + std::to_string(g) + ": " + ok.error().message};
    }
    scaled.push_back(g);
  }
  grid.scaled_gpus = std::move(scaled);
  return model::ok();
}

Expected<std::unique_ptr<Workload>> load_sweep_workload(const std::string& run,
                                                        const NetworkSpec& network,
                                                        const std::vector<std::string>& given,
                                                        const Catalogs& catalogs, SweepGrid& grid) {
  auto was_given = [&given](const char* flag) { return detail::flag_given(given, flag); };
  if (was_given("--network") == !run.empty()) {
    return Error{run.empty() ? "give a traced run directory (RUN) or --network"
                             : "give either a traced run directory or --network, not both"};
  }
  if (run.empty()) {
    if (grid.gpus.empty()) return Error{"--gpus is required with --network"};
    auto w = NetworkWorkload::resolve(network, catalogs);
    if (!w) return w.error();
    return std::unique_ptr<Workload>(std::move(*w));
  }
  DAGSGD_TRY(detail::refuse_flags(
      given,
      {"--gpu", "--step-time", "--layer-profile", "--sync", "--io-time", "--input-rate",
       "--prefetch", "--iterations", "--effects", "--noise-cv", "--no-effects"},
      " describes a network spec; a traced run keeps what it measured"));
  DAGSGD_TRY(
      detail::refuse_flags(given, {"--overlap", "--precision", "--topk"},
                           ": a traced run keeps its own overlap, precision and sparsity; sweep "
                           "them with --network"));
  auto w =
      TracedWorkload::load({run}, trace::ImportOptions{}, was_given("--batch") ? network.batch : 0);
  if (!w) return w.error();
  if ((*w)->batch() == 0) return Error{(*w)->batch_problem() + "; give --batch"};
  DAGSGD_TRY(fit_grid_to_run(grid, **w, was_given("--gpus"), was_given("--gpus-per-node")));
  (*w)->set_scaled_counts(grid.scaled_gpus, grid.gpus_per_node);
  return std::unique_ptr<Workload>(std::move(*w));
}

Expected<Sweep> prepare_sweep(const SweepGrid& grid, const Workload& workload,
                              const Catalogs& catalogs) {
  Sweep sweep;
  sweep.grid = grid;
  auto points = expand_grid(grid, catalogs.hardware);
  if (!points) return points.error();
  sweep.points = std::move(*points);
  for (const auto& p : sweep.points) {
    auto s = resolve_scenario(p.hardware(), p.exchange(), catalogs);
    if (!s) return s.error();
    auto ok = workload.check(*s);
    if (!ok) return model::with_context(point_label(grid, p), ok.error());
    sweep.scenarios.push_back(std::move(*s));
  }
  sweep.keep_timeline.assign(sweep.points.size(), false);
  for (std::size_t i : timeline_points(sweep.points)) sweep.keep_timeline[i] = true;
  return sweep;
}

Expected<std::vector<PredictResult>> run_sweep(const Workload& workload, const Sweep& sweep,
                                               const SweepExecutor& executor,
                                               const SweepProgress& progress) {
  const std::size_t n = sweep.points.size();
  const auto size = static_cast<std::size_t>(executor.size());
  const auto rank = static_cast<std::size_t>(executor.rank());
  // Point i runs in process i % size, except those whose timeline is kept: process 0 renders
  // the report, so their spans (0.5 M at 512 GPUs) never cross the wire.
  auto runs_here = [&](std::size_t i) { return (sweep.keep_timeline[i] ? 0 : i % size) == rank; };
  std::size_t mine = 0;
  for (std::size_t i = 0; i < n; ++i) mine += runs_here(i) ? 1 : 0;
  auto evaluate = [&](std::size_t i) {
    return workload.evaluate(sweep.scenarios[i], sweep.keep_timeline[i]);
  };
  auto failed = [&](std::size_t i, const Error& e) {
    return model::with_context(point_label(sweep.grid, sweep.points[i]), e);
  };
  // Process 0 keeps its own results as they are; the others send theirs as
  // "index\nlength\nwire" records, a wire starting with '!' being an error message. Every
  // process gathers, whatever failed, so none is left waiting (alone, a process stops at its
  // first failure). Process 0's first failure is reported before the others'.
  std::string records;
  std::vector<PredictResult> out(rank == 0 ? n : 0);
  std::vector<bool> seen(rank == 0 ? n : 0, false);
  std::optional<Error> own_failure;
  std::size_t done = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!runs_here(i)) continue;
    // Alone (the embedded commands are), a process may stop when its embedder asks it to.
    if (size == 1 && model::interrupt_requested()) return Error{model::kInterruptedMessage};
    auto r = evaluate(i);
    if (rank == 0) {
      if (r) {
        out[i] = std::move(*r);
        seen[i] = true;
      } else if (size == 1) {
        return failed(i, r.error());
      } else if (!own_failure) {
        own_failure = failed(i, r.error());
      }
    } else {
      const std::string wire = r ? result_to_wire(*r) : "!" + r.error().message;
      records += std::to_string(i) + "\n" + std::to_string(wire.size()) + "\n" + wire;
    }
    if (progress) progress(++done, mine);
  }
  const std::string all = executor.gather(records);
  if (rank != 0) return std::vector<PredictResult>{};
  if (own_failure) return *own_failure;
  std::size_t pos = 0;
  while (pos < all.size()) {
    const std::size_t nl1 = all.find('\n', pos);
    const std::size_t nl2 = nl1 == std::string::npos ? nl1 : all.find('\n', nl1 + 1);
    if (nl2 == std::string::npos) return Error{"sweep: truncated results from another process"};
    const std::size_t index = std::stoul(all.substr(pos, nl1 - pos));
    const std::size_t len = std::stoul(all.substr(nl1 + 1, nl2 - nl1 - 1));
    if (index >= n || nl2 + 1 + len > all.size()) {
      return Error{"sweep: malformed results from another process"};
    }
    const std::string wire = all.substr(nl2 + 1, len);
    pos = nl2 + 1 + len;
    if (!wire.empty() && wire[0] == '!') return failed(index, Error{wire.substr(1)});
    auto r = result_from_wire(wire);
    if (!r) return r.error();
    out[index] = std::move(*r);
    seen[index] = true;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!seen[i]) return Error{"sweep: point " + std::to_string(i) + " was not simulated"};
  }
  return out;
}

namespace {

// The breakdown's fields by their names on the wire.
constexpr std::pair<const char*, Nanos Breakdown::*> kBreakdownFields[] = {
    {"forward", &Breakdown::forward},
    {"backward", &Breakdown::backward},
    {"comm_total", &Breakdown::comm_total},
    {"comm_exposed", &Breakdown::comm_exposed},
    {"update", &Breakdown::update},
    {"io", &Breakdown::io},
    {"h2d", &Breakdown::h2d},
    {"memcpy", &Breakdown::memcpy},
    {"other", &Breakdown::other},
    {"idle", &Breakdown::idle}};

}  // namespace

std::string result_to_wire(const PredictResult& r) {
  nlohmann::json j;
  j["workers"] = r.workers;
  j["iteration"] = r.iteration;
  j["single"] = r.single_gpu_iteration;
  j["throughput"] = r.throughput;
  j["speedup"] = r.speedup;
  j["efficiency"] = r.efficiency;
  auto& breakdown = j["breakdown"] = nlohmann::json::object();
  for (const auto& [key, field] : kBreakdownFields) breakdown[key] = r.breakdown.*field;
  nlohmann::json cp = nlohmann::json::array();
  for (const auto& p : r.critical_path) cp.push_back({p.phase, p.time});
  j["critical_path"] = cp;
  j["critical_path_tasks"] = r.critical_path_tasks;
  j["bound"] = r.bound;
  j["bottleneck"] = r.bottleneck;
  j["if_comm_free"] = r.if_comm_free;
  j["if_double_bandwidth"] = r.if_double_bandwidth;
  j["algorithm"] = r.algorithm;
  j["tasks"] = r.tasks;
  j["events"] = r.events;
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : r.groups) groups.push_back({g.first, g.last, g.elements, g.comm});
  j["groups"] = groups;
  nlohmann::json tl = nlohmann::json::array();
  for (const auto& s : r.timeline) {
    tl.push_back({s.worker, static_cast<int>(s.kind), s.layer, s.start, s.duration});
  }
  j["timeline"] = tl;
  j["network_model"] = r.network_model;
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : r.busiest_links) {
    links.push_back({l.link, l.kind, l.busy, l.utilization, l.gigabytes});
  }
  j["links"] = links;
  nlohmann::json effects = nlohmann::json::array();
  for (const auto& e : r.effects) effects.push_back({e.effect, e.time, e.detail});
  j["effects"] = effects;
  j["sharding"] = r.sharding;
  j["gathers"] = r.gathers_per_iteration;
  const model::GpuMemory& m = r.memory;
  j["memory"] = {m.parameters, m.gradients, m.optimizer, m.gathered, m.activations, r.gpu_memory};
  return j.dump();
}

Expected<PredictResult> result_from_wire(const std::string& text) {
  try {
    auto j = nlohmann::json::parse(text);
    PredictResult r;
    r.workers = j.at("workers").get<int>();
    r.iteration = j.at("iteration").get<Nanos>();
    r.single_gpu_iteration = j.at("single").get<Nanos>();
    r.throughput = j.at("throughput").get<double>();
    r.speedup = j.at("speedup").get<double>();
    r.efficiency = j.at("efficiency").get<double>();
    const auto& b = j.at("breakdown");
    for (const auto& [key, field] : kBreakdownFields) r.breakdown.*field = b.at(key).get<Nanos>();
    for (const auto& p : j.at("critical_path")) {
      r.critical_path.push_back({p.at(0).get<std::string>(), p.at(1).get<Nanos>()});
    }
    r.critical_path_tasks = j.at("critical_path_tasks").get<std::size_t>();
    r.bound = j.at("bound").get<std::string>();
    r.bottleneck = j.at("bottleneck").get<std::string>();
    r.if_comm_free = j.at("if_comm_free").get<Nanos>();
    r.if_double_bandwidth = j.at("if_double_bandwidth").get<Nanos>();
    r.algorithm = j.at("algorithm").get<std::string>();
    r.tasks = j.at("tasks").get<std::size_t>();
    r.events = j.at("events").get<std::uint64_t>();
    for (const auto& g : j.at("groups")) {
      r.groups.push_back({g.at(0).get<int>(), g.at(1).get<int>(), g.at(2).get<std::int64_t>(),
                          g.at(3).get<Nanos>()});
    }
    for (const auto& s : j.at("timeline")) {
      const int kind = s.at(1).get<int>();
      if (kind < 0 || kind >= model::kTaskKindCount) return Error{"result: bad task kind"};
      r.timeline.push_back({s.at(0).get<int>(), static_cast<model::TaskKind>(kind),
                            s.at(2).get<int>(), s.at(3).get<Nanos>(), s.at(4).get<Nanos>()});
    }
    r.network_model = j.at("network_model").get<std::string>();
    for (const auto& l : j.at("links")) {
      r.busiest_links.push_back({l.at(0).get<std::string>(), l.at(1).get<std::string>(),
                                 l.at(2).get<double>(), l.at(3).get<double>(),
                                 l.at(4).get<double>()});
    }
    for (const auto& e : j.at("effects")) {
      r.effects.push_back(
          {e.at(0).get<std::string>(), e.at(1).get<Nanos>(), e.at(2).get<std::string>()});
    }
    r.sharding = j.at("sharding").get<std::string>();
    r.gathers_per_iteration = j.at("gathers").get<int>();
    const auto& m = j.at("memory");
    r.memory = {m.at(0).get<double>(), m.at(1).get<double>(), m.at(2).get<double>(),
                m.at(3).get<double>(), m.at(4).get<double>()};
    r.gpu_memory = m.at(5).get<double>();
    return r;
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("result: malformed: ") + e.what()};
  }
}

}  // namespace dagsgd::sim
