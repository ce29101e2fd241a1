// Transfer calibration end to end on runs made here (label mpi): `dagsgd calibrate --trace` on a
// traced MPI micro-benchmark sees every call and fits them as a log of them would be fitted, and
// refuses runs it cannot use, and validate's mode (c) fits a stack per source profile and predicts
// every target from its spec entry with it (sim/validation.h), as `dagsgd validate --reuse` does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/cli_runner.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/stack.h"
#include "dagsgd/reports/validation_report.h"
#include "dagsgd/runtime/emulated_cluster.h"
#include "dagsgd/sim/validation.h"

namespace {

using dagsgd::testing::run_cli;
namespace fs = std::filesystem;

const std::string kMpirun = "mpirun --allow-run-as-root --oversubscribe -np 2 ";

std::string fresh_dir(const std::string& name) {
  const std::string dir = (fs::temp_directory_path() / name).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

bool sh(const std::string& cmd) { return std::system((cmd + " 2>/dev/null").c_str()) == 0; }

// The blocking allreduce benchmark under the PMPI tracer: a run directory whose allreduces are
// alone in flight, and the benchmark's own log of the same calls.
struct CollectedBenchmark {
  std::string run;
  std::string log;
};
const CollectedBenchmark& collected_benchmark() {
  static const CollectedBenchmark c = [] {
    const std::string dir = fresh_dir("dagsgd-transfer-collect");
    CollectedBenchmark out{dir + "/run", dir + "/allreduce2.log"};
    if (!sh(std::string(DAGSGD_BINARY) + " collect --out " + out.run + " -- " + kMpirun +
            DAGSGD_BENCH + " --min-bytes 65536 --max-bytes 4194304 --iterations 20 --warmup 2 >" +
            out.log)) {
      out.run.clear();
    }
    return out;
  }();
  return c;
}

double json_number(const nlohmann::json& j, const char* key) { return j.at(key).get<double>(); }

TEST(TransferMpi, CalibrateTraceFitsEveryCallOfATracedBenchmark) {
  const auto& c = collected_benchmark();
  ASSERT_FALSE(c.run.empty()) << "dagsgd collect of the benchmark failed";
  // The ranks share memory: a link faster than that, with a shared-memory latency, so that what
  // the library reached is its per-connection rate.
  const std::string links = c.run + "/../links.json";
  {
    std::ofstream f(links);
    f << R"({"fabrics": [{"name": "shm-test", "description": "test", "scope": "both",
         "nominal_gbps": 400, "achievable_gbps": 400, "latency_us": 1, "source": "test"}]})";
  }
  const std::string stack_flags = " --stack openmpi-4.1-tcp --link shm-test --fabric-file " +
                                  links + " --call allreduce --json";
  const std::string out = c.run + "/../trace.stack.json";
  auto traced = run_cli("calibrate --trace " + c.run + stack_flags + " --out " + out);
  ASSERT_EQ(traced.code, 0) << traced.err;
  // Every call the benchmark made (7 sizes from 64 KiB to 4 MiB, 2 warm-up and 20 timed calls
  // each) was traced and ran alone; the tracer knows no warm-up of the benchmark's own.
  EXPECT_NE(traced.err.find("154 allreduces alone in flight; left out 0 overlapping another"),
            std::string::npos)
      << traced.err;
  const auto t = nlohmann::json::parse(traced.out);
  ASSERT_EQ(t.at("points").size(), 7u) << traced.out;
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(t["points"][i]["bytes"].get<std::int64_t>(), std::int64_t{65536} << i);
  }
  // A fit, not a guess: the stack explains the traced calls (on a busy 2-core machine a
  // shared-memory call of a few MiB varies by milliseconds, so the bound is loose).
  EXPECT_LT(json_number(t, "rms_relative_error"), 0.5) << traced.out;
  // The trace's series is a micro-benchmark log: the same numbers as a log fit the same stack.
  const std::string log = c.run + "/../traced.log";
  {
    std::ofstream f(log);
    f << "# Size       Avg Latency(us)\n";
    for (const auto& p : t["points"]) {
      f << p["bytes"].get<std::int64_t>() << " " << std::setprecision(12)
        << p["measured_us"].get<double>() << "\n";
    }
  }
  auto from_log = run_cli("calibrate " + log + " --ranks 2" + stack_flags);
  ASSERT_EQ(from_log.code, 0) << from_log.err;
  const auto l = nlohmann::json::parse(from_log.out);
  for (const char* key : {"per_message_us", "connection_gbps", "rms_relative_error"}) {
    EXPECT_NEAR(json_number(t, key), json_number(l, key), 1e-6 * (1 + json_number(l, key))) << key;
  }
  // The written stack is what --stack FILE loads, and says how it was made.
  auto stack = dagsgd::model::load_stack(out);
  ASSERT_TRUE(stack.ok()) << stack.error().message;
  EXPECT_NE(stack->source_of("library.per_message_us").find("--trace " + c.run), std::string::npos);
}

TEST(TransferMpi, CalibrateTraceRefusesRunsItCannotUse) {
  const std::string flags = " --stack openmpi-4.1-tcp --link 10gbe";
  auto missing = run_cli("calibrate --trace /nonexistent/run" + flags);
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/run"), std::string::npos) << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;

  // A traced run with point-to-point messages only.
  const std::string dir = fresh_dir("dagsgd-transfer-pingpong") + "/run";
  ASSERT_TRUE(sh(std::string(DAGSGD_BINARY) + " collect --out " + dir + " -- " + kMpirun +
                 DAGSGD_PINGPONG + " --max-bytes 4096 --iterations 5 --warmup 1 >/dev/null"));
  auto none = run_cli("calibrate --trace " + dir + flags);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no group size has allreduces"), std::string::npos) << none.err;
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;

  // A trace needs a stack to fit, and logs and a trace do not mix.
  EXPECT_EQ(run_cli("calibrate --trace " + dir).code, 2);
  EXPECT_EQ(run_cli("calibrate " + collected_benchmark().log + " --trace " + dir + flags).code, 2);
}

// Validate's mode (c) on two traced training runs of one configuration and a micro-benchmark
// log per profile, made here without the emulated cluster: both profiles are this machine, the
// profile entries say what each "fabric" is.
TEST(TransferMpi, ValidatorPredictsEachTargetWithTheSourceStack) {
  namespace sim = dagsgd::sim;
  const std::string out = fresh_dir("dagsgd-transfer-validate");
  fs::create_directories(out + "/fabrics");
  const std::vector<std::string> profiles = {"fast", "slow"};
  std::vector<sim::MeasuredRun> runs;
  std::vector<std::string> logs;
  for (const auto& p : profiles) {
    const std::string run = out + "/runs/" + p;
    ASSERT_TRUE(sh(kMpirun + DAGSGD_BINARY +
                   " train --model mlp --widths 512,256 --iterations 8 --warmup 2 --overlap "
                   "none --no-eval --trace " +
                   run + " >/dev/null"));
    auto manifest = nlohmann::json::parse(dagsgd::testing::slurp(run + "/run.manifest"));
    sim::MeasuredRun m;
    m.profile = p;
    m.ranks = 2;
    m.overlap = "none";
    m.model = "mlp";
    m.run_dir = run;
    m.ok = true;
    m.mean_s = manifest["iterations"]["mean_s"].get<double>();
    runs.push_back(m);
    logs.push_back(out + "/" + p + "_p2.log");
    ASSERT_TRUE(sh(kMpirun + DAGSGD_BENCH +
                   " --nonblocking --in-place --min-bytes 32768 --max-bytes 1048576 "
                   "--iterations 5 --warmup 1 >" +
                   logs.back()));
  }
  sim::ValidationTargets targets;
  targets.profile_fabrics = out + "/fabrics/profiles.json";
  targets.stack = dagsgd::runtime::kEmulatedClusterStack;
  ASSERT_TRUE(dagsgd::runtime::write_profile_fabrics(
                  targets.profile_fabrics,
                  {{"fast", "10gbit", 10, 10, "test"}, {"slow", "1gbit", 1, 10, "test"}})
                  .ok());
  std::vector<std::string> problems;
  auto benchmark = [&](std::size_t p, int ranks) -> dagsgd::model::Expected<std::string> {
    EXPECT_EQ(ranks, 2);
    return logs[p];
  };
  targets.calibrate(profiles, {2}, benchmark, out + "/fabrics", problems);
  ASSERT_TRUE(problems.empty()) << problems.front();
  ASSERT_EQ(targets.transfer.size(), 2u);
  for (const auto& p : profiles) {
    const std::string file = targets.transfer.at(p + "_p2");
    EXPECT_EQ(file, out + "/fabrics/" + p + "_p2-stack.json");
    auto stack = dagsgd::model::load_stack(file);
    ASSERT_TRUE(stack.ok()) << stack.error().message;
    EXPECT_EQ(stack->name, "openmpi-4.1-tcp-" + p + "_p2");
    EXPECT_EQ(stack->library.bandwidth_limit, "efficiency");
    EXPECT_NE(stack->source_of("library.efficiency").find("--link " + p + "-profile"),
              std::string::npos);
  }

  for (const char* network : {"analytic", "flow"}) {
    SCOPED_TRACE(network);
    sim::Validator validator(true, network);
    int kept = 0;
    auto keep = [&](const sim::ValidationPrediction&, const sim::TracedWorkload&) {
      ++kept;
      return dagsgd::model::ok();
    };
    auto predictions = validator.predict_all(runs, targets, keep, problems);
    ASSERT_TRUE(problems.empty()) << problems.front();
    ASSERT_EQ(predictions.size(), 8u);  // 2 directions x 4 modes
    EXPECT_EQ(kept, 8);
    for (std::size_t i = 0; i < predictions.size(); i += 4) {
      const auto& a = predictions[i];
      const auto& c = predictions[i + 2];
      const auto& d = predictions[i + 3];
      EXPECT_EQ(a.mode, "profile");
      EXPECT_EQ(predictions[i + 1].mode, "calibrated");
      EXPECT_EQ(c.mode, "transfer");
      EXPECT_EQ(d.mode, "stack");
      EXPECT_EQ(c.source, a.source);
      EXPECT_EQ(c.target, a.target);
      EXPECT_EQ(d.target, a.target);
      ASSERT_TRUE(c.ok) << c.failure;
      ASSERT_TRUE(d.ok) << d.failure;
      EXPECT_GT(c.predicted_s, 0);
      // The stack prices the collectives (Open MPI's in-place binomial reduce + broadcast and
      // the fitted per-message cost), not the bare link's formula: another prediction.
      EXPECT_GT(std::abs(c.predicted_s - a.predicted_s), 1e-3 * a.predicted_s);
      // Mode (d) lays the collectives out as the stack does, with its bundled constants: not
      // the bare link's formula either, and not the source's fit.
      EXPECT_GT(std::abs(d.predicted_s - a.predicted_s), 1e-3 * a.predicted_s);
      EXPECT_GT(std::abs(d.predicted_s - c.predicted_s), 1e-6 * c.predicted_s);
    }
    const auto summary = sim::summarize(predictions);
    ASSERT_TRUE(summary.count("transfer"));
    EXPECT_EQ(summary.at("transfer").predictions, 2);
    EXPECT_EQ(summary.at("transfer").failed, 0);
    ASSERT_TRUE(summary.count("stack"));
    EXPECT_EQ(summary.at("stack").predictions, 2);

    dagsgd::reports::ValidationReport rep;
    rep.measured = runs;
    rep.predictions = predictions;
    const std::string table = dagsgd::reports::validation_table(rep);
    EXPECT_NE(table.find("pred(c)_s"), std::string::npos) << table;
    EXPECT_NE(table.find("mode transfer   (c): 2 predictions"), std::string::npos) << table;
    EXPECT_NE(table.find("pred(d)_s"), std::string::npos) << table;
    EXPECT_NE(table.find("mode stack      (d): 2 predictions"), std::string::npos) << table;
    auto json = nlohmann::json::parse(dagsgd::reports::validation_json(rep));
    EXPECT_EQ(json["summary"]["transfer"]["predictions"], 2);
  }
  fs::remove_all(out);
}

}  // namespace
