// `dagsgd calibrate` end to end: the real B-Caffe OSU logs in, a fit and a loadable fabric out;
// bad input exits 2 with a message that says where.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/text.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/io.h"

namespace {

const std::string kBcaffe = std::string(DAGSGD_SHARED_DATA) + "/published/b-caffe/";

struct CliResult {
  int code = -1;
  std::string out;  // stdout, or stdout + stderr with `merge`
};

CliResult run(const std::string& args, bool merge = true) {
  const std::string cmd =
      std::string(DAGSGD_BINARY) + " " + args + (merge ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Writes a benchmark table to `log` and returns `calibrate LOG --json`, parsed (discarded, with
// the failure recorded, when the log cannot be written or the command fails).
nlohmann::json calibrate_table(const std::string& log, const std::string& table) {
  if (!dagsgd::model::write_file(log, table, true).ok()) {
    ADD_FAILURE() << "cannot write " << log;
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
  CliResult r = run("calibrate " + log + " --json", /*merge=*/false);
  EXPECT_EQ(r.code, 0) << r.out;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// A dagsgd-allreduce-bench table (OSU's full format): `title` says what was run; each row is a
// size in bytes and its Avg, Min and Max latency in us, over 10 iterations.
std::string bench_table(const std::string& title,
                        std::initializer_list<std::array<double, 4>> rows) {
  std::string out =
      "# dagsgd allreduce latency benchmark (OSU format), " + title + "\n" +
      "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n";
  for (const auto& [bytes, avg, min, max] : rows) {
    std::array<char, 128> line{};
    std::snprintf(line.data(), line.size(), "%-12.0f %15.2f %17.2f %17.2f %11d\n", bytes, avg, min,
                  max, 10);
    out += line.data();
  }
  return out;
}

std::string temp_dir() {
  std::string d = ::testing::TempDir() + "/calibrate-" + std::to_string(::getpid());
  ::mkdir(d.c_str(), 0755);
  return d;
}

using dagsgd::testing::contains;

TEST(Calibrate, FitsBcaffeAllreduce4) {
  CliResult r = run("calibrate " + kBcaffe + "allreduce4.log --ranks 4");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "fit: alpha")) << r.out;
  // The 8 KiB -> 12 KiB jump of the log is the step: ring messages are M/4, so 2048 bytes.
  EXPECT_TRUE(contains(r.out, "messages above 2048 bytes")) << r.out;
  EXPECT_TRUE(contains(r.out, "    4        12288         223.94")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"name\": \"allreduce4\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "--ranks 4 --algorithm ring")) << r.out;
  EXPECT_FALSE(contains(r.out, "note:")) << r.out;
}

TEST(Calibrate, InfersRanksFromFileNameAndSaysSo) {
  CliResult r = run("calibrate " + kBcaffe + "allreduce8.log");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "using 8 from the file name")) << r.out;
  EXPECT_TRUE(contains(r.out, "(p=8)")) << r.out;
}

TEST(Calibrate, JsonOutput) {
  CliResult r = run("calibrate " + kBcaffe + "allreduce2.log --algorithm recursive_doubling --json",
                    /*merge=*/false);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["ranks"], nlohmann::json::array({2}));
  EXPECT_EQ(j["algorithm"], "recursive_doubling");
  EXPECT_EQ(j["points"].size(), 266u);
  EXPECT_EQ(j["points"][0]["bytes"], 4);
  EXPECT_DOUBLE_EQ(j["points"][0]["measured_us"].get<double>(), 31.92);
  // recursive doubling on 2 ranks sends the whole vector: the step sits at 8 KiB.
  EXPECT_EQ(j["eager_limit_bytes"], 8192);
  EXPECT_GT(j["alpha_us"].get<double>(), 0);
  EXPECT_GT(j["bandwidth_gbps"].get<double>(), 1);
  EXPECT_LT(j["bandwidth_gbps"].get<double>(), 10);  // a 10 GbE cluster
  EXPECT_LT(j["rms_relative_error"].get<double>(), 0.2);
  EXPECT_EQ(j["fabric"]["name"], "allreduce2");
}

// The fabric `name` of the file `path` `dagsgd calibrate --out` wrote, loaded as --fabric-file
// does.
dagsgd::model::Expected<dagsgd::model::FabricSpec> entry_in(const std::string& path,
                                                            const std::string& name) {
  auto catalog = dagsgd::model::HardwareCatalog::load_default();
  if (!catalog) return catalog.error();
  if (auto added = catalog->add_fabric_file(path); !added) return added.error();
  return catalog->fabric(name);
}

// A formula fit above the stated line rate: with the curves kept (they price collectives, the line
// rate is what collectives in flight share) the line rate stays and the fit is capped at it;
// without curves the fit becomes the line rate, as before.
TEST(Calibrate, ALineRateBelowTheFitStaysWhenTheCurvesAreKept) {
  const std::string base = temp_dir() + "/capped";
  for (const bool curves : {true, false}) {
    SCOPED_TRACE(curves ? "curves kept" : "--no-measured");
    const std::string out = base + (curves ? "-curves.json" : "-formula.json");
    std::remove(out.c_str());
    CliResult r = run("calibrate " + kBcaffe + "allreduce4.log --ranks 4 --name slow" +
                      " --nominal-gbps 0.5 --out " + out + (curves ? "" : " --no-measured"));
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(contains(r.out, "exceeds --nominal-gbps 0.5")) << r.out;
    EXPECT_TRUE(contains(r.out, curves ? "keeps it as the line rate" : "uses the fit as nominal"))
        << r.out;
    auto slow = entry_in(out, "slow");
    ASSERT_TRUE(slow.ok()) << slow.error().message;
    if (curves) {
      EXPECT_DOUBLE_EQ(slow->nominal_bandwidth, 0.5e9 / 8);
      EXPECT_DOUBLE_EQ(slow->achievable_bandwidth, 0.5e9 / 8);
      EXPECT_DOUBLE_EQ(dagsgd::model::link_capacity(*slow), 0.5e9 / 8);
      EXPECT_TRUE(contains(slow->source, "capped at the stated line rate")) << slow->source;
    } else {
      EXPECT_GT(slow->nominal_bandwidth, 0.5e9 / 8);
      EXPECT_DOUBLE_EQ(slow->nominal_bandwidth, slow->achievable_bandwidth);
    }
    std::remove(out.c_str());
  }
}

// The curves a fit keeps grow beyond their largest size as the fitted formula does: a fit of
// another formula than the ring says which in each curve; a ring fit writes what it always did.
TEST(Calibrate, KeptCurvesSayWhichFormulaWasFitted) {
  const std::string base = temp_dir() + "/formula";
  for (const std::string algorithm : {"ring", "binomial"}) {
    SCOPED_TRACE(algorithm);
    const std::string out = base + "-" + algorithm + ".json";
    std::remove(out.c_str());
    CliResult r = run("calibrate " + kBcaffe + "allreduce4.log --ranks 4 --name f --algorithm " +
                      algorithm + " --out " + out);
    ASSERT_EQ(r.code, 0) << r.out;
    auto f = entry_in(out, "f");
    ASSERT_TRUE(f.ok()) << f.error().message;
    ASSERT_EQ(f->measured_allreduce.size(), 1u);
    EXPECT_EQ(f->measured_allreduce[0].algorithm, algorithm == "ring" ? "" : algorithm);
    std::remove(out.c_str());
  }
}

TEST(Calibrate, OutWritesALoadableFabricAndRefusesToOverwrite) {
  const std::string out = temp_dir() + "/fit.json";
  std::remove(out.c_str());
  CliResult r = run("calibrate " + kBcaffe +
                    "allreduce4.log --ranks 4 --name lab --nominal-gbps 10 "
                    "--out " +
                    out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "wrote '" + out + "'")) << r.out;
  auto lab = entry_in(out, "lab");
  ASSERT_TRUE(lab.ok()) << lab.error().message;
  EXPECT_DOUBLE_EQ(lab->nominal_bandwidth, 1.25e9);
  EXPECT_LT(lab->achievable_bandwidth, lab->nominal_bandwidth);
  EXPECT_EQ(lab->eager_limit, 2048);
  EXPECT_GT(lab->latency, 0);

  CliResult again = run("calibrate " + kBcaffe + "allreduce4.log --ranks 4 --out " + out);
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_TRUE(contains(again.out, "dagsgd: error:")) << again.out;
  EXPECT_TRUE(contains(again.out, "--force")) << again.out;
  CliResult forced =
      run("calibrate " + kBcaffe + "allreduce4.log --ranks 4 --out " + out + " --force");
  EXPECT_EQ(forced.code, 0) << forced.out;
}

TEST(Calibrate, SeveralLogsFittedTogether) {
  CliResult r = run("calibrate " + kBcaffe + "allreduce2.log " + kBcaffe + "allreduce4.log " +
                    kBcaffe + "allreduce8.log");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "(p=2)")) << r.out;
  EXPECT_TRUE(contains(r.out, "(p=8)")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"name\": \"allreduce2+allreduce4+allreduce8\"")) << r.out;
  CliResult bad =
      run("calibrate " + kBcaffe + "allreduce2.log " + kBcaffe + "allreduce4.log --ranks 2");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_TRUE(contains(bad.out, "--ranks applies to one log")) << bad.out;
}

// dagsgd-allreduce-bench's full table: the Max column (the slowest rank) is the default, and
// the entry keeps the latencies for its rank count.
TEST(Calibrate, FullTableUsesMaxAndKeepsTheCurve) {
  const std::string log = temp_dir() + "/bench2.log";
  auto j = calibrate_table(log, bench_table("2 ranks", {{1024, 100, 90, 110},
                                                        {65536, 400, 380, 440},
                                                        {1048576, 4100, 4000, 4510},
                                                        {4194304, 16100, 16000, 17710}}));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["statistic"], "max");
  EXPECT_DOUBLE_EQ(j["points"][3]["measured_us"].get<double>(), 17710);
  const auto& curves = j["fabric"]["allreduce_measured"];
  ASSERT_EQ(curves.size(), 1u) << j["fabric"];
  EXPECT_EQ(curves[0]["ranks"], 2);
  EXPECT_EQ(curves[0]["sizes_bytes"], nlohmann::json::array({1024, 65536, 1048576, 4194304}));
  EXPECT_DOUBLE_EQ(curves[0]["latency_us"][1].get<double>(), 400);  // the average rank
  EXPECT_DOUBLE_EQ(curves[0]["max_latency_us"][1].get<double>(), 440);
  EXPECT_DOUBLE_EQ(curves[0]["min_latency_us"][1].get<double>(), 380);  // the fastest rank

  CliResult avg = run("calibrate " + log + " --statistic avg --no-measured --json", false);
  ASSERT_EQ(avg.code, 0) << avg.out;
  auto a = nlohmann::json::parse(avg.out, nullptr, false);
  EXPECT_EQ(a["statistic"], "avg");
  EXPECT_DOUBLE_EQ(a["points"][3]["measured_us"].get<double>(), 16100);
  EXPECT_FALSE(a["fabric"].contains("allreduce_measured")) << a["fabric"];
  // The entry loads back with both curves.
  const std::string out = temp_dir() + "/bench2.json";
  std::remove(out.c_str());
  ASSERT_EQ(run("calibrate " + log + " --name bench2 --out " + out).code, 0);
  auto catalog = dagsgd::model::HardwareCatalog::load_default();
  ASSERT_TRUE(catalog->add_fabric_file(out).ok());
  auto bench = catalog->fabric("bench2");
  ASSERT_TRUE(bench.ok());
  ASSERT_EQ(bench->measured_allreduce.size(), 1u);
  EXPECT_EQ(bench->measured_allreduce[0].points[3].second, 16'100'000);
  EXPECT_EQ(bench->measured_allreduce[0].slowest[3], 17'710'000);
  EXPECT_EQ(bench->measured_allreduce[0].fastest[3], 16'000'000);

  CliResult no_max = run("calibrate " + kBcaffe + "allreduce2.log --statistic max");
  EXPECT_EQ(no_max.code, 2) << no_max.out;
  EXPECT_TRUE(contains(no_max.out, "no 'Max Latency(us)' column")) << no_max.out;
  CliResult bad = run("calibrate " + log + " --statistic median");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_TRUE(contains(bad.out, "unknown --statistic 'median'")) << bad.out;
}

// Back to back (--back-to-back), Min and Max are the ranks' means over a stream: the entry keeps
// the stream's time per call alone, with no slowest-rank tail and no fastest (root) rank.
TEST(Calibrate, BackToBackTableKeepsTheStreamAlone) {
  const std::string log = temp_dir() + "/stream3.log";
  auto j = calibrate_table(log, bench_table("3 ranks, 10 iterations, MPI_Iallreduce + MPI_Wait, in "
                                            "place, back to back (Min, Max: the fastest, the "
                                            "slowest rank's mean)",
                                            {{65536, 400, 398, 402},
                                             {1048576, 4100, 4090, 4110},
                                             {4194304, 16100, 16050, 16150}}));
  ASSERT_FALSE(j.is_discarded());
  const auto& curves = j["fabric"]["allreduce_measured"];
  ASSERT_EQ(curves.size(), 1u) << j["fabric"];
  EXPECT_EQ(curves[0]["ranks"], 3);
  EXPECT_DOUBLE_EQ(curves[0]["latency_us"][1].get<double>(), 4100);
  EXPECT_FALSE(curves[0].contains("max_latency_us")) << curves[0];
  EXPECT_FALSE(curves[0].contains("min_latency_us")) << curves[0];
}

TEST(Calibrate, BadInputExitsTwo) {
  CliResult algo = run("calibrate " + kBcaffe + "allreduce4.log --algorithm butterfly");
  EXPECT_EQ(algo.code, 2);
  EXPECT_TRUE(contains(algo.out, "unknown --algorithm 'butterfly'")) << algo.out;
  EXPECT_TRUE(contains(algo.out, "recursive_doubling")) << algo.out;

  CliResult missing = run("calibrate /nonexistent/allreduce4.log");
  EXPECT_EQ(missing.code, 2);
  EXPECT_TRUE(contains(missing.out, "/nonexistent/allreduce4.log")) << missing.out;

  CliResult one = run("calibrate " + kBcaffe + "allreduce4.log --ranks 1");
  EXPECT_EQ(one.code, 2);
  EXPECT_TRUE(contains(one.out, "at least 2")) << one.out;

  const std::string dir = temp_dir();
  auto text = dagsgd::model::read_file(kBcaffe + "allreduce4.log");
  ASSERT_TRUE(text.ok());
  ASSERT_TRUE(dagsgd::model::write_file(dir + "/osu.log", *text, true).ok());
  CliResult noranks = run("calibrate " + dir + "/osu.log");
  EXPECT_EQ(noranks.code, 2);
  EXPECT_TRUE(contains(noranks.out, "pass --ranks P")) << noranks.out;

  std::string broken = *text;
  broken.replace(broken.find("12288"), 5, "12x88");
  ASSERT_TRUE(dagsgd::model::write_file(dir + "/broken4.log", broken, true).ok());
  CliResult malformed = run("calibrate " + dir + "/broken4.log");
  EXPECT_EQ(malformed.code, 2);
  EXPECT_TRUE(contains(malformed.out, "broken4.log': line 16: size '12x88'")) << malformed.out;

  // Issue 13, class 12: --ranks 0 was replaced by the file name's count.
  for (const char* ranks : {"0", "-3", "2000000"}) {
    CliResult zero = run("calibrate " + kBcaffe + "allreduce4.log --ranks " + ranks);
    EXPECT_EQ(zero.code, 2) << ranks;
    EXPECT_TRUE(contains(zero.out, "--ranks")) << zero.out;
  }
  CliResult nan_gbps = run("calibrate " + kBcaffe + "allreduce4.log --nominal-gbps nan");
  EXPECT_EQ(nan_gbps.code, 2);
  EXPECT_TRUE(contains(nan_gbps.out, "--nominal-gbps")) << nan_gbps.out;

  // The same size measured twice (49 us and 99999 us) was averaged; both lines are named.
  ASSERT_TRUE(dagsgd::model::write_file(dir + "/twice4.log",
                                        "# Size  Avg Latency(us)\n4 49\n8 50\n4 99999\n", true)
                  .ok());
  CliResult twice = run("calibrate " + dir + "/twice4.log");
  EXPECT_EQ(twice.code, 2);
  EXPECT_TRUE(contains(twice.out, "twice4.log")) << twice.out;
  EXPECT_TRUE(contains(twice.out, "line 2")) << twice.out;
  EXPECT_TRUE(contains(twice.out, "line 4")) << twice.out;

  // A log of another collective was fitted as allreduce: OSU's and nccl-tests' headers say which
  // collective they time. Allreduce in any of their spellings still fits.
  const std::string rows =
      "# Size       Avg Latency(us)\n1024 50.00\n65536 400.00\n"
      "1048576 5000.00\n";
  for (const auto& [header, other] : std::initializer_list<std::pair<const char*, const char*>>{
           {"# OSU MPI Allgather Latency Test v5.4.0", "allgather"},
           {"# OSU MPI-CUDA Non-blocking Alltoall Latency Test v7.1", "alltoall"},
           {"# OSU MPI Latency Test v5.4.0", "point-to-point"},
           {"# Collective test starting: all_gather_perf", "all_gather"}}) {
    ASSERT_TRUE(
        dagsgd::model::write_file(dir + "/other4.log", std::string(header) + "\n" + rows, true)
            .ok());
    CliResult r = run("calibrate " + dir + "/other4.log");
    EXPECT_EQ(r.code, 2) << header << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "other4.log")) << r.out;
    EXPECT_TRUE(contains(r.out, std::string("times ") + other + ", not allreduce")) << r.out;
  }
  for (const char* header :
       {"# OSU MPI Allreduce Latency Test v5.4.0", "# OSU MPI Non-blocking Allreduce Latency Test",
        "# Collective test starting: all_reduce_perf"}) {
    ASSERT_TRUE(
        dagsgd::model::write_file(dir + "/same4.log", std::string(header) + "\n" + rows, true)
            .ok());
    CliResult r = run("calibrate " + dir + "/same4.log");
    EXPECT_EQ(r.code, 0) << header << ": " << r.out;
  }

  CliResult usage = run("calibrate");
  EXPECT_EQ(usage.code, 2);
}

}  // namespace

namespace {

// The catalog's measured 10gbe-bcaffe-k80 entry is what its stated command produces.
TEST(Calibrate, CatalogEntryIsReproducible) {
  CliResult r;
  const std::string cmd = "cd " + kBcaffe + " && " + DAGSGD_BINARY +
                          " calibrate allreduce2.log allreduce4.log allreduce8.log --algorithm "
                          "ring --name 10gbe-bcaffe-k80 --nominal-gbps 10 --no-measured --json "
                          "2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  ASSERT_EQ(::pclose(p), 0) << r.out;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  auto catalog = dagsgd::model::HardwareCatalog::load_default();
  ASSERT_TRUE(catalog.ok());
  auto entry = catalog->fabric("10gbe-bcaffe-k80");
  ASSERT_TRUE(entry.ok());
  const auto& fit = j["fabric"];
  EXPECT_NEAR(fit["achievable_gbps"].get<double>() * 1e9 / 8, entry->achievable_bandwidth, 1e3);
  EXPECT_NEAR(fit["latency_us"].get<double>() * 1e3, static_cast<double>(entry->latency), 1);
  EXPECT_EQ(fit["eager_limit_bytes"].get<std::int64_t>(), entry->eager_limit);
  EXPECT_NEAR(fit["rendezvous_latency_us"].get<double>() * 1e3,
              static_cast<double>(entry->rendezvous_latency), 1);
  EXPECT_DOUBLE_EQ(entry->nominal_bandwidth, 1.25e9);
  EXPECT_FALSE(fit.contains("allreduce_measured"));
  EXPECT_TRUE(entry->measured_allreduce.empty());
}

}  // namespace
