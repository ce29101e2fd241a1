// dagsgd whatif as a user runs it: the report files, --force, determinism and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_runner.h"

namespace dagsgd {
namespace {

using testing::run_cli;
using testing::slurp;
namespace fs = std::filesystem;

const char* kSweep =
    "whatif --network alexnet --batch 128 --gpu p100 --fabrics pcie3,nvlink2,10gbe,ib-edr "
    "--gpus 1,2,4,8 --gpus-per-node 4 --precision fp32,fp16";

std::string fresh_dir(const std::string& name) {
  fs::path d =
      fs::temp_directory_path() / ("dagsgd-whatif-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d.string();
}

TEST(WhatifCli, WritesEveryReportFile) {
  const std::string dir = fresh_dir("files");
  auto r = run_cli(std::string(kSweep) + " --out " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "no progress bar when stderr is not a terminal";
  for (const char* f : {"report.html", "report.md", "results.csv", "results.json"}) {
    EXPECT_GT(fs::file_size(fs::path(dir) / f), 100u) << f;
  }
  auto j = nlohmann::json::parse(slurp(dir + "/results.json"));
  ASSERT_EQ(j["scenarios"].size(), 4u * 4u * 2u);
  std::size_t timelines = 0;
  for (const auto& s : j["scenarios"]) {
    EXPECT_GT(s["iteration_time_s"].get<double>(), 0);
    EXPECT_LE(s["efficiency"].get<double>(), 1.0 + 1e-6);
    const std::string b = s["bottleneck"];
    EXPECT_EQ(b.rfind(s["label"].get<std::string>() + ": ", 0), 0u) << b;
    if (s.contains("timeline")) {
      ++timelines;
      EXPECT_EQ(s["gpus"], 8);
      auto t = nlohmann::json::parse(slurp(dir + "/" + s["timeline"].get<std::string>()));
      EXPECT_GT(t["traceEvents"].size(), 8u * 16u);
    }
  }
  EXPECT_EQ(timelines, 4u) << "one per fabric";
  // Across nodes, InfiniBand beats 10GbE (fp32, 8 GPUs on two nodes): Shi et al.'s claim.
  auto at = [&](const std::string& fabric, int gpus, const std::string& precision) {
    for (const auto& s : j["scenarios"]) {
      if (s["fabric"] == fabric && s["gpus"] == gpus && s["precision"] == precision) {
        return s["iteration_time_s"].get<double>();
      }
    }
    ADD_FAILURE() << fabric;
    return 0.0;
  };
  EXPECT_LT(at("ib-edr", 8, "fp32"), at("10gbe", 8, "fp32"));
  EXPECT_LE(at("nvlink2", 4, "fp32"), at("pcie3", 4, "fp32"));
  const std::string html = slurp(dir + "/report.html");
  EXPECT_NE(html.find("vegaEmbed"), std::string::npos);
  EXPECT_EQ(html.find("<script src="), std::string::npos) << "everything inlined";
  fs::remove_all(dir);
}

TEST(WhatifCli, RefusesToOverwriteWithoutForce) {
  const std::string dir = fresh_dir("force");
  const std::string small =
      "whatif --network alexnet --batch 64 --gpu v100 --fabrics 10gbe --gpus 1,8 "
      "--gpus-per-node 4 --out " +
      dir;
  ASSERT_EQ(run_cli(small).code, 0);
  auto again = run_cli(small);
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("exists; use --force"), std::string::npos) << again.err;
  EXPECT_EQ(run_cli(small + " --force").code, 0);
  fs::remove_all(dir);
}

// Issue 13, class 16 and its notes: --out that is a file, a dangling link where a report file
// goes, and the timelines an earlier, larger sweep left in --out.
TEST(WhatifCli, OutputPathsThatAreNotWhatTheyShouldBe) {
  const std::string small =
      "whatif --network alexnet --batch 64 --gpu v100 --fabrics 10gbe --gpus 1,8 "
      "--gpus-per-node 4 --out ";
  const std::string file = fresh_dir("file");
  std::ofstream(file) << "keep me\n";
  auto r = run_cli(small + file);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("'" + file + "' is not a directory"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(file), "keep me\n");
  fs::remove(file);

  // A dangling link is refused without --force and replaced, not written through, with it.
  const std::string dir = fresh_dir("link");
  const std::string target = dir + "-target.html";
  fs::create_directories(dir);
  fs::create_symlink(target, dir + "/report.html");
  r = run_cli(small + dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("report.html' exists"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/timelines")) << "refused before anything is written";
  // A timeline of an earlier sweep, and a file that is not a timeline.
  fs::create_directories(dir + "/timelines");
  std::ofstream(dir + "/timelines/7-ib-edr-64gpus.trace.json") << "{}";
  std::ofstream(dir + "/timelines/notes.txt") << "mine";
  r = run_cli(small + dir + " --force");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::is_symlink(dir + "/report.html"));
  EXPECT_FALSE(fs::exists(target)) << "written through the link";
  EXPECT_FALSE(fs::exists(dir + "/timelines/7-ib-edr-64gpus.trace.json")) << "stale timeline";
  EXPECT_TRUE(fs::exists(dir + "/timelines/notes.txt"));
  const auto json = nlohmann::json::parse(slurp(dir + "/results.json"));
  std::size_t timelines = 0;
  for (const auto& e : fs::directory_iterator(dir + "/timelines")) {
    if (e.path().string().ends_with(".trace.json")) ++timelines;
  }
  std::size_t listed = 0;
  for (const auto& row : json["scenarios"]) listed += row.contains("timeline") ? 1 : 0;
  EXPECT_EQ(timelines, listed);
  fs::remove_all(dir);
}

// --force replaces only what whatif writes, and only inside --out: a timelines folder that is a
// link to elsewhere is refused before anything is written or removed, and a user's own
// *.trace.json beside the timelines is kept.
TEST(WhatifCli, ForceNeverReachesOutsideOut) {
  const std::string small =
      "whatif --network alexnet --batch 64 --gpu v100 --fabrics 10gbe --gpus 1,8 "
      "--gpus-per-node 4 --force --out ";
  const std::string dir = fresh_dir("outside");
  const std::string elsewhere = dir + "-elsewhere";
  fs::create_directories(dir);
  fs::create_directories(elsewhere);
  std::ofstream(elsewhere + "/mine.trace.json") << "mine";
  std::ofstream(elsewhere + "/3-10gbe-64gpus.trace.json") << "also mine";
  fs::create_directory_symlink(elsewhere, dir + "/timelines");
  auto r = run_cli(small + dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("timelines' is a link"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(elsewhere + "/mine.trace.json"), "mine");
  EXPECT_EQ(slurp(elsewhere + "/3-10gbe-64gpus.trace.json"), "also mine");
  EXPECT_FALSE(fs::exists(dir + "/report.html"));

  fs::remove(dir + "/timelines");
  fs::create_directories(dir + "/timelines");
  std::ofstream(dir + "/timelines/mine.trace.json") << "mine";
  r = run_cli(small + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(dir + "/timelines/mine.trace.json"), "mine") << "not a name whatif writes";
  for (const auto& e : fs::directory_iterator(dir)) {
    EXPECT_EQ(e.path().string().find(".dagsgd-tmp-"), std::string::npos) << e.path();
  }
  fs::remove_all(dir);
  fs::remove_all(elsewhere);
}

TEST(WhatifCli, SameInputSameBytes) {
  const std::string a = fresh_dir("a");
  const std::string b = fresh_dir("b");
  ASSERT_EQ(run_cli(std::string(kSweep) + " --out " + a).code, 0);
  ASSERT_EQ(run_cli(std::string(kSweep) + " --out " + b).code, 0);
  for (const char* f : {"report.html", "report.md", "results.csv", "results.json"}) {
    EXPECT_EQ(slurp(a + "/" + f), slurp(b + "/" + f)) << f;
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

// The report's "Reproduce" line is the command that ran, less --out and --force: every argument
// as given (those a network spec's default would not show too), quoted for the shell where it
// needs to be. Run again into another directory, it writes the same results.json, byte for byte.
TEST(WhatifCli, ReproduceLineIsTheCommandThatRan) {
  const std::string a = fresh_dir("ran");
  const std::string b = fresh_dir("rerun");
  const std::string fabric = fresh_dir("it's a") + ".json";
  std::ofstream(fabric) << R"({"fabrics": [{"name": "slow-eth", "description": "a slow link",
    "source": "this test", "scope": "inter", "nominal_gbps": 5, "achievable_gbps": 4,
    "latency_us": 20}]})";
  const std::string args =
      "whatif --network alexnet --batch 64 --gpu v100 --fabrics 10gbe,slow-eth --gpus 1,8 "
      "--gpus-per-node 4 --input-rate 3000 --iterations 3 --fabric-file";
  auto ran = run_cli(args + " \"" + fabric + "\" --force --out=" + a);
  ASSERT_EQ(ran.code, 0) << ran.err;
  const std::string md = slurp(a + "/report.md");
  const std::size_t at = md.find("Reproduce: `");
  ASSERT_NE(at, std::string::npos) << md;
  const std::size_t from = at + std::string("Reproduce: `").size();
  const std::string line = md.substr(from, md.find('`', from) - from);
  const std::size_t quote = fabric.find('\'');
  EXPECT_EQ(line, "dagsgd " + args + " '" + fabric.substr(0, quote) + "'\\''" +
                      fabric.substr(quote + 1) + "'");
  auto again = run_cli(line.substr(std::string("dagsgd ").size()) + " --out " + b);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(slurp(b + "/results.json"), slurp(a + "/results.json"));
  EXPECT_EQ(slurp(b + "/report.md"), md);
  fs::remove_all(a);
  fs::remove_all(b);
  fs::remove(fabric);
}

TEST(WhatifCli, BadInputExitsTwoWithTheName) {
  const std::string dir = fresh_dir("bad");
  auto r = run_cli(
      "whatif --network alexnet --gpu v100 --fabrics pcie3,token-ring --gpus 1,4 --out " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("token-ring"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nvlink2"), std::string::npos) << "lists the valid names: " << r.err;
  r = run_cli("whatif --network alexnet --fabrics pcie3 --gpus 1,6 --gpus-per-node 4 --out " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("6 GPUs"), std::string::npos) << r.err;
  r = run_cli("whatif --network alexnet --fabrics pcie3 --gpus 1,4 --overlap sometimes --out " +
              dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("sometimes"), std::string::npos) << r.err;
  r = run_cli("whatif --network no-such-net --fabrics pcie3 --gpus 1 --out " + dir);
  EXPECT_EQ(r.code, 2);
  r = run_cli("whatif --fabrics pcie3 --gpus 1 --out " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("give a traced run directory (RUN) or --network"), std::string::npos)
      << r.err;
  r = run_cli("whatif --network alexnet --fabrics pcie3 --out " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--gpus"), std::string::npos) << r.err;
  r = run_cli("whatif /nonexistent/run --network alexnet --fabrics pcie3 --out " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not both"), std::string::npos) << r.err;
  r = run_cli("whatif /nonexistent/run --fabrics pcie3 --out " + dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/run"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir)) << "nothing written on bad input";
}

// On a terminal (a pseudo-terminal from util-linux `script`) the sweep shows a progress bar on
// stderr; stdout keeps only the summary line.
TEST(WhatifCli, ProgressBarOnlyOnATerminal) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "no script(1)";
  const std::string dir = fresh_dir("tty");
  const std::string log = dir + ".tty";
  const std::string cmd = std::string("script -qec '") + DAGSGD_BINARY +
                          " whatif --network alexnet --fabrics pcie3,10gbe --gpus 1,2,4,8 "
                          "--gpus-per-node 4 --out " +
                          dir + " >/dev/null' /dev/null >" + log;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string tty = slurp(log);
  EXPECT_NE(tty.find("] 8/8 scenarios"), std::string::npos) << tty;
  EXPECT_NE(tty.find("] 1/8 scenarios"), std::string::npos) << tty;
  fs::remove_all(dir);
  fs::remove(log);
}

TEST(WhatifCli, MissingPlotLibraryIsAClearError) {
  const std::string dir = fresh_dir("noplots");
  auto r = run_cli("whatif --network alexnet --fabrics pcie3 --gpus 1 --out " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_cli("whatif --network alexnet --fabrics pcie3 --gpus 1 --force --out " + dir +
              " 2>&1; DAGSGD_NODE_MODULES=/nonexistent " + DAGSGD_BINARY +
              " whatif --network alexnet --fabrics pcie3 --gpus 1 --force --out " + dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/vega/build/vega.min.js"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tools/setup"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dagsgd
