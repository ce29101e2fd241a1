// Runs on the emulated cluster (emulated_cluster.h): profiles, the micro-benchmark and traced
// training, each a child process under the cluster script with its output in a log.
#include "dagsgd/runtime/emulated_cluster.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/runtime/process.h"
#include "dagsgd/trace/manifest.h"

namespace dagsgd::runtime {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {
// What names a repeat's run directory and benchmark log: "" for the first, ".r2", ".r3", ...
std::string repeat_suffix(int repeat) {
  return repeat <= 0 ? "" : ".r" + std::to_string(repeat + 1);
}
}  // namespace

model::Expected<std::vector<ClusterProfile>> load_cluster_profiles(const std::string& path) {
  auto text = model::read_file(path);
  if (!text) return text.error();
  Json doc = Json::parse(*text, nullptr, false);
  const std::string where = "profile file '" + path + "'";
  if (doc.is_discarded()) return model::Error{where + ": not valid JSON"};
  if (!doc.contains("profiles") || !doc["profiles"].is_array()) {
    return model::Error{where + ": no 'profiles' list"};
  }
  std::vector<ClusterProfile> out;
  for (std::size_t i = 0; i < doc["profiles"].size(); ++i) {
    const Json& row = doc["profiles"][i];
    const std::string ctx = where + ": profile " + std::to_string(i);
    ClusterProfile p;
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
      if (!row.contains(key) || !row[key].is_number() || !(row[key].get<double>() > 0) ||
          row[key].get<double>() > 1e9) {
        return model::Error{ctx + " ('" + p.name + "'): '" + key +
                            "' missing or not a positive number"};
      }
    }
    p.rate_gbps = row["rate_gbps"].get<double>();
    p.latency_us = row["latency_us"].get<double>();
    // Every profile is shaped by tools/emucluster, so every one has the shaper's burst.
    if (!row.contains("burst_bytes") || !row["burst_bytes"].is_number_integer() ||
        row["burst_bytes"].get<long long>() < 0 ||
        row["burst_bytes"].get<long long>() > (1LL << 40)) {
      return model::Error{ctx + " ('" + p.name +
                          "'): 'burst_bytes' missing or not a whole number of bytes from 0 to 2^40 "
                          "(tools/emucluster burst " +
                          p.tc_rate + " prints it)"};
    }
    p.burst_bytes = row["burst_bytes"].get<long long>();
    out.push_back(p);
  }
  return out;
}

// `mlp-wide` is the communication-heavy one: 1.86 M parameters (7.4 MB of fp32 gradient per
// iteration) against ~0.7 GFLOP of compute per rank and iteration at batch 64; `mlp-mid` (0.67 M
// parameters, 2.7 MB) and `fc-small` (0.24 M, 0.94 MB) sit between it and `cnn`; fc-wide.json
// (36.8 M parameters, 147 MB) would take seconds per iteration on these links. Iteration
// factors: at the fastest profiles an iteration of cnn takes ~30 ms, of fc-small ~80 ms, of
// mlp-mid ~210 ms and of mlp-wide ~220 ms; 4x and 2x give every run at least ~2.3 s of measured
// iterations at the default 20 (4 of them warm-up).
const std::vector<TrainingModel>& training_models() {
  static const std::vector<TrainingModel> kModels = {
      {"cnn", "compute-heavy", {"--model", "cnn"}, 4},
      {"mlp-wide", "communication-heavy", {"--model", "mlp", "--widths", "1024,1024"}, 1},
      {"mlp-mid", "balanced", {"--model", "mlp", "--widths", "512,512"}, 1},
      {"fc-small", "communication-light mlp", {"--model", "fc-small"}, 2},
      {"fc-wide", "communication-heavy (slow)", {"--model", "fc-wide"}, 1},
  };
  return kModels;
}

std::string ExperimentRun::id() const {
  const std::string ex = exchange == "allreduce" ? "" : exchange + "_";
  return profile + "_p" + std::to_string(ranks) + "_" + overlap + "_" + ex + model->name;
}

std::vector<ExperimentRun> ExperimentGrid::runs() const {
  std::vector<ExperimentRun> out;
  for (const auto* m : models) {
    for (int r : ranks) {
      for (const auto& o : overlaps) {
        for (const auto& e : exchanges) {
          for (const auto& p : profiles) out.push_back({p.name, r, o, m, e});
        }
      }
    }
  }
  return out;
}

namespace {

// The cluster script and the benchmark: the user's, or found in the build and source trees.
model::Expected<void> find_tools(ExperimentSettings& s) {
  const fs::path root = fs::path(model::data_dir()).parent_path();
  if (s.profiles_file.empty()) {
    s.profiles_file = model::data_path("hardware/emucluster_profiles.json");
  }
  if (s.cluster.empty()) s.cluster = (root / "tools" / "emucluster").string();
  if (!fs::is_regular_file(s.cluster)) {
    return model::Error{"cannot find the cluster script '" + s.cluster + "'; pass --emucluster"};
  }
  s.dagsgd = self_exe("dagsgd");
  if (!s.bench.empty()) {
    if (fs::is_regular_file(s.bench)) return model::ok();
    return model::Error{"--bench '" + s.bench + "' is not a file"};
  }
  const fs::path dir = fs::path(s.dagsgd).parent_path();
  for (const fs::path& c : {dir / ".." / "runtime" / "bench" / "dagsgd-allreduce-bench",
                            dir / "dagsgd-allreduce-bench"}) {
    if (s.bench.empty() && fs::is_regular_file(c)) s.bench = fs::weakly_canonical(c);
  }
  if (!s.bench.empty()) return model::ok();
  return model::Error{"cannot find dagsgd-allreduce-bench beside " + s.dagsgd +
                      "; build that target or pass --bench"};
}

}  // namespace

model::Expected<ExperimentGrid> resolve_experiments(ExperimentNames n, ExperimentSettings& s) {
  if (n.quick) {
    n.profiles = {"emu-600m", "emu-250m"};
    n.ranks = {2};
    n.overlaps = {"wfbp"};
    n.models = {"mlp-wide"};
    s.iterations = 15;
    s.warmup = 3;
  }
  if (s.warmup >= s.iterations) {
    return model::Error{"--warmup (" + std::to_string(s.warmup) + ") must be below --iterations (" +
                        std::to_string(s.iterations) + ")"};
  }
  DAGSGD_TRY(find_tools(s));
  ExperimentGrid g{{}, n.ranks, n.overlaps, {}, n.exchanges};
  auto all = load_cluster_profiles(s.profiles_file);
  if (!all) return all.error();
  std::vector<std::string> names;
  for (const auto& p : *all) names.push_back(p.name);
  const model::NameRegistry profiles("profile", names);
  for (const auto& name : n.profiles) {
    DAGSGD_TRY(profiles.check(name));
    for (const auto& p : *all) {
      if (p.name == name) g.profiles.push_back(p);
    }
  }
  if (g.profiles.size() < 2) {
    return model::Error{"--profiles needs at least two profiles (a source and a target)"};
  }
  names.clear();
  for (const auto& m : training_models()) names.push_back(m.name);
  const model::NameRegistry models("model", names);
  for (const auto& name : n.models) {
    DAGSGD_TRY(models.check(name));
    for (const auto& m : training_models()) {
      if (m.name == name) g.models.push_back(&m);
    }
  }
  for (int r : g.ranks) {
    if (r < 2 || r % s.ranks_per_host != 0) {
      return model::Error{"--ranks " + std::to_string(r) +
                          ": needs at least 2 ranks and a multiple of --ranks-per-host (" +
                          std::to_string(s.ranks_per_host) + ")"};
    }
  }
  for (const auto& o : g.overlaps) {
    if (o != "none" && o != "wfbp") {
      return model::Error{"--overlap '" + o + "': valid values are none, wfbp"};
    }
  }
  const model::NameRegistry exchanges(
      "exchange",
      std::vector<std::string>(std::begin(kValidatedExchanges), std::end(kValidatedExchanges)));
  if (g.exchanges.empty()) return model::Error{"--exchange: give at least one exchange"};
  for (const auto& e : g.exchanges) {
    if (e == "ps") {
      return model::Error{
          "--exchange 'ps': replay keeps a parameter server's spans as measured (no plan of the "
          "model prices them), so a grid of ps runs has nothing to predict; valid values are " +
          exchanges.list()};
    }
    DAGSGD_TRY(exchanges.check(e));
  }
  return g;
}

model::Expected<void> write_profile_fabrics(const std::string& path,
                                            const std::vector<ClusterProfile>& profiles) {
  Json fabrics = Json::array();
  for (const auto& p : profiles) {
    fabrics.push_back(
        {{"name", p.name + "-profile"},
         {"description", "emulated cluster profile " + p.name + " (tc rate " + p.tc_rate + ")"},
         {"scope", "both"},
         {"nominal_gbps", p.rate_gbps},
         {"achievable_gbps", p.rate_gbps},
         {"latency_us", p.latency_us},
         {"burst_bytes", p.burst_bytes},
         {"source", p.source}});
  }
  return model::write_file(path, Json{{"fabrics", fabrics}}.dump(2) + "\n", true);
}

namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// What went wrong with a step, pointing at its log.
std::string failed(const std::string& what, const ProcessResult& r, const std::string& log) {
  return what + " " + r.describe() + " (see " + log + ")";
}

}  // namespace

std::string Experiments::log_path(const std::string& name) const {
  return s_.out + "/logs/" + name + ".log";
}

std::vector<std::string> Experiments::on_cluster(const std::string& profile, int ranks) const {
  return {s_.cluster,
          "run",
          "--profiles-file",
          s_.profiles_file,
          "--hosts",
          std::to_string(ranks / s_.ranks_per_host),
          "--ranks-per-host",
          std::to_string(s_.ranks_per_host),
          "--profile",
          profile,
          "--"};
}

model::Expected<void> Experiments::check_cluster() const {
  ProcessOptions po;
  po.log = log_path("check");
  if (run_process({s_.cluster, "check"}, po).ok()) return model::ok();
  auto why = model::read_file(po.log);
  return model::Error{"the emulated cluster cannot run on this machine" +
                      (why ? ":\n" + *why : std::string())};
}

model::Expected<void> write_grid(const std::string& path, const ExperimentGrid& g,
                                 const ExperimentSettings& s) {
  Json doc;
  doc["profiles"] = Json::array();
  for (const auto& p : g.profiles) doc["profiles"].push_back(p.name);
  doc["ranks"] = g.ranks;
  doc["overlaps"] = g.overlaps;
  doc["exchanges"] = g.exchanges;
  doc["models"] = Json::array();
  for (const auto* m : g.models) doc["models"].push_back(m->name);
  doc["iterations"] = s.iterations;
  doc["warmup"] = s.warmup;
  doc["batch"] = s.batch;
  doc["ranks_per_host"] = s.ranks_per_host;
  doc["bench_iterations"] = s.bench_iterations;
  doc["repeats"] = s.repeats;
  // What tools/emucluster and the benchmark do since they are so (read by people, not by
  // --reuse: a reused benchmark log says itself how it was timed).
  doc["placement"] = "spread";
  doc["benchmark"] = "back-to-back";
  return model::write_file(path, doc.dump(2) + "\n", true);
}

model::Expected<bool> read_grid(const std::string& path, ExperimentNames& n,
                                ExperimentSettings& s) {
  if (!fs::exists(path)) return false;
  auto text = model::read_file(path);
  if (!text) return text.error();
  const Json doc = Json::parse(*text, nullptr, false);
  const std::string where = "grid file '" + path + "'";
  if (doc.is_discarded() || !doc.is_object()) return model::Error{where + ": not a JSON object"};
  ExperimentNames got;
  for (auto [key, list] :
       {std::pair{"profiles", &got.profiles}, std::pair{"overlaps", &got.overlaps},
        std::pair{"models", &got.models}}) {
    if (!doc.contains(key) || !doc[key].is_array()) {
      return model::Error{where + ": '" + key + "' missing or not a list"};
    }
    list->clear();
    for (const auto& v : doc[key]) {
      if (!v.is_string()) return model::Error{where + ": '" + key + "' holds a non-string"};
      list->push_back(v.get<std::string>());
    }
  }
  if (!doc.contains("ranks") || !doc["ranks"].is_array()) {
    return model::Error{where + ": 'ranks' missing or not a list"};
  }
  got.ranks.clear();
  for (const auto& v : doc["ranks"]) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 2 || v.get<std::int64_t>() > 1 << 20) {
      return model::Error{where + ": 'ranks' holds a value that is not a rank count (2 or more)"};
    }
    got.ranks.push_back(v.get<int>());
  }
  // Recorded since `--exchange`; a grid file from before measured allreduce.
  got.exchanges = {"allreduce"};
  if (doc.contains("exchanges")) {
    const Json& e = doc["exchanges"];
    if (!e.is_array() || e.empty()) {
      return model::Error{where + ": 'exchanges' is not a non-empty list"};
    }
    got.exchanges.clear();
    for (const auto& v : e) {
      if (!v.is_string()) return model::Error{where + ": 'exchanges' holds a non-string"};
      got.exchanges.push_back(v.get<std::string>());
    }
  }
  ExperimentSettings set = s;
  struct Setting {
    const char* key;
    int* field;
    int least;  // what the flag of the same name accepts
  };
  for (const Setting& k :
       {Setting{"iterations", &set.iterations, 3}, Setting{"warmup", &set.warmup, 0},
        Setting{"batch", &set.batch, 1}, Setting{"ranks_per_host", &set.ranks_per_host, 1},
        Setting{"bench_iterations", &set.bench_iterations, 1}}) {
    const std::string key = k.key;
    if (!doc.contains(key) || !doc[key].is_number_integer() ||
        doc[key].get<std::int64_t>() < k.least || doc[key].get<std::int64_t>() > 1 << 30) {
      return model::Error{where + ": '" + key +
                          "' missing or not an integer >= " + std::to_string(k.least)};
    }
    *k.field = doc[key].get<int>();
  }
  // Recorded since `--repeats`; a grid file from before measured every configuration once.
  set.repeats = 1;
  if (doc.contains("repeats")) {
    const Json& r = doc["repeats"];
    if (!r.is_number_integer() || r.get<std::int64_t>() < 1 ||
        r.get<std::int64_t>() > kMaxRepeats) {
      return model::Error{where + ": 'repeats' is not an integer from 1 to " +
                          std::to_string(kMaxRepeats)};
    }
    set.repeats = r.get<int>();
  }
  n = got;
  s = set;
  return true;
}

model::Expected<void> Experiments::lock_out() {
  const std::string path = s_.out + "/.validate.lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return model::Error{"cannot open '" + path + "': " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return model::Error{"'" + s_.out + "' is in use by another `dagsgd validate` (it holds " +
                          path + "); wait for it or pass another --out"};
    }
    return model::Error{"cannot lock '" + path + "': " + std::strerror(err)};
  }
  lock_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
    ::close(*p);
    delete p;
  });
  return model::ok();
}

model::Expected<void> Experiments::make_directories() const {
  for (const char* sub : {"runs", "bench", "fabrics", "predictions", "logs"}) {
    std::error_code ec;
    fs::create_directories(s_.out + "/" + sub, ec);
    if (ec) return model::Error{"cannot create '" + s_.out + "/" + sub + "': " + ec.message()};
  }
  return model::ok();
}

model::Expected<std::string> Experiments::benchmark(const ClusterProfile& p, int ranks,
                                                    int repeat) const {
  const std::string stem = p.name + "_p" + std::to_string(ranks) + repeat_suffix(repeat);
  const std::string bench_log = s_.out + "/bench/" + stem + ".log";
  if (s_.reuse && fs::is_regular_file(bench_log)) {
    auto text = model::read_file(bench_log);
    if (!text) return text.error();
    if (text->find("back to back") == std::string::npos) {
      return model::Error{"'" + bench_log +
                          "' times its calls between barriers (a validate before benchmarks ran "
                          "back to back, on ranks spread over the cores): remove the grid's "
                          "bench/ logs to measure them again, or use another --out"};
    }
    return bench_log;
  }
  std::vector<std::string> argv = on_cluster(p.name, ranks);
  argv.push_back(s_.bench);
  // What the training runtime does: MPI_Iallreduce in place. Open MPI 4.1 runs non-blocking
  // collectives with libnbc's algorithms (in place: binomial reduce + broadcast), not the
  // blocking ones it picks per size and rank count. Back to back, as a training loop issues
  // them: each rank starts a call as soon as its previous one ended, so a rank that is done
  // early waits inside the next call, as in training. Between barriers the slowest rank's time
  // of one call can exceed the stream's by 15% (3 ranks; docs/validation.md, "One placement").
  // Sizes from 32 KiB: below, scheduling jitter on the 2-core machine skews the whole fit.
  argv.insert(argv.end(), {"--nonblocking", "--in-place", "--back-to-back", "--min-bytes", "32768",
                           "--max-bytes", "8388608", "--iterations",
                           std::to_string(s_.bench_iterations), "--warmup", "3"});
  std::fprintf(stderr, "validate: micro-benchmark on %s, %d ranks\n", p.name.c_str(), ranks);
  ProcessOptions po;
  po.log = log_path("bench_" + stem);
  po.stdout_file = bench_log;
  const ProcessResult r = run_process(argv, po);
  if (!r.ok()) return model::Error{failed("micro-benchmark on " + p.name, r, po.log)};
  return bench_log;
}

std::string ExperimentRun::dir_name(int repeat) const { return id() + repeat_suffix(repeat); }

int Experiments::run_iterations(const ExperimentRun& run) const {
  return s_.iterations * std::max(1, run.model->iteration_factor);
}

Measurement Experiments::train(const ExperimentRun& run, int repeat) const {
  Measurement m;
  m.run_dir = s_.out + "/runs/" + run.dir_name(repeat);
  if (!(s_.reuse && !trace::find_manifest(m.run_dir).empty())) {
    auto argv = on_cluster(run.profile, run.ranks);
    argv.push_back(s_.dagsgd);
    argv.emplace_back("train");
    argv.insert(argv.end(), run.model->train_args.begin(), run.model->train_args.end());
    argv.insert(argv.end(), {"--iterations", std::to_string(run_iterations(run)), "--warmup",
                             std::to_string(s_.warmup), "--batch", std::to_string(s_.batch),
                             "--overlap", run.overlap, "--exchange", run.exchange, "--no-eval",
                             "--trace", m.run_dir, "--force"});
    const double t0 = now_s();
    ProcessOptions po;
    po.log = log_path("train_" + run.dir_name(repeat));
    const ProcessResult r = run_process(argv, po);
    std::fprintf(stderr, "validate: measured %-36s %5.1f s\n", run.dir_name(repeat).c_str(),
                 now_s() - t0);
    if (!r.ok()) {
      m.error = failed("training run", r, po.log);
      return m;
    }
  }
  auto manifest = trace::read_manifest(m.run_dir);
  if (!manifest) {
    m.error = manifest.error().message;
    return m;
  }
  // A reused run must be one of this grid's: one with other iterations would be measured and
  // replayed as if it were.
  const std::size_t want = static_cast<std::size_t>(run_iterations(run));
  if (manifest->iterations.times_s.size() != want || manifest->iterations.warmup != s_.warmup) {
    m.error = "run directory '" + m.run_dir + "' holds " +
              std::to_string(manifest->iterations.times_s.size()) + " iterations (" +
              std::to_string(manifest->iterations.warmup) + " warm-up), this grid trains " +
              std::to_string(want) + " (" + std::to_string(s_.warmup) +
              " warm-up): remove it, or give another --out";
    return m;
  }
  // A reused run of another exchange would be predicted as this one (a manifest that predates
  // the key trained allreduce).
  const auto ex = manifest->config.find("exchange");
  const std::string traced = ex == manifest->config.end() ? "allreduce" : ex->second;
  if (traced != run.exchange) {
    m.error = "run directory '" + m.run_dir + "' trained --exchange " + traced +
              ", this grid's run trains " + run.exchange + ": remove it, or give another --out";
    return m;
  }
  m.mean_s = manifest->iterations.mean_s;
  m.p50_s = manifest->iterations.p50_s;
  for (int c : manifest->cpus) m.cpus = m.cpus == 0 ? c : std::min(m.cpus, c);
  m.ok = true;
  return m;
}

}  // namespace dagsgd::runtime
