// Cross-fabric predictions of measured runs (validation.h).
#include "dagsgd/sim/validation.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "dagsgd/model/format.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/io.h"
#include "dagsgd/sim/calibrate.h"
#include "dagsgd/trace/osu_log.h"

namespace dagsgd::sim {

const TracedWorkload* Validator::source_run(const std::string& dir, std::string& error) {
  auto it = runs_.find(dir);
  if (it == runs_.end()) {
    auto w = TracedWorkload::load({dir}, trace::ImportOptions{});
    if (!w) {
      error = w.error().message;
      return nullptr;
    }
    it = runs_.emplace(dir, std::move(*w)).first;
  }
  return it->second.get();
}

ValidationPrediction Validator::predict(const std::vector<MeasuredRun>& runs, std::size_t source,
                                        std::size_t target, const TargetFabric& fabric) {
  ValidationPrediction p;
  p.source = source;
  p.target = target;
  p.mode = fabric.mode;
  p.measured_s = runs[target].mean_s;
  std::string error;
  const TracedWorkload* w = source_run(runs[source].run_dir, error);
  if (w == nullptr) {
    p.failure = "cannot read the source run: " + error;
    return p;
  }
  auto catalogs = Catalogs::load({fabric.fabric_file});
  // The target laid out as the run was (one host per rank on the emulated cluster).
  const model::Topology layout = run_topology(w->dag());
  HardwareSpec spec{layout.nodes, layout.gpus_per_node, fabric.fabric_name, fabric.fabric_name};
  spec.network_model = network_model_;
  auto hw =
      catalogs ? resolve_hardware(spec, *catalogs) : model::Expected<Hardware>(catalogs.error());
  if (!hw) {
    p.failure = "target fabric: " + hw.error().message;
    return p;
  }
  ReplayOptions ro;
  ro.target = hw->topology();
  ro.target->nodes = 0;  // the run's own layout
  ro.target->gpus_per_node = 0;
  ro.cluster = hw->cluster;
  ro.stack = fabric.stack;
  if (host_cpu_model_ && runs[target].cpus > 0) ro.cpus = runs[target].cpus;
  auto r = replay_trace(w->dag(), ro);
  if (!r) {
    p.failure = "replay failed: " + r.error().message;
    return p;
  }
  p.predicted_s = r->predicted_mean_s;
  p.error = (p.predicted_s - p.measured_s) / p.measured_s;
  p.ok = true;
  p.replay = std::make_shared<const ReplayResult>(std::move(*r));
  return p;
}

std::vector<TargetFabric> ValidationTargets::of(const MeasuredRun& source,
                                                const MeasuredRun& target) const {
  const std::string spec = target.profile + "-profile";
  std::vector<TargetFabric> out = {{"profile", profile_fabrics, spec, nullptr}};
  const std::string key = target.profile + "_p" + std::to_string(target.ranks);
  if (auto it = calibrated.find(key); it != calibrated.end()) {
    out.push_back({"calibrated", it->second, key + "-calibrated", cluster_stack});
  }
  if (auto it = transfer_stacks.find(source.profile + "_p" + std::to_string(target.ranks));
      it != transfer_stacks.end()) {
    out.push_back({"transfer", profile_fabrics, spec, it->second});
  }
  // Mode (d): the target's spec as in (a), with the software stack as bundled (its constants from
  // library source and other clusters' micro-benchmarks): nothing run on either fabric.
  if (cluster_stack) out.push_back({"stack", profile_fabrics, spec, cluster_stack});
  return out;
}

model::Expected<std::string> write_calibrated_fabric(const std::string& log,
                                                     const std::string& profile, int ranks,
                                                     const std::string& dir,
                                                     double nominal_bytes_per_s) {
  const std::string stem = profile + "_p" + std::to_string(ranks);
  auto bench = read_benchmark_log(log, ranks, LatencyStatistic::kAuto);
  if (!bench) return bench.error();
  EntrySettings s;
  s.name = stem + "-calibrated";
  s.description = "emulated cluster profile " + profile + ", " + std::to_string(ranks) + " ranks";
  s.scope = "both";
  // The formula of the algorithm the benchmark's call runs there: Open MPI's libnbc takes the
  // binomial reduce + broadcast for every in-place MPI_Iallreduce (the stack's rules). Its link
  // then prices what no curve describes (the runtime's asa and rsag exchanges) at the rate the
  // wire gave; a ring fit would fold the binomial's extra rounds into the bandwidth.
  s.algorithm = "binomial";
  s.command = "dagsgd calibrate " + log + " --ranks " + std::to_string(ranks) + " --algorithm " +
              s.algorithm;
  if (nominal_bytes_per_s > 0) {
    s.nominal_bytes_per_s = nominal_bytes_per_s;
    s.command += " --nominal-gbps " + model::fmt("%g", nominal_bytes_per_s / (1e9 / 8));
  }
  auto c = calibrate_logs({*bench}, s);
  if (!c) return c.error();
  const std::string path = dir + "/" + stem + "-calibrated.json";
  DAGSGD_TRY(model::write_file(path, model::fabric_to_json(c->fabric) + "\n", true));
  return path;
}

model::Expected<model::StackSpec> emulated_cluster_stack(const std::string& base_stack) {
  auto base = model::load_stack(base_stack);
  if (!base) return base.error();
  // Open MPI's tcp BTL is limited by its CPU-driven stream on fast links (what the bundled
  // stack's "connection" says); the emulated links are shaped far below what one TCP stream
  // reaches on this machine, so there the link limits and what the library loses is a fraction
  // of the link's rate, which carries to another rate. A per-connection fit on such a link
  // would cap every faster target at the source's rate.
  base->library.bandwidth_limit = "efficiency";
  base->set_source("library.bandwidth_limit",
                   "the emulated cluster's links (at most 0.6 Gbit/s, "
                   "datasets/hardware/emucluster_profiles.json) are shaped below the 1.2-2.6 "
                   "Gbit/s one TCP stream reaches on unshaped veth on this machine (same file), "
                   "so the link, not the stream, limits (docs/validation.md, mode (c))");
  return base;
}

model::Expected<std::string> write_transfer_stack(const std::string& log,
                                                  const std::string& profile, int ranks,
                                                  const std::string& profile_fabrics,
                                                  const std::string& base_stack,
                                                  const std::string& dir) {
  const std::string stem = profile + "_p" + std::to_string(ranks);
  const std::string link_name = profile + "-profile";
  auto catalog = model::HardwareCatalog::load_default();
  if (!catalog) return catalog.error();
  DAGSGD_TRY(catalog->add_fabric_file(profile_fabrics));
  auto link = catalog->fabric(link_name);
  if (!link) return link.error();
  auto base = emulated_cluster_stack(base_stack);
  if (!base) return base.error();
  auto bench = read_benchmark_log(log, ranks, LatencyStatistic::kAuto);
  if (!bench) return bench.error();
  StackSettings s;
  // What Experiments::benchmark times: the runtime's in-place MPI_Iallreduce, one rank per host.
  s.setup.call = "iallreduce_in_place";
  // Open MPI's eager limit is known from its source (the base's 64 KiB); the benchmark has one
  // size below it, and the breaks a step fit finds above are the shaper's 128 KiB burst
  // (tools/emucluster), a property of the emulated link that would transfer as library time.
  s.fit_step = false;
  s.name = base->name + "-" + stem;
  s.command = "dagsgd calibrate " + log + " --ranks " + std::to_string(ranks) + " --stack " +
              base_stack + " (bandwidth_limit efficiency) --link " + link_name + " --fabric-file " +
              profile_fabrics + " --call " + s.setup.call + " --no-step";
  auto c = calibrate_stack_logs({*bench}, *link, *link, *base, s);
  if (!c) return model::with_context("transfer calibration on " + stem, c.error());
  const std::string path = dir + "/" + stem + "-stack.json";
  DAGSGD_TRY(model::write_file(path, model::stack_to_json(c->fit.stack) + "\n", true));
  return path;
}

void ValidationTargets::calibrate(const std::vector<std::string>& profiles,
                                  const std::vector<int>& ranks, const Benchmark& benchmark,
                                  const std::string& dir, std::vector<std::string>& problems) {
  if (!stack.empty()) {
    auto loaded = model::load_stack(stack);
    if (!loaded) {
      problems.push_back(loaded.error().message);
    } else {
      cluster_stack = std::make_shared<const model::StackSpec>(std::move(*loaded));
    }
  }
  auto specs = Catalogs::load({profile_fabrics});
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    // The line rate the entry states: the profile's (its curves give what collectives achieve).
    double nominal = 0;
    if (specs) {
      if (auto f = specs->hardware.fabric(profiles[i] + "-profile"); f) {
        nominal = f->nominal_bandwidth;
      }
    }
    for (int r : ranks) {
      const std::string key = profiles[i] + "_p" + std::to_string(r);
      auto log = benchmark(i, r);
      if (!log) {
        problems.push_back(log.error().message);
        continue;
      }
      auto file = write_calibrated_fabric(*log, profiles[i], r, dir, nominal);
      if (!file) problems.push_back(file.error().message);
      if (file) calibrated[key] = *file;
      if (!cluster_stack) continue;
      // Mode (c) predicts with the stack as a user would reuse it: read back from its file.
      auto path = write_transfer_stack(*log, profiles[i], r, profile_fabrics, stack, dir);
      auto fitted =
          path ? model::load_stack(*path) : model::Expected<model::StackSpec>(path.error());
      if (!fitted) problems.push_back(fitted.error().message);
      if (!fitted) continue;
      transfer[key] = *path;
      transfer_stacks[key] = std::make_shared<const model::StackSpec>(std::move(*fitted));
    }
  }
}

std::vector<ValidationPrediction> Validator::predict_all(const std::vector<MeasuredRun>& runs,
                                                         const ValidationTargets& targets,
                                                         const KeepReplay& keep,
                                                         std::vector<std::string>& problems) {
  std::vector<ValidationPrediction> out;
  for (std::size_t t = 0; t < runs.size(); ++t) {
    for (std::size_t s = 0; s < runs.size() && runs[t].ok; ++s) {
      if (s == t || !runs[s].ok || !runs[s].same_config(runs[t])) continue;
      for (const auto& target : targets.of(runs[s], runs[t])) {
        auto p = predict(runs, s, t, target);
        if (!p.ok) problems.push_back(p.failure);
        if (p.replay) {
          std::string error;
          auto kept = keep(p, *source_run(runs[s].run_dir, error));
          if (!kept) problems.push_back(kept.error().message);
          p.replay.reset();
        }
        out.push_back(std::move(p));
      }
    }
  }
  return out;
}

int choose_median_repeat(const std::vector<double>& mean_s, const std::vector<bool>& ok) {
  std::vector<int> done;
  for (std::size_t i = 0; i < mean_s.size() && i < ok.size(); ++i) {
    if (ok[i]) done.push_back(static_cast<int>(i));
  }
  if (done.empty()) return -1;
  std::stable_sort(done.begin(), done.end(), [&](int a, int b) { return mean_s[a] < mean_s[b]; });
  return done[(done.size() - 1) / 2];
}

void choose_repeat_trace(MeasuredRun& run) {
  std::vector<double> compute;
  const std::vector<bool> ok(run.repeats.size(), true);
  for (const auto& r : run.repeats) compute.push_back(r.compute_s);
  const int i = choose_median_repeat(compute, ok);
  if (i >= 0) run.run_dir = run.repeats[static_cast<std::size_t>(i)].run_dir;
}

model::Expected<std::string> merge_benchmark_repeats(
    const std::vector<model::Expected<std::string>>& logs, int iterations) {
  std::vector<std::string> paths;
  for (const auto& log : logs) {
    if (!log) return log.error();
    paths.push_back(*log);
  }
  if (paths.size() == 1) return paths.front();
  std::vector<trace::LatencyLog> logs_read;
  for (const auto& path : paths) {
    auto read = trace::read_latency_log(path);
    if (!read) return read.error();
    logs_read.push_back(std::move(*read));
  }
  auto median = trace::median_latency_log(logs_read, paths);
  if (!median) return median.error();
  std::string comment =
      "dagsgd allreduce latency benchmark (OSU format), per size the median "
      "of each column over " +
      std::to_string(paths.size()) + " runs:";
  for (const auto& path : paths) comment += " " + std::filesystem::path(path).filename().string();
  const std::string merged =
      paths.front().substr(0, paths.front().size() - std::string(".log").size()) + ".median.log";
  auto wrote = model::write_file(merged, trace::osu_table(*median, comment, iterations), true);
  if (!wrote) return wrote.error();
  return merged;
}

MeasuredRun Validator::median_of_repeats(const std::vector<MeasuredRun>& repeats,
                                         std::vector<std::string>& problems) {
  std::vector<double> means;
  std::vector<bool> ok;
  for (const auto& r : repeats) {
    means.push_back(r.mean_s);
    ok.push_back(r.ok);
  }
  const int median = choose_median_repeat(means, ok);
  MeasuredRun run = repeats[median < 0 ? 0 : static_cast<std::size_t>(median)];
  if (repeats.size() < 2) return run;
  for (const auto& r : repeats) {
    if (!r.ok) continue;
    auto compute = slowest_compute_s(r.run_dir);
    if (!compute) {
      problems.push_back(compute.error().message);
      continue;
    }
    run.repeats.push_back({r.run_dir, r.mean_s, *compute});
  }
  choose_repeat_trace(run);
  return run;
}

model::Expected<double> Validator::slowest_compute_s(const std::string& dir) {
  std::string error;
  const TracedWorkload* w = source_run(dir, error);
  if (w == nullptr) return model::Error{error};
  double slowest = 0;
  for (const auto& r : measured_rank_times(w->dag())) {
    slowest = std::max(slowest, static_cast<double>(r.compute) * 1e-9);
  }
  return slowest;
}

double repeat_spread(const MeasuredRun& run) {
  double spread = 0;
  if (!run.ok || run.mean_s <= 0) return spread;
  for (const auto& r : run.repeats) {
    spread = std::max(spread, std::abs(r.mean_s - run.mean_s) / run.mean_s);
  }
  return spread;
}

RepeatSummary summarize_repeats(const std::vector<MeasuredRun>& runs) {
  RepeatSummary s;
  for (const auto& r : runs) {
    if (!r.ok || r.repeats.size() < 2) continue;
    const double spread = repeat_spread(r);
    ++s.configurations;
    s.mean_spread += spread;
    if (s.worst.empty() || spread > s.worst_spread) {
      s.worst_spread = spread;
      s.worst = r.profile + " p" + std::to_string(r.ranks) + " " + r.overlap + " " +
                (r.exchange == "allreduce" ? "" : r.exchange + " ") + r.model;
    }
  }
  if (s.configurations > 0) s.mean_spread /= s.configurations;
  return s;
}

std::map<std::string, ModeSummary> summarize(const std::vector<ValidationPrediction>& predictions) {
  std::map<std::string, ModeSummary> out;
  for (const auto& p : predictions) {
    ModeSummary& s = out[p.mode];
    if (!p.ok) {
      ++s.failed;
      continue;
    }
    ++s.predictions;
    s.mean_abs_error += std::abs(p.error);
    s.worst_abs_error = std::max(s.worst_abs_error, std::abs(p.error));
  }
  for (auto& [mode, s] : out) {
    if (s.predictions > 0) s.mean_abs_error /= s.predictions;
  }
  return out;
}

}  // namespace dagsgd::sim
