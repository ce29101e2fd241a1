// dagsgd topology as a user runs it: list, show as text, JSON and Graphviz, and bad input with a
// one-line error and exit code 2.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/cli_runner.h"

namespace dagsgd {
namespace {

using testing::run_cli;

TEST(TopologyCli, ListsEveryBundledNodeType) {
  auto r = run_cli("topology list");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"dgx1-v100", "dgx-a100", "dgx-h100", "pcie-4gpu-2s",
                           "pcie-8gpu-2s-switch", "k80-4board-2s", "cpu-1s"}) {
    EXPECT_NE(r.out.find(std::string(name) + " "), std::string::npos) << name;
  }
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 7);
}

TEST(TopologyCli, ShowPrintsRoutesRingAndNetwork) {
  auto r = run_cli("topology show dgx1-v100 --nodes 4 --cluster-network fat-tree:2:2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("intra-node ring: gpu0 > gpu3 > gpu2 > gpu1 > gpu5 > gpu6 > gpu7 > gpu4"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu0 > plx0 > cpu0 > cpu1 > plx2 > gpu5"), std::string::npos);
  EXPECT_NE(r.out.find("network: fat-tree, oversubscription 2, 2 nodes per leaf; NIC ports ib-edr"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("> spine >"), std::string::npos);
}

TEST(TopologyCli, JsonAndDot) {
  auto j = run_cli("topology show dgx-a100 --nodes 2 --cluster-network rail --json");
  ASSERT_EQ(j.code, 0) << j.err;
  auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["node_type"]["name"], "dgx-a100");
  EXPECT_EQ(doc["node_type"]["gpus_per_node"], 8);
  EXPECT_EQ(doc["node_type"]["routes"].size(), 56u);
  EXPECT_EQ(doc["node_type"]["gpu_nic"][5], "nic5");
  EXPECT_EQ(doc["cluster"]["network"]["kind"], "rail-optimized");
  EXPECT_EQ(doc["cluster"]["network"]["fabric"], "ib-hdr");
  auto d = run_cli("topology show k80-4board-2s --dot");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.out.rfind("graph \"k80-4board-2s\" {", 0), 0u);
  EXPECT_NE(d.out.find("\"n0.gpu0\" -- \"n0.plx0\""), std::string::npos) << d.out;
  // --inter replaces the node type's fabric.
  auto e = run_cli("topology show dgx1-v100 --nodes 2 --inter 100gbe --json");
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(e.out)["cluster"]["network"]["fabric"], "100gbe");
}

TEST(TopologyCli, BadInputIsOneLineAndExitTwo) {
  const std::string file = "/tmp/dagsgd-topology-cli-" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream out(file);
    out << R"({"name": "x", "description": "d", "source": "s", "link_types": {},
      "devices": [], "links": []})";
  }
  for (const std::string& args :
       {std::string("topology show dgx-9"),
        std::string("topology show dgx1-v100 --cluster-network torus"),
        std::string("topology show dgx1-v100 --nodes 2 --inter nvlink2"),
        std::string("topology show dgx1-v100 --nodes 2 --inter warp-drive"),
        std::string("topology show dgx1-v100 --nodes 0"),
        std::string("topology show dgx1-v100 --dot --json"), std::string("topology show"),
        std::string("topology show /nonexistent/node.json"), "topology show " + file}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_EQ(r.err.rfind("dagsgd: error: ", 0), 0u) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
  auto r = run_cli("topology show " + file);
  EXPECT_NE(r.err.find("node type '" + file + "': 'link_types' must be a non-empty object"),
            std::string::npos)
      << r.err;
  std::remove(file.c_str());
}

}  // namespace
}  // namespace dagsgd
