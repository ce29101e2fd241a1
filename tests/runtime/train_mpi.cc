// End-to-end `dagsgd train` runs under mpirun: accuracy across rank counts, a traced run's
// directory, and flag errors (label `mpi`; see tests/runtime/tests.cmake).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include "common/cli_runner.h"
#include "common/hta_conventions.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using dagsgd::testing::run;
using dagsgd::testing::RunResult;

std::string mpirun(int np) {
  return "mpirun --allow-run-as-root --oversubscribe -np " + std::to_string(np) + " " +
         DAGSGD_BINARY + " train";
}

// The test accuracy of the last "epoch N: ..." line, in percent.
double final_accuracy(const std::string& out) {
  std::regex re("test accuracy ([0-9.]+)%");
  double acc = -1;
  for (std::sregex_iterator it(out.begin(), out.end(), re), end; it != end; ++it) {
    acc = std::stod((*it)[1].str());
  }
  return acc;
}

TEST(TrainMpi, SameGlobalBatchSameAccuracyOnOneTwoFourRanks) {
  // Global batch 128 in every run; two epochs of the mlp.
  std::map<int, double> acc;
  for (int np : {1, 2, 4}) {
    RunResult r = run(mpirun(np) + " --model mlp --epochs 2 --batch " + std::to_string(128 / np));
    ASSERT_EQ(r.code, 0) << r.out;
    acc[np] = final_accuracy(r.out);
    std::printf("P=%d: test accuracy %.2f%%\n", np, acc[np]);
  }
  EXPECT_GE(acc[1], 85.0);
  EXPECT_NEAR(acc[2], acc[1], 1.0);
  EXPECT_NEAR(acc[4], acc[1], 1.0);
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

// A machine's CPUs are the union of its ranks' affinity sets: two ranks bound to different
// cores have two between them (each alone would read as one, and the replay's CPU model would
// put both on a single core).
TEST(TrainMpi, RanksBoundToDifferentCoresCountTheCoresTheyShare) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "needs 2 CPUs to bind 2 ranks apart";
  fs::path dir = fs::temp_directory_path() / ("dagsgd-train-bound-" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunResult r =
      run("mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core --map-by "
          "core " DAGSGD_BINARY
          " train --model mlp --widths 16 --iterations 3 "
          "--warmup 1 --no-eval --trace " +
          dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto manifest = read_json(dir / "run.manifest");
  EXPECT_EQ(manifest["cpus"], nlohmann::json::parse("[2, 2]")) << manifest["cpus"];
  fs::remove_all(dir);
}

TEST(TrainMpi, TracedRunWritesAValidRunDirectory) {
  fs::path dir = fs::temp_directory_path() / ("dagsgd-train-trace-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const int iters = 12;
  RunResult r = run(mpirun(2) + " --model mlp --widths 64,32 --iterations " +
                    std::to_string(iters) + " --overlap wfbp --trace " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;

  auto manifest = read_json(dir / "run.manifest");
  EXPECT_EQ(manifest["kind"], "train");
  EXPECT_EQ(manifest["status"], "ok");
  const std::string run_id = manifest["run_id"];
  EXPECT_FALSE(run_id.empty());
  EXPECT_EQ(manifest["ranks"], 2);
  EXPECT_EQ(manifest["hosts"].size(), 2u);
  // Both ranks ran on this machine: the same boot id, and at least one CPU each.
  ASSERT_EQ(manifest["machines"].size(), 2u);
  EXPECT_EQ(manifest["machines"][0], manifest["machines"][1]);
  EXPECT_FALSE(manifest["machines"][0].get<std::string>().empty());
  ASSERT_EQ(manifest["cpus"].size(), 2u);
  EXPECT_GE(manifest["cpus"][0].get<int>(), 1);
  EXPECT_EQ(manifest["config"]["overlap"], "wfbp");
  EXPECT_EQ(manifest["config"]["batch"], "64");
  ASSERT_EQ(manifest["iterations"]["times_s"].size(), static_cast<std::size_t>(iters));
  int warmup = manifest["iterations"]["warmup"];
  EXPECT_GE(manifest["clock_residual_ns"].get<double>(), 0.0);

  for (int rank = 0; rank < 2; ++rank) {
    auto t = read_json(dir / ("rank-" + std::to_string(rank) + ".trace.json"));
    EXPECT_EQ(t["distributedInfo"]["rank"], rank);
    EXPECT_EQ(t["distributedInfo"]["run_id"], run_id);
    EXPECT_EQ(t["traceEvents"].back()["name"], "dagsgd_clock_sync");
    EXPECT_EQ(t["traceEvents"].back()["args"]["ended_by"], "finish");
    std::map<int, double> step_us;      // iteration -> ProfilerStep duration
    std::map<int, double> main_sum_us;  // iteration -> sum of main-thread cpu_op spans
    std::map<std::string, int> phases;
    int comm_spans = 0;
    // Perfetto needs the slices of one thread to nest: [start, end] per tid, checked below.
    std::map<int, std::vector<std::pair<double, double>>> by_tid;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] != "X") continue;
      double ts = e["ts"].get<double>();
      by_tid[e["tid"].get<int>()].emplace_back(ts, ts + e["dur"].get<double>());
      EXPECT_EQ(e["pid"], rank);
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      if (e["cat"] == "user_annotation") {
        std::string name = e["name"];
        ASSERT_EQ(name.rfind("ProfilerStep#", 0), 0u) << name;
        step_us[e["args"]["iteration"].get<int>()] = e["dur"].get<double>();
        continue;
      }
      ASSERT_EQ(e["cat"], "cpu_op");
      std::string phase = e["args"]["phase"];
      ++phases[phase];
      int it = e["args"]["iteration"];
      if (e["tid"] == 0) {
        main_sum_us[it] += e["dur"].get<double>();
        if (phase == "forward" || phase == "backward") {
          EXPECT_TRUE(e["args"].contains("layer"));
        }
      } else {
        EXPECT_EQ(phase, "comm");
        ++comm_spans;
        EXPECT_GT(e["args"]["bytes"].get<std::int64_t>(), 0);
        EXPECT_EQ(e["args"]["collective"], "allreduce");
        EXPECT_TRUE(e["args"].contains("algorithm"));
        EXPECT_TRUE(e["args"].contains("bucket"));
      }
    }
    ASSERT_EQ(step_us.size(), static_cast<std::size_t>(iters));
    for (auto& [tid, spans] : by_tid) {
      std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second > b.second;
      });
      std::vector<double> open_ends;
      for (const auto& [start, end] : spans) {
        while (!open_ends.empty() && open_ends.back() <= start + 1e-3) open_ends.pop_back();
        if (!open_ends.empty()) {
          ASSERT_LE(end, open_ends.back() + 1e-3) << "tid " << tid << " overlaps at " << start;
        }
        open_ends.push_back(end);
      }
    }
    // mlp 64,32: 3 fc + 2 relu layers, plus the loss's forward.
    EXPECT_EQ(phases["forward"], iters * 6);
    EXPECT_EQ(phases["backward"], iters * 5);
    EXPECT_EQ(phases["io"], iters);
    EXPECT_EQ(phases["h2d"], iters);
    EXPECT_EQ(phases["update"], iters);
    EXPECT_EQ(comm_spans, iters * 3);  // wfbp: one collective per fc layer
    double sum_after_warmup = 0;
    for (int i = 0; i < iters; ++i) {
      // The main-thread spans tile the iteration exactly.
      EXPECT_NEAR(main_sum_us[i], step_us[i], 0.01) << "iteration " << i;
      if (rank == 0) {
        double manifest_s = manifest["iterations"]["times_s"][static_cast<std::size_t>(i)];
        EXPECT_NEAR(step_us[i] * 1e-6, manifest_s, 1e-9);
        if (i >= warmup) sum_after_warmup += step_us[i] * 1e-6;
      }
    }
    if (rank == 0) {
      EXPECT_NEAR(sum_after_warmup / (iters - warmup),
                  manifest["iterations"]["mean_s"].get<double>(), 1e-9);
    }
  }

  // The directory is now not empty: refused without --force, accepted with it.
  RunResult again = run(mpirun(1) + " --iterations 2 --no-eval --trace " + dir.string());
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_NE(again.out.find("--force"), std::string::npos) << again.out;
  RunResult forced =
      run(mpirun(1) + " --iterations 2 --no-eval --trace " + dir.string() + " --force");
  EXPECT_EQ(forced.code, 0) << forced.out;
  EXPECT_FALSE(fs::exists(dir / "rank-1.trace.json"));
  fs::remove_all(dir);
}

int count(const std::string& hay, const std::string& needle) {
  int n = 0;
  for (auto p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// A CPU run directory as Holistic Trace Analysis opens it (tests/common/hta_conventions.h cites
// each rule's source line): every rank and nothing else, an iteration span per step, every event
// a CPU event, collectives with PyTorch's communication args.
TEST(TrainMpi, TracedRunOpensInHolisticTraceAnalysis) {
  namespace hta = dagsgd::testing::hta;
  fs::path dir = fs::temp_directory_path() / ("dagsgd-train-hta-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const int iters = 4;
  RunResult r = run(mpirun(2) + " --model mlp --widths 16 --iterations " + std::to_string(iters) +
                    " --warmup 1 --no-eval --overlap wfbp --trace " + dir.string());
  ASSERT_EQ(r.code, 0) << r.out;
  auto ranks = hta::rank_map(dir.string());
  ASSERT_EQ(ranks.size(), 2u);
  for (const auto& [rank, file] : ranks) {
    ASSERT_EQ(file, (dir / ("rank-" + std::to_string(rank) + ".trace.json")).string());
    auto t = read_json(file);
    std::vector<int> steps;
    int collectives = 0;
    for (const auto& e : t["traceEvents"]) {
      if (e["ph"] != "X") continue;
      EXPECT_FALSE(hta::on_device(e)) << e.dump();
      if (auto step = hta::profiler_step(e["name"].get<std::string>())) {
        EXPECT_EQ(e["cat"], "user_annotation");  // hta/common/types.py:145-147
        steps.push_back(*step);
      }
      if (e["tid"] != 0 && e["args"]["phase"] == "comm") {  // a collective in flight
        ++collectives;
        EXPECT_EQ(e["args"]["Collective name"], e["args"]["collective"]);
        EXPECT_EQ(e["args"]["Group size"], 2);
      }
    }
    EXPECT_EQ(steps, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_GE(collectives, iters);
  }
  fs::remove_all(dir);
}

TEST(TrainMpi, BadFlagsExitTwoWithOneMessage) {
  for (const char* flags :
       {"--exchange nccl", "--overlap bucket:x", "--precision fp8", "--sync easgd:0,0.5",
        "--epochs abc", "--bogus 3", "--topk 0.1 --exchange ps", "--iterations 0", "--lr inf",
        "--lr nan", "--lr -1", "--momentum nan", "--epochs 99999999999", "--batch 0",
        "--sync easgd:99999999999,0.5", "--warmup -1"}) {
    RunResult r = run(mpirun(2) + " --iterations 1 " + flags);
    EXPECT_EQ(r.code, 2) << flags;
    EXPECT_EQ(count(r.out, "dagsgd: error:"), 1) << flags << "\n" << r.out;
  }
  // Without mpirun: a singleton, and the exit code is ours.
  RunResult r = run(std::string(DAGSGD_BINARY) + " train --exchange nccl");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("valid: allreduce, ps, asa, rsag"), std::string::npos) << r.out;
  RunResult missing = run(std::string(DAGSGD_BINARY) + " train --iterations 1 --data /nonexistent");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.out.find("/nonexistent/train-images-idx3-ubyte.gz"), std::string::npos)
      << missing.out;
  RunResult zero = run(std::string(DAGSGD_BINARY) + " train --model mlp --iterations 0");
  EXPECT_EQ(zero.code, 2);
  EXPECT_NE(zero.out.find("dagsgd: error: --iterations: '0' is out of range"), std::string::npos)
      << zero.out;
}

// A learning rate that blows the loss up to inf/nan ends the run with an error, not with a
// report of nan losses and chance accuracy.
TEST(TrainMpi, DivergingTrainingIsAnError) {
  RunResult r = run(mpirun(2) + " --model mlp --iterations 30 --lr 1e30 --no-eval");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(count(r.out, "dagsgd: error: training diverged in epoch 1"), 1) << r.out;
}

// A traced run that fails before training leaves no empty directory behind (which a rerun would
// then refuse without --force); a directory the user made stays.
TEST(TrainMpi, FailedTracedRunLeavesNoDirectoryItMade) {
  fs::path dir = fs::temp_directory_path() / ("dagsgd-train-fail-" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunResult r =
      run(mpirun(2) + " --iterations 2 --data /nonexistent --trace " + (dir / "a" / "b").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(fs::exists(dir)) << r.out;
  fs::create_directories(dir);
  r = run(mpirun(2) + " --iterations 2 --data /nonexistent --trace " + dir.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(fs::is_directory(dir));
  fs::remove_all(dir);
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

TEST(TrainMpi, TrainsAFullyConnectedNetworkSpecAndRejectsOtherLayers) {
  fs::path dir = fs::temp_directory_path() / ("dagsgd-train-net-" + std::to_string(getpid()));
  fs::create_directories(dir);
  // The schema of docs/formats.md (model::load_network).
  const std::string fc = R"({"name": "tiny", "description": "test net", "source": "this test",
    "input_shape": [784], "layers": [
    {"name": "hidden", "type": "fc", "params": [{"name": "weight", "shape": [32, 784]},
     {"name": "bias", "shape": [32]}], "forward_flops": 50176, "activation_elements": 32},
    {"name": "act", "type": "relu", "params": [], "forward_flops": 32, "activation_elements": 32},
    {"name": "out", "type": "fc", "params": [{"name": "weight", "shape": [10, 32]},
     {"name": "bias", "shape": [10]}], "forward_flops": 640, "activation_elements": 10}]})";
  write_text(dir / "tiny.json", fc);
  RunResult r = run(mpirun(2) + " --model " + (dir / "tiny.json").string() + " --iterations 100");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 layers, 25450 parameters"), std::string::npos) << r.out;
  EXPECT_GE(final_accuracy(r.out), 50.0) << r.out;

  std::string conv = fc;
  conv.replace(conv.find("\"relu\""), 6, "\"conv\"");
  write_text(dir / "conv.json", conv);
  RunResult bad = run(mpirun(2) + " --model " + (dir / "conv.json").string() + " --iterations 1");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_EQ(count(bad.out, "dagsgd: error:"), 1) << bad.out;
  EXPECT_NE(bad.out.find("layer 'act' has type 'conv'"), std::string::npos) << bad.out;
  fs::remove_all(dir);
}

TEST(TrainMpi, EveryStrategyTrains) {
  // Short runs of each strategy: they must finish and learn (chance is 10%).
  for (const char* flags :
       {"--exchange ps --overlap wfbp --precision fp16", "--exchange asa --overlap bucket:0.1",
        "--exchange rsag --overlap wfbp --precision fp16", "--topk 0.05 --overlap wfbp",
        "--sync easgd:4,0.5", "--model cnn --iterations 60"}) {
    RunResult r = run(mpirun(2) + " --iterations 150 --batch 32 " + flags);
    ASSERT_EQ(r.code, 0) << flags << "\n" << r.out;
    EXPECT_GE(final_accuracy(r.out), 50.0) << flags << "\n" << r.out;
  }
}

}  // namespace
