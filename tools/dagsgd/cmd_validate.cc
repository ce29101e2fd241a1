// `dagsgd validate`: runs real training on the emulated cluster (tools/emucluster) under several
// shaped fabrics and scores cross-fabric predictions of `dagsgd replay` against the measurements.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "dagsgd/model/format.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/reports/trace_report.h"
#include "dagsgd/sim/calibrate.h"
#include "dagsgd/sim/scenario.h"
#include "dagsgd/trace/manifest.h"

namespace dagsgd::tools {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct ValidateFlags {
  std::vector<std::string> profiles;
  std::vector<int> ranks;
  std::vector<std::string> overlaps;
  std::vector<std::string> models;
  int ranks_per_host = 1;
  int iterations = 20;
  int warmup = 4;
  int batch = 64;
  int bench_iterations = 10;
  std::string out = "validation";
  std::string profiles_file;
  std::string emucluster;
  std::string bench;
  bool reuse = false;
  bool quick = false;
  bool no_cpu_model = false;
};

// A model of the grid: a short name for tables and the `dagsgd train` flags that select it.
struct ModelChoice {
  std::string name;
  std::string kind;  // "compute-heavy" / "communication-heavy"
  std::vector<std::string> train_args;
};

// The grid's models. `mlp-wide` is the communication-heavy one: 1.86 M parameters (7.4 MB of
// fp32 gradient per iteration) against ~0.7 GFLOP of compute per rank and iteration at batch 64;
// fc-wide.json (36.8 M parameters, 147 MB) would take seconds per iteration on these links.
const std::vector<ModelChoice>& model_choices() {
  static const std::vector<ModelChoice> kModels = {
      {"cnn", "compute-heavy", {"--model", "cnn"}},
      {"mlp-wide", "communication-heavy", {"--model", "mlp", "--widths", "1024,1024"}},
      {"fc-small", "communication-light mlp", {"--model", "fc-small"}},
      {"fc-wide", "communication-heavy (slow)", {"--model", "fc-wide"}},
  };
  return kModels;
}

struct Profile {
  std::string name;
  std::string tc_rate;
  double rate_gbps = 0;
  double latency_us = 0;
  std::string source;
};

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

model::Expected<std::vector<Profile>> load_profiles(const std::string& path) {
  auto text = model::read_file(path);
  DAGSGD_TRY(text);
  Json doc = Json::parse(*text, nullptr, false);
  const std::string where = "profile file '" + path + "'";
  if (doc.is_discarded()) return model::Error{where + ": not valid JSON"};
  if (!doc.contains("profiles") || !doc["profiles"].is_array()) {
    return model::Error{where + ": no 'profiles' list"};
  }
  std::vector<Profile> out;
  for (std::size_t i = 0; i < doc["profiles"].size(); ++i) {
    const Json& row = doc["profiles"][i];
    const std::string ctx = where + ": profile " + std::to_string(i);
    Profile p;
    if (!row.contains("name") || !row["name"].is_string()) {
      return model::Error{ctx + ": 'name' missing or not a string"};
    }
    p.name = row["name"].get<std::string>();
    for (const char* key : {"tc_rate", "source"}) {
      if (!row.contains(key) || !row[key].is_string()) {
        return model::Error{ctx + " ('" + p.name + "'): '" + key + "' missing or not a string"};
      }
    }
    p.tc_rate = row["tc_rate"].get<std::string>();
    p.source = row["source"].get<std::string>();
    for (const char* key : {"rate_gbps", "latency_us"}) {
      if (!row.contains(key) || !row[key].is_number() || row[key].get<double>() <= 0) {
        return model::Error{ctx + " ('" + p.name + "'): '" + key +
                            "' missing or not a positive number"};
      }
    }
    p.rate_gbps = row["rate_gbps"].get<double>();
    p.latency_us = row["latency_us"].get<double>();
    out.push_back(p);
  }
  return out;
}

// SIGINT/SIGTERM stop the grid: they are passed on to the running step (the cluster script then
// tears its namespaces down) and no further step starts.
volatile sig_atomic_t g_stop_signal = 0;
volatile pid_t g_child = 0;

void forward_signal(int sig) {
  g_stop_signal = sig;
  if (g_child > 0) kill(g_child, sig);
}

// Runs argv with stdout and stderr appended to `log` (stdout to `out` if given); returns the
// exit status, 128+signal when killed, or -1 when it could not start.
int run_logged(const std::vector<std::string>& argv, const std::string& log,
               const std::string& out = "") {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (g_stop_signal != 0) return 128 + g_stop_signal;
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log_fd < 0) _exit(127);
    int out_fd = log_fd;
    if (!out.empty()) {
      out_fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out_fd < 0) _exit(127);
    }
    dup2(out_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execvp(args[0], args.data());
    _exit(127);
  }
  g_child = pid;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      g_child = 0;
      return -1;
    }
  }
  g_child = 0;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::string self_exe() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("dagsgd") : exe.string();
}

// The allreduce micro-benchmark: --bench, else beside this binary in the build tree or install.
model::Expected<std::string> find_bench(const std::string& given) {
  if (!given.empty()) {
    if (!fs::is_regular_file(given)) return model::Error{"--bench '" + given + "' is not a file"};
    return fs::absolute(given).string();
  }
  fs::path dir = fs::path(self_exe()).parent_path();
  std::string tried;
  for (const fs::path& c : {dir / ".." / "runtime" / "bench" / "dagsgd-allreduce-bench",
                            dir / "dagsgd-allreduce-bench"}) {
    if (fs::is_regular_file(c)) return fs::weakly_canonical(c).string();
    tried += (tried.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  return model::Error{"cannot find dagsgd-allreduce-bench (looked in " + tried +
                      "); build that target or pass --bench"};
}

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

using model::fmt;

struct Config {
  std::string profile;
  int ranks = 0;
  std::string overlap;
  const ModelChoice* model = nullptr;
  std::string id() const {
    return profile + "_p" + std::to_string(ranks) + "_" + overlap + "_" + model->name;
  }
};

struct Measurement {
  bool ok = false;
  double mean_s = 0;
  double p50_s = 0;
  int cpus = 0;  // CPUs of the machine the ranks shared (manifest), 0 when not recorded
  std::string run_dir;
  std::string error;
};

struct Prediction {
  std::string source;
  std::string target;
  std::string mode;  // "profile" (a) or "calibrated" (b)
  const Config* config = nullptr;
  double measured_s = 0;
  double predicted_s = 0;
  double error = 0;  // (predicted - measured) / measured
  bool ok = false;
  std::string failure;
};

class Validator {
 public:
  explicit Validator(ValidateFlags flags) : f_(std::move(flags)) {}
  int run();

 private:
  std::vector<std::string> cluster(const std::string& profile, int ranks) const;
  bool measure_bench(const Profile& p, int ranks, std::string& fabric_file, std::string& error);
  Measurement measure_run(const Config& c);
  Prediction predict(const Config& target, const Measurement& target_m, const Config& source,
                     const Measurement& source_m, const std::string& mode,
                     const std::string& fabric_file, const std::string& fabric_name);
  std::string log_path(const std::string& name) const { return f_.out + "/logs/" + name + ".log"; }
  model::Expected<const sim::TracedWorkload*> source_run(const std::string& dir);

  ValidateFlags f_;
  std::string dagsgd_;
  std::string bench_;
  std::vector<Profile> profiles_;
  std::map<std::string, std::unique_ptr<sim::TracedWorkload>> runs_;
};

std::vector<std::string> Validator::cluster(const std::string& profile, int ranks) const {
  return {f_.emucluster,
          "run",
          "--profiles-file",
          f_.profiles_file,
          "--hosts",
          std::to_string(ranks / f_.ranks_per_host),
          "--ranks-per-host",
          std::to_string(f_.ranks_per_host),
          "--profile",
          profile,
          "--"};
}

// Mode (b) input: the micro-benchmark on the target profile, fitted by `dagsgd calibrate`.
bool Validator::measure_bench(const Profile& p, int ranks, std::string& fabric_file,
                              std::string& error) {
  const std::string stem = p.name + "_p" + std::to_string(ranks);
  const std::string bench_log = f_.out + "/bench/" + stem + ".log";
  fabric_file = f_.out + "/fabrics/" + stem + "-calibrated.json";
  if (!(f_.reuse && fs::is_regular_file(bench_log))) {
    std::vector<std::string> ordered = cluster(p.name, ranks);
    ordered.push_back(bench_);
    // What the training runtime does: MPI_Iallreduce in place. Open MPI 4.1 runs non-blocking
    // collectives with libnbc's algorithms, not the blocking ones it picks per size and rank
    // count, and its in-place MPI_Iallreduce is ~2.6x slower at 8 MiB on 4 ranks here. Sizes
    // from 32 KiB: below, scheduling jitter on the 2-core machine (ms) skews the whole fit.
    ordered.insert(ordered.end(),
                   {"--nonblocking", "--in-place", "--min-bytes", "32768", "--max-bytes", "8388608",
                    "--iterations", std::to_string(f_.bench_iterations), "--warmup", "3"});
    std::fprintf(stderr, "validate: micro-benchmark on %s, %d ranks\n", p.name.c_str(), ranks);
    int rc = run_logged(ordered, log_path("bench_" + stem), bench_log);
    if (rc != 0) {
      error = "micro-benchmark on " + p.name + " failed (exit " + std::to_string(rc) + "; see " +
              log_path("bench_" + stem) + ")";
      return false;
    }
  }
  // The fit and its measured curves, as `dagsgd calibrate` would write them.
  auto log = sim::read_benchmark_log(bench_log, ranks, sim::LatencyStatistic::kAuto);
  sim::EntrySettings settings;
  settings.name = stem + "-calibrated";
  settings.description =
      "emulated cluster profile " + p.name + ", " + std::to_string(ranks) + " ranks";
  settings.scope = "both";
  settings.command =
      "dagsgd calibrate " + bench_log + " --ranks " + std::to_string(ranks) + " --algorithm ring";
  auto c = log ? sim::calibrate_logs({*log}, settings)
               : model::Expected<sim::LogCalibration>(log.error());
  auto written = c ? model::write_file(fabric_file, model::fabric_to_json(c->fabric) + "\n", true)
                   : model::Expected<void>(c.error());
  if (!written) {
    error = "calibration of " + bench_log + " failed: " + written.error().message;
    return false;
  }
  return true;
}

Measurement Validator::measure_run(const Config& c) {
  Measurement m;
  m.run_dir = f_.out + "/runs/" + c.id();
  if (!(f_.reuse && fs::is_regular_file(m.run_dir + "/manifest.json"))) {
    auto argv = cluster(c.profile, c.ranks);
    argv.push_back(dagsgd_);
    argv.emplace_back("train");
    argv.insert(argv.end(), c.model->train_args.begin(), c.model->train_args.end());
    argv.insert(argv.end(), {"--iterations", std::to_string(f_.iterations), "--warmup",
                             std::to_string(f_.warmup), "--batch", std::to_string(f_.batch),
                             "--overlap", c.overlap, "--no-eval", "--trace", m.run_dir, "--force"});
    double t0 = now_s();
    int rc = run_logged(argv, log_path("train_" + c.id()));
    std::fprintf(stderr, "validate: measured %-36s %5.1f s\n", c.id().c_str(), now_s() - t0);
    if (rc != 0) {
      m.error = "training run failed (exit " + std::to_string(rc) + "; see " +
                log_path("train_" + c.id()) + ")";
      return m;
    }
  }
  auto manifest = trace::read_manifest(m.run_dir);
  if (!manifest) {
    m.error = manifest.error().message;
    return m;
  }
  m.mean_s = manifest->iterations.mean_s;
  m.p50_s = manifest->iterations.p50_s;
  if (!manifest->cpus.empty())
    m.cpus = *std::min_element(manifest->cpus.begin(), manifest->cpus.end());
  m.ok = true;
  return m;
}

Prediction Validator::predict(const Config& target, const Measurement& target_m,
                              const Config& source, const Measurement& source_m,
                              const std::string& mode, const std::string& fabric_file,
                              const std::string& fabric_name) {
  Prediction p;
  p.source = source.profile;
  p.target = target.profile;
  p.mode = mode;
  p.config = &target;
  p.measured_s = target_m.mean_s;
  const std::string stem = "replay_" + source.profile + "_to_" + target.id() + "_" + mode;
  const std::string json_out = f_.out + "/predictions/" + stem + ".json";
  auto w = source_run(source_m.run_dir);
  if (!w) {
    p.failure = "cannot read the source run: " + w.error().message;
    return p;
  }
  auto catalogs = sim::Catalogs::load({fabric_file});
  auto hw = catalogs ? sim::resolve_hardware({1, 1, fabric_name, fabric_name}, *catalogs)
                     : model::Expected<sim::Hardware>(catalogs.error());
  if (!hw) {
    p.failure = "target fabric: " + hw.error().message;
    return p;
  }
  sim::ReplayOptions ro;
  ro.target = hw->topology();
  ro.target->nodes = 0;  // the run's own layout
  ro.target->gpus_per_node = 0;
  // Every emulated host shares this machine's cores: replay runs the ranks' computation on the
  // target run's CPUs (the traced durations divided by the source's ranks per CPU first).
  if (!f_.no_cpu_model && target_m.cpus > 0) ro.cpus = target_m.cpus;
  auto r = sim::replay_trace((*w)->dag(), ro);
  if (!r) {
    p.failure = "replay failed: " + r.error().message;
    return p;
  }
  auto saved =
      model::write_file(json_out, reports::replay_json((*w)->run(), (*w)->dag(), *r), true);
  if (!saved) {
    p.failure = saved.error().message;
    return p;
  }
  p.predicted_s = r->predicted_mean_s;
  p.error = (p.predicted_s - p.measured_s) / p.measured_s;
  p.ok = true;
  return p;
}

// Each source run is read once, however many targets it predicts.
model::Expected<const sim::TracedWorkload*> Validator::source_run(const std::string& dir) {
  auto it = runs_.find(dir);
  if (it == runs_.end()) {
    auto w = sim::TracedWorkload::load({dir}, trace::ImportOptions{});
    if (!w) return w.error();
    it = runs_.emplace(dir, std::move(*w)).first;
  }
  return it->second.get();
}

struct Summary {
  int count = 0;
  int failed = 0;
  double mean_abs = 0;
  double worst_abs = 0;
};

int Validator::run() {
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  dagsgd_ = self_exe();
  auto bench = find_bench(f_.bench);
  if (!bench) return report_error(bench.error().message);
  bench_ = *bench;
  auto all_profiles = load_profiles(f_.profiles_file);
  if (!all_profiles) return report_error(all_profiles.error().message);
  std::vector<std::string> valid;
  for (const auto& p : *all_profiles) valid.push_back(p.name);
  for (const auto& name : f_.profiles) {
    auto it = std::find_if(all_profiles->begin(), all_profiles->end(),
                           [&](const Profile& p) { return p.name == name; });
    if (it == all_profiles->end()) {
      return report_error("unknown profile '" + name + "' in " + f_.profiles_file +
                          "; valid profiles: " + join(valid));
    }
    profiles_.push_back(*it);
  }
  if (profiles_.size() < 2) {
    return report_error("--profiles needs at least two profiles (a source and a target)");
  }
  std::vector<const ModelChoice*> models;
  for (const auto& name : f_.models) {
    auto it = std::find_if(model_choices().begin(), model_choices().end(),
                           [&](const ModelChoice& m) { return m.name == name; });
    if (it == model_choices().end()) {
      std::vector<std::string> names;
      for (const auto& m : model_choices()) names.push_back(m.name);
      return report_error("unknown model '" + name + "'; valid models: " + join(names));
    }
    models.push_back(&*it);
  }
  for (int r : f_.ranks) {
    if (r < 2 || r % f_.ranks_per_host != 0) {
      return report_error("--ranks " + std::to_string(r) + ": needs at least 2 ranks and a " +
                          "multiple of --ranks-per-host (" + std::to_string(f_.ranks_per_host) +
                          ")");
    }
  }
  for (const auto& o : f_.overlaps) {
    if (o != "none" && o != "wfbp") {
      return report_error("--overlap '" + o + "': valid values are none, wfbp");
    }
  }
  for (const char* sub : {"runs", "bench", "fabrics", "predictions", "logs"}) {
    std::error_code ec;
    fs::create_directories(f_.out + "/" + sub, ec);
    if (ec) return report_error("cannot create '" + f_.out + "/" + sub + "': " + ec.message());
  }
  // The cluster needs root, iproute2 and netns support: say so before anything runs.
  if (run_logged({f_.emucluster, "check"}, log_path("check")) != 0) {
    auto why = model::read_file(log_path("check"));
    if (why) std::fputs(why->c_str(), stderr);
    return report_error("the emulated cluster cannot run on this machine (see above)",
                        kExitFailure);
  }

  // Mode (a): every profile as a fabric entry: its tc rate and its measured natural latency.
  Json fabrics = Json::array();
  for (const auto& p : profiles_) {
    Json e;
    e["name"] = p.name + "-profile";
    e["description"] = "emulated cluster profile " + p.name + " (tc rate " + p.tc_rate + ")";
    e["scope"] = "both";
    e["nominal_gbps"] = p.rate_gbps;
    e["achievable_gbps"] = p.rate_gbps;
    e["latency_us"] = p.latency_us;
    e["source"] = p.source;
    fabrics.push_back(e);
  }
  const std::string profile_fabrics = f_.out + "/fabrics/profiles.json";
  auto wrote = model::write_file(profile_fabrics, Json{{"fabrics", fabrics}}.dump(2) + "\n", true);
  if (!wrote) return report_error(wrote.error().message, kExitFailure);

  // Measurements: the micro-benchmarks, then every training configuration.
  const double t_start = now_s();
  std::map<std::string, std::string> calibrated;  // profile_pR -> fabric file
  std::vector<std::string> problems;
  for (const auto& p : profiles_) {
    for (int r : f_.ranks) {
      std::string file;
      std::string error;
      if (measure_bench(p, r, file, error)) {
        calibrated[p.name + "_p" + std::to_string(r)] = file;
      } else {
        problems.push_back(error);
      }
    }
  }
  std::vector<Config> configs;
  for (const auto* m : models) {
    for (int r : f_.ranks) {
      for (const auto& o : f_.overlaps) {
        for (const auto& p : profiles_) configs.push_back(Config{p.name, r, o, m});
      }
    }
  }
  std::vector<Measurement> measured;
  for (const auto& c : configs) {
    measured.push_back(measure_run(c));
    if (!measured.back().ok) problems.push_back(c.id() + ": " + measured.back().error);
  }

  if (g_stop_signal != 0) {
    return report_error("interrupted by signal " + std::to_string(g_stop_signal), kExitFailure);
  }
  // Predictions: each configuration from the same configuration on every other profile.
  std::vector<Prediction> predictions;
  {
    for (std::size_t t = 0; t < configs.size(); ++t) {
      if (!measured[t].ok) continue;
      for (std::size_t s = 0; s < configs.size(); ++s) {
        const Config& src = configs[s];
        const Config& tgt = configs[t];
        if (s == t || !measured[s].ok || src.ranks != tgt.ranks || src.overlap != tgt.overlap ||
            src.model != tgt.model) {
          continue;
        }
        predictions.push_back(predict(tgt, measured[t], src, measured[s], "profile",
                                      profile_fabrics, tgt.profile + "-profile"));
        const std::string key = tgt.profile + "_p" + std::to_string(tgt.ranks);
        if (calibrated.count(key) != 0) {
          predictions.push_back(predict(tgt, measured[t], src, measured[s], "calibrated",
                                        calibrated[key], key + "-calibrated"));
        }
      }
    }
  }

  // The table.
  std::printf("%-10s %-10s %5s %-7s %-9s %12s %12s %12s %8s\n", "source", "target", "ranks",
              "overlap", "model", "measured_s", "pred(a)_s", "pred(b)_s", "err(b)");
  std::map<std::string, Summary> summary;
  Json rows = Json::array();
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const Prediction& p = predictions[i];
    Summary& s = summary[p.mode];
    if (!p.ok) {
      ++s.failed;
      problems.push_back(p.failure);
    } else {
      ++s.count;
      s.mean_abs += std::abs(p.error);
      s.worst_abs = std::max(s.worst_abs, std::abs(p.error));
    }
    Json row;
    row["source"] = p.source;
    row["target"] = p.target;
    row["ranks"] = p.config->ranks;
    row["overlap"] = p.config->overlap;
    row["model"] = p.config->model->name;
    row["mode"] = p.mode;
    row["measured_iteration_s"] = p.measured_s;
    if (p.ok) {
      row["predicted_iteration_s"] = p.predicted_s;
      row["error"] = p.error;
    } else {
      row["failure"] = p.failure;
    }
    rows.push_back(row);
  }
  // One line per (source, target, config): modes (a) and (b) side by side.
  for (std::size_t i = 0; i < predictions.size(); ++i) {
    const Prediction& a = predictions[i];
    if (a.mode != "profile") continue;
    const Prediction* b = nullptr;
    if (i + 1 < predictions.size() && predictions[i + 1].mode == "calibrated") {
      b = &predictions[i + 1];
    }
    auto cell = [](const Prediction* p, bool err) {
      if (p == nullptr || !p->ok) return std::string("-");
      return err ? fmt("%+.1f%%", p->error * 100) : fmt("%.4f", p->predicted_s);
    };
    std::printf("%-10s %-10s %5d %-7s %-9s %12.4f %12s %12s %8s\n", a.source.c_str(),
                a.target.c_str(), a.config->ranks, a.config->overlap.c_str(),
                a.config->model->name.c_str(), a.measured_s, cell(&a, false).c_str(),
                cell(b, false).c_str(), cell(b, true).c_str());
  }
  Json jsummary = Json::object();
  for (auto& [mode, s] : summary) {
    if (s.count > 0) s.mean_abs /= s.count;
    std::printf("mode %-10s %s: %d predictions, mean |error| %.1f%%, worst |error| %.1f%%%s\n",
                mode.c_str(), mode == "profile" ? "(a)" : "(b)", s.count, s.mean_abs * 100,
                s.worst_abs * 100,
                s.failed > 0 ? (", " + std::to_string(s.failed) + " failed").c_str() : "");
    jsummary[mode] = {{"predictions", s.count},
                      {"failed", s.failed},
                      {"mean_abs_error", s.mean_abs},
                      {"worst_abs_error", s.worst_abs}};
  }
  Json jmeasured = Json::array();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    Json m{{"profile", configs[i].profile},
           {"ranks", configs[i].ranks},
           {"overlap", configs[i].overlap},
           {"model", configs[i].model->name},
           {"run_dir", measured[i].run_dir}};
    if (measured[i].ok) {
      m["mean_iteration_s"] = measured[i].mean_s;
      m["p50_iteration_s"] = measured[i].p50_s;
    } else {
      m["failure"] = measured[i].error;
    }
    jmeasured.push_back(m);
  }
  Json jprofiles = Json::array();
  for (const auto& p : profiles_) {
    jprofiles.push_back({{"name", p.name},
                         {"tc_rate", p.tc_rate},
                         {"rate_gbps", p.rate_gbps},
                         {"latency_us", p.latency_us}});
  }
  Json doc{{"tool_version", model::tool_version()},
           {"cores", sysconf(_SC_NPROCESSORS_ONLN)},
           {"iterations", f_.iterations},
           {"warmup", f_.warmup},
           {"batch", f_.batch},
           {"ranks_per_host", f_.ranks_per_host},
           {"host_cpu_model", !f_.no_cpu_model},
           {"profiles", jprofiles},
           {"measured", jmeasured},
           {"predictions", rows},
           {"summary", jsummary},
           {"problems", problems},
           {"wall_s", now_s() - t_start}};
  const std::string json_path = f_.out + "/validation.json";
  wrote = model::write_file(json_path, doc.dump(2) + "\n", true);
  if (!wrote) return report_error(wrote.error().message, kExitFailure);
  std::printf("wrote %s\n", json_path.c_str());
  for (const auto& p : problems) std::fprintf(stderr, "validate: problem: %s\n", p.c_str());
  return problems.empty() ? kExitOk : kExitFailure;
}

}  // namespace

void add_validate(CLI::App& root, Action& action) {
  auto flags = std::make_shared<ValidateFlags>();
  CLI::App* cmd = root.add_subcommand(
      "validate",
      "Train on the emulated cluster (tools/emucluster; needs root) under several shaped "
      "fabrics, predict each run from a trace taken on another fabric with `dagsgd replay`, and "
      "print the error table (docs/validation.md)");
  flags->profiles = {"emu-600m", "emu-250m", "emu-100m"};
  flags->ranks = {2, 4};
  flags->overlaps = {"none", "wfbp"};
  flags->models = {"cnn", "mlp-wide"};
  cmd->add_option("--profiles", flags->profiles, "fabric profiles (emu-600m,emu-250m,emu-100m)")
      ->delimiter(',');
  cmd->add_option("--ranks", flags->ranks, "rank counts (2,4)")->delimiter(',');
  cmd->add_option("--overlap", flags->overlaps, "overlap policies (none,wfbp)")->delimiter(',');
  cmd->add_option("--models", flags->models,
                  "models: cnn (compute-heavy), mlp-wide (communication-heavy), fc-small, "
                  "fc-wide (cnn,mlp-wide)")
      ->delimiter(',');
  cmd->add_option("--ranks-per-host", flags->ranks_per_host, "MPI ranks per emulated host (1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--iterations", flags->iterations, "training iterations per run (20)")
      ->check(CLI::Range(3, 100000));
  cmd->add_option("--warmup", flags->warmup, "leading iterations left out of the mean (4)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch", flags->batch, "mini-batch per rank (64)")->check(CLI::PositiveNumber);
  cmd->add_option("--bench-iterations", flags->bench_iterations,
                  "micro-benchmark iterations per size (10)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out", flags->out, "output directory (validation)");
  cmd->add_option("--profiles-file", flags->profiles_file,
                  "profile data (datasets/hardware/emucluster_profiles.json)");
  cmd->add_option("--emucluster", flags->emucluster, "the cluster script (tools/emucluster)");
  cmd->add_option("--bench", flags->bench, "dagsgd-allreduce-bench (found beside dagsgd)");
  cmd->add_flag("--no-cpu-model", flags->no_cpu_model,
                "replay with the traced compute durations as they are, instead of running the "
                "ranks' computation on the machine's cores (replay --cpus)");
  cmd->add_flag("--reuse", flags->reuse,
                "reuse run directories and benchmark logs already in --out (re-predict only)");
  cmd->add_flag("--quick", flags->quick,
                "the short CI version: emu-600m and emu-100m, 2 ranks, wfbp, mlp-wide, 15 "
                "iterations");
  cmd->callback([flags, &action] {
    action = [flags] {
      ValidateFlags f = *flags;
      if (f.quick) {
        f.profiles = {"emu-600m", "emu-100m"};
        f.ranks = {2};
        f.overlaps = {"wfbp"};
        f.models = {"mlp-wide"};
        f.iterations = 15;
        f.warmup = 3;
        f.bench_iterations = 10;
      }
      if (f.warmup >= f.iterations) {
        return report_error("--warmup (" + std::to_string(f.warmup) +
                            ") must be below --iterations (" + std::to_string(f.iterations) + ")");
      }
      fs::path root_dir = fs::path(model::data_dir()).parent_path();
      if (f.profiles_file.empty()) {
        f.profiles_file = model::data_path("hardware/emucluster_profiles.json");
      }
      if (f.emucluster.empty()) f.emucluster = (root_dir / "tools" / "emucluster").string();
      if (!fs::is_regular_file(f.emucluster)) {
        return report_error("cannot find the cluster script '" + f.emucluster +
                            "'; pass --emucluster");
      }
      return Validator(f).run();
    };
  });
}

}  // namespace dagsgd::tools
