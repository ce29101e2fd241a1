// A freshly traced 2-rank `dagsgd train` run, analyzed and replayed (label mpi): the replay with
// modeled communication reproduces the measured iteration within a tolerance, and with measured
// communication almost exactly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/cli_runner.h"

namespace {

using dagsgd::testing::run_cli;
namespace fs = std::filesystem;

// A fresh 2-rank `dagsgd train --model mlp --overlap wfbp` run directory (more train flags in
// `flags`); "" if it failed.
std::string traced_run(const std::string& name, int iterations, const std::string& flags = "") {
  std::string dir = (fs::temp_directory_path() / name).string();
  fs::remove_all(dir);
  std::string cmd = "mpirun --allow-run-as-root --oversubscribe -np 2 " +
                    std::string(DAGSGD_BINARY) + " train --model mlp --iterations " +
                    std::to_string(iterations) + " --overlap wfbp --no-eval " + flags +
                    " --trace " + dir + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0 ? dir : "";
}

// `replay --json RUN FLAGS`, which must succeed, parsed.
nlohmann::json replay_json(const std::string& dir, const std::string& flags) {
  auto r = run_cli("replay --json " + dir + " " + flags);
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// `ARGS` must be refused as bad input (exit 2) with `message` on stderr.
void expect_refused(const std::string& args, const std::string& message) {
  auto r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
}

// A measured allreduce curve of 2 ranks: 100 us at 1 kB, `at_1mb_us` at 1 MB; with `lag_us` > 0
// the slowest rank's latencies lie that far behind.
std::string two_rank_curve(double at_1mb_us, double lag_us = 0) {
  std::string curve = R"({"ranks": 2, "sizes_bytes": [1000, 1000000], "latency_us": [100, )" +
                      std::to_string(at_1mb_us) + "]";
  if (lag_us > 0) {
    curve += ", \"max_latency_us\": [" + std::to_string(100 + lag_us) + ", " +
             std::to_string(at_1mb_us + lag_us) + "]";
  }
  return curve + "}";
}

// A fabric file DIR/NAME.json for --fabric-file (10 us latency) with one measured `curve`; its
// path.
std::string write_fabric(const std::string& dir, const std::string& name, double nominal_gbps,
                         double achievable_gbps, const std::string& curve) {
  const std::string f = dir + "/" + name + ".json";
  std::ofstream(f) << R"({"name": ")" << name << R"(", "description": "test", "scope": "both",)"
                   << R"( "nominal_gbps": )" << nominal_gbps << R"(, "achievable_gbps": )"
                   << achievable_gbps << R"(, "latency_us": 10, "source": "test",)"
                   << R"( "allreduce_measured": [)" << curve << "]}";
  return f;
}

TEST(ReplayMpi, TracedTwoRankRunReplaysWithinTolerance) {
  const std::string dir = traced_run("dagsgd-replay-mpi-run", 40);
  ASSERT_FALSE(dir.empty());

  auto modeled = run_cli("replay --json " + dir);
  ASSERT_EQ(modeled.code, 0) << modeled.err;
  auto m = nlohmann::json::parse(modeled.out);
  EXPECT_EQ(m["source"], "dagsgd-train");
  EXPECT_EQ(m["ranks"], 2);
  EXPECT_EQ(m["iterations"], 40);
  EXPECT_EQ(m["comm"]["source"], "run");
  EXPECT_EQ(m["comm"]["modeled_collectives"], 3 * 40);  // mlp: 3 layers with parameters
  // The manifest's mean is what replay compares against.
  auto manifest = nlohmann::json::parse(dagsgd::testing::slurp(dir + "/run.manifest"));
  EXPECT_NEAR(m["measured_iteration_s"].get<double>(),
              manifest["iterations"]["mean_s"].get<double>(), 1e-6);
  EXPECT_LT(std::abs(m["error"].get<double>()), 0.10) << modeled.out;

  auto measured = run_cli("replay --json --comm measured " + dir);
  ASSERT_EQ(measured.code, 0) << measured.err;
  auto c = nlohmann::json::parse(measured.out);
  EXPECT_LT(std::abs(c["error"].get<double>()), 0.02) << measured.out;

  auto analyzed = run_cli("analyze --json " + dir);
  ASSERT_EQ(analyzed.code, 0) << analyzed.err;
  auto a = nlohmann::json::parse(analyzed.out);
  EXPECT_EQ(a["ranks"].size(), 2u);
  EXPECT_EQ(a["dag"]["mode"], "ssgd");
  EXPECT_EQ(a["stragglers"]["collectives"], 3 * 40);
  // Per rank, the parts never exceed the iteration.
  for (const auto& r : a["ranks"]) {
    double w = r["iteration_s"].get<double>();
    EXPECT_LE(r["compute_s"].get<double>(), w * 1.0001);
    EXPECT_LE(r["comm_exposed_s"].get<double>() + r["overlap_s"].get<double>(),
              r["comm_total_s"].get<double>() * 1.0001 + 1e-9);
  }
  fs::remove_all(dir);
}

// The alltoall-sum-allgather and reduce-scatter-allgather exchanges are allreduces by the
// model's asa and rsag rows: every one of their collectives is priced (none kept at its
// measured time), on the run's own fitted link and on a target fabric, where a faster
// intra-node link is not slower.
TEST(ReplayMpi, AsaAndRsagRunsArePricedByTheModel) {
  for (const std::string exchange : {"asa", "rsag"}) {
    const std::string dir =
        traced_run("dagsgd-replay-mpi-" + exchange, 40, "--exchange " + exchange);
    ASSERT_FALSE(dir.empty()) << exchange;
    auto own = replay_json(dir, "");
    EXPECT_EQ(own["comm"]["source"], "run");
    EXPECT_EQ(own["comm"]["modeled_collectives"], 3 * 40) << exchange;
    EXPECT_EQ(own["comm"]["measured_collectives"], 0) << exchange;
    // Looser than the allreduce run's 10%: each of the two stages waits for a progress call to
    // see the previous one complete, a wait that grows on a loaded machine (-12% at load 8 on
    // two cores; -0.1% on a quieter one).
    EXPECT_LT(std::abs(own["error"].get<double>()), 0.25) << exchange << "\n" << own.dump();
    auto pcie = replay_json(dir, "--intra pcie3 --inter 10gbe");
    EXPECT_EQ(pcie["comm"]["algorithm"], exchange);
    EXPECT_EQ(pcie["comm"]["modeled_collectives"], 3 * 40) << exchange;
    EXPECT_TRUE(pcie["comm"]["unpriced_collectives"].empty()) << pcie["comm"].dump();
    auto nvlink = replay_json(dir, "--intra nvlink3 --inter 10gbe");
    EXPECT_LE(nvlink["predicted_iteration_s"].get<double>(),
              pcie["predicted_iteration_s"].get<double>())
        << exchange;
    // A fabric's measured curve and a stack's rules describe the library's MPI_Iallreduce, not
    // this exchange: neither prices its spans, the exchange's own row does.
    auto curve = replay_json(dir, "--intra cu --inter cu --fabric-file " +
                                      write_fabric(dir, "cu", 8, 8, two_rank_curve(1100)));
    EXPECT_EQ(curve["comm"]["algorithm"], exchange) << curve["comm"].dump();
    auto stack = replay_json(dir, "--intra 10gbe --inter 10gbe --stack openmpi-4.1-tcp");
    EXPECT_EQ(stack["comm"]["algorithm"], exchange) << stack["comm"].dump();
    fs::remove_all(dir);
  }
}

// Onto a target fabric with measured allreduce latencies: the curve prices the collectives, and
// the slowest rank's extra latency (the tail) replaces the ranks' measured lags, so a fabric
// whose slowest rank is 10 ms behind the average one predicts a longer iteration.
TEST(ReplayMpi, MeasuredCurveAndItsSlowestRankReachTheReplay) {
  const std::string dir = traced_run("dagsgd-replay-mpi-curve", 10);
  ASSERT_FALSE(dir.empty());
  auto predicted = [&](const std::string& name, double lag_us) {
    auto j = replay_json(dir, "--intra " + name + " --inter " + name + " --fabric-file " +
                                  write_fabric(dir, name, 8, 8, two_rank_curve(1100, lag_us)));
    EXPECT_EQ(j["comm"]["source"], "fabric") << j.dump();
    EXPECT_EQ(j["comm"]["algorithm"], "measured") << j.dump();
    EXPECT_EQ(j["comm"]["modeled_collectives"], 3 * 10) << j.dump();
    return j["predicted_iteration_s"].get<double>();
  };
  const double even = predicted("even", 0);
  const double lagging = predicted("lagging", 10'000);
  // Each iteration waits for its last collective's tail at least once (10 ms); the tails of the
  // earlier collectives overlap what follows them.
  EXPECT_GT(lagging - even, 0.009) << even << " vs " << lagging;
  EXPECT_LT(lagging - even, 0.031) << even << " vs " << lagging;
  expect_refused("replay --json " + dir + " --intra 10gbe --inter 10gbe --algorithm measured",
                 "measured allreduce curve for 2 ranks");
  fs::remove_all(dir);
}

// A software stack on the target fabric: Open MPI's in-place MPI_Iallreduce is libnbc's
// binomial reduce + broadcast (twice the ring's bytes at 2 ranks) with a per-message cost, so the
// same run replays slower than on the bare links; without a target --stack is refused.
TEST(ReplayMpi, StackOnATargetFabric) {
  const std::string dir = traced_run("dagsgd-replay-mpi-stack", 10);
  ASSERT_FALSE(dir.empty());
  expect_refused("replay --json " + dir + " --stack openmpi-4.1-tcp",
                 "--stack applies to a target fabric");
  auto predicted = [&](const std::string& extra) {
    auto j = replay_json(dir, "--intra 10gbe --inter 10gbe" + extra);
    EXPECT_EQ(j["comm"]["source"], "fabric") << j.dump();
    return j["predicted_iteration_s"].get<double>();
  };
  const double bare = predicted("");
  const double stacked = predicted(" --stack openmpi-4.1-tcp");
  EXPECT_GT(stacked, bare);
  fs::remove_all(dir);
}

// The flow-level tier: without shared links it agrees with the closed forms, from a spec and
// from a measured curve alike, and it names the links the collectives loaded.
TEST(ReplayMpi, FlowTierAgreesWithoutSharingAndNamesTheBusiestLinks) {
  const std::string dir = traced_run("dagsgd-replay-mpi-flow", 10);
  ASSERT_FALSE(dir.empty());
  auto replay = [&](const std::string& flags) {
    return replay_json(dir, "--gpus-per-node 1 " + flags);
  };
  const auto analytic = replay("--intra pcie3 --inter 1gbe --network-model analytic");
  const auto flow = replay("--intra pcie3 --inter 1gbe --network-model flow");
  EXPECT_FALSE(analytic.contains("busiest_links"));
  EXPECT_EQ(flow["network_model"], "flow");
  ASSERT_FALSE(flow["busiest_links"].empty()) << flow.dump();
  // One rank per node: the NICs carry every byte, so an Ethernet link is the busiest.
  EXPECT_EQ(flow["busiest_links"][0]["kind"], "ethernet") << flow.dump();
  const double a = analytic["predicted_iteration_s"].get<double>();
  EXPECT_NEAR(flow["predicted_iteration_s"].get<double>(), a, 0.01 * a);

  const std::string curve = write_fabric(dir, "curve", 8, 8, two_rank_curve(1100));
  const std::string measured = "--intra curve --inter curve --fabric-file " + curve;
  const auto ma = replay(measured + " --network-model analytic");
  const auto mf = replay(measured + " --network-model flow");
  const double m = ma["predicted_iteration_s"].get<double>();
  EXPECT_NEAR(mf["predicted_iteration_s"].get<double>(), m, 0.02 * m) << mf.dump();

  // A calibrated entry: the curve (100 MB/s at 1 MB) with a line rate of 8 Gbit/s, and one whose
  // line rate is the curve's own 0.8 Gbit/s. Under the stack that made the curve (Open MPI:
  // libnbc's binomial tree for in-place MPI_Iallreduce, two full-size hops at 2 ranks) the flow
  // tier fits the transfers to the curve: on the slow wire one call's two hops take twice the
  // curve, so they carry half their bytes (the curve decides how long; sim::fit_plan_to) and
  // keep the wire busy throughout, so collectives in flight together gain at most what the
  // analytical tier's queueing leaves; on the fast one they overlap - where the stack lets
  // transfers between two ranks run in parallel. The bundled stack moves one at a time per pair of
  // ranks (library.peer_transfers "serial"), so this uses a copy that does not.
  const std::string parallel = dir + "/ompi-parallel.json";
  std::ofstream(parallel) << R"({"schema": "dagsgd-stack/1", "name": "ompi-parallel",)"
                          << R"( "description": "test", "base": "openmpi-4.1-tcp", "library":)"
                          << R"( {"peer_transfers": {"value": "parallel", "source": "test"}}})";
  auto calibrated = [&](const std::string& name, double line_gbps) {
    const std::string f = write_fabric(dir, name, line_gbps, 0.8, two_rank_curve(10000));
    return "--intra " + name + " --inter " + name + " --fabric-file " + f + " --stack " + parallel;
  };
  const double queued =
      replay(calibrated("wire08", 0.8) + " --network-model analytic")["predicted_iteration_s"];
  const double slow_wire =
      replay(calibrated("wire08", 0.8) + " --network-model flow")["predicted_iteration_s"];
  const double fast_wire =
      replay(calibrated("wire8", 8) + " --network-model flow")["predicted_iteration_s"];
  // Not slower than queueing (before the fit met the curve, the slow wire took the tree's two
  // full hops per call, about twice the curve's time).
  EXPECT_LE(slow_wire, queued * (1 + 1e-9));
  EXPECT_LE(fast_wire, slow_wire * (1 + 1e-9));
  // Strictly faster only where the run's collectives were in flight together, which depends on
  // how fast its ranks computed (under ASan they may never overlap).
  EXPECT_LE(fast_wire, queued * (1 + 1e-9));

  expect_refused("replay " + dir + " --network-model flow", "give --intra and --inter");
  fs::remove_all(dir);
}

// Host CPUs: the 2 ranks shared this machine (the manifest says so); replayed with as many
// cores as they had, and on half a core each, whose slower computation shows.
TEST(ReplayMpi, HostCpusFromTheManifest) {
  const std::string dir = traced_run("dagsgd-replay-mpi-cpus", 10);
  ASSERT_FALSE(dir.empty());
  auto manifest = nlohmann::json::parse(dagsgd::testing::slurp(dir + "/run.manifest"));
  const int cpus = manifest["cpus"][0].get<int>();
  auto as_traced = run_cli("replay --json " + dir + " --cpus " + std::to_string(cpus));
  ASSERT_EQ(as_traced.code, 0) << as_traced.err;
  auto a = nlohmann::json::parse(as_traced.out);
  EXPECT_EQ(a["host_cpus"]["traced_machines"], 1);
  EXPECT_EQ(a["host_cpus"]["machines"], 1);
  EXPECT_EQ(a["host_cpus"]["cpus_per_machine"], cpus);
  auto one_core = run_cli("replay --json " + dir + " --cpus 1");
  ASSERT_EQ(one_core.code, 0) << one_core.err;
  auto o = nlohmann::json::parse(one_core.out);
  if (cpus >= 2) {
    EXPECT_DOUBLE_EQ(o["host_cpus"]["ranks_per_cpu"].get<double>(), 2.0);
    EXPECT_GT(o["predicted_iteration_s"].get<double>(), a["predicted_iteration_s"].get<double>());
  }
  // One rank per machine: no sharing at all.
  auto spread = run_cli("replay --json " + dir + " --cpus 1 --ranks-per-machine 1");
  ASSERT_EQ(spread.code, 0) << spread.err;
  EXPECT_EQ(nlohmann::json::parse(spread.out)["host_cpus"]["machines"], 2);
  // A manifest from before 'machines' was recorded: the error names it.
  manifest.erase("machines");
  std::ofstream(dir + "/run.manifest") << manifest.dump(2);
  expect_refused("replay " + dir + " --cpus 2", dir + "/run.manifest' does not say");
  expect_refused("replay " + dir + " --ranks-per-machine 1", "--ranks-per-machine needs --cpus");
  fs::remove_all(dir);
}

}  // namespace
