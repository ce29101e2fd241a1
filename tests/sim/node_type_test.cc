// Node-type files: valid ones parse, every error names the file and the place, GPUs without a
// named NIC get the nearest one, and node types load by name or path.
#include "dagsgd/sim/node_type.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dagsgd/model/io.h"

namespace dagsgd::sim {
namespace {

using model::write_file;

// A valid two-GPU node: edits of it make each error case.
std::string node_json(const std::string& devices_extra = "", const std::string& links_extra = "",
                      const std::string& top_extra = "",
                      const std::string& pcie_type = R"("pcie3": {"kind": "pcie",
      "nominal_gbytes_per_s": 15.754, "efficiency": 0.7617, "latency_us": 0.5, "source": "s"})") {
  return R"({"name": "tiny", "description": "two GPUs", "source": "test",
    "link_types": {)" +
         pcie_type + R"(},
    "devices": [{"name": "gpu0", "kind": "gpu"}, {"name": "gpu1", "kind": "gpu"},
                {"name": "sw", "kind": "pcie_switch"}, {"name": "nic0", "kind": "nic"})" +
         devices_extra + R"(],
    "links": [{"from": "gpu0", "to": "sw", "type": "pcie3", "duplex": true},
              {"from": "gpu1", "to": "sw", "type": "pcie3", "duplex": true},
              {"from": "nic0", "to": "sw", "type": "pcie3", "duplex": true})" +
         links_extra + "]" + top_extra + "}";
}

// The link type "pcie3" with the given fields besides its kind.
std::string pcie3(const std::string& fields) {
  return R"("pcie3": {"kind": "pcie", )" + fields + "}";
}

// The test node with its pcie3 link type's rate, efficiency and latency (JSON values) as given.
std::string with_pcie3(const std::string& rate, const std::string& efficiency,
                       const std::string& latency) {
  return node_json("", "", "",
                   pcie3(R"("nominal_gbytes_per_s": )" + rate + R"(, "efficiency": )" + efficiency +
                         R"(, "latency_us": )" + latency + R"(, "source": "s")"));
}

std::string error_of(const std::string& text) {
  auto n = parse_node_type_json(text, "my-node.json");
  return n.ok() ? "(no error)" : n.error().message;
}

TEST(TopologyFiles, AValidFileParses) {
  auto n = parse_node_type_json(node_json(), "my-node.json");
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n->gpus_per_node(), 2);
  EXPECT_EQ(n->links.size(), 6u);
  EXPECT_EQ(n->gpu_nic, (std::vector<int>{0, 0}));
  EXPECT_NEAR(n->links[0].bandwidth, 12e9, 1e7);
  EXPECT_EQ(n->links[0].latency, 500);
}

TEST(TopologyFiles, ErrorsNameTheFileAndThePlace) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {node_json("", "", R"(, "colour": "green")"), "unknown field 'colour'"},
      {node_json(R"(, {"name": "x", "kind": "gpu", "speed": 3})"),
       "devices[4]: unknown field 'speed'"},
      {node_json("", R"(, {"from": "gpu0", "to": "gpu9", "type": "pcie3", "duplex": true})"),
       "links[3]: 'to' names no device: 'gpu9'"},
      {node_json("", R"(, {"from": "gpu0", "to": "gpu1", "type": "pcie3"})"),
       "links[3] ('gpu0' -> 'gpu1'): no link back from 'gpu1' to 'gpu0'"},
      {node_json("", R"(, {"from": "gpu0", "to": "gpu1", "type": "pcie3"},
                          {"from": "gpu1", "to": "gpu0", "type": "pcie3", "count": 2})"),
       "is pcie3 x1 but links[4] back is pcie3 x2"},
      {node_json("", R"(, {"from": "gpu0", "to": "sw", "type": "pcie3"})"),
       "links[3] ('gpu0' -> 'sw'): repeats the link 'gpu0' -> 'sw' of links[0]"},
      {node_json("", R"(, {"from": "gpu0", "to": "gpu1", "type": "nvlink9", "duplex": true})"),
       "unknown link type 'nvlink9'; valid link types: pcie3"},
      {node_json("", "", R"(, "gpu_nic": [0, 1])"),
       "gpu_nic[1] = 1 is out of range: the node has 1 NICs"},
      {node_json("", "", R"(, "gpu_nic": [0])"), "'gpu_nic' must list one NIC index per GPU (2)"},
      {with_pcie3("0", "0.8", "0.5"),
       "link_types.pcie3: 'nominal_gbytes_per_s' must be a number > 0 and <= 1e+06, got 0"},
      {with_pcie3("\"fast\"", "0.8", "0.5"),
       "'nominal_gbytes_per_s' must be a number > 0 and <= 1e+06, got \"fast\""},
      {with_pcie3("1e300", "0.8", "1e300"),
       "'nominal_gbytes_per_s' must be a number > 0 and <= 1e+06, got 1e+300"},
      {with_pcie3("1e400", "0.8", "0.5"), "not valid JSON"},
      {with_pcie3("16", "1.5", "0.5"), "'efficiency' must be a number > 0 and <= 1, got 1.5"},
      {with_pcie3("1e-12", "1", "0.5"),
       "link_types.pcie3: 'nominal_gbytes_per_s' (1e-12) x 'efficiency' (1) is 1e-12 GB/s, below "
       "the floor of 0.001 GB/s"},
      {with_pcie3("0.002", "0.4", "0.5"), "is 0.0008 GB/s, below the floor"},
      {with_pcie3("16", "0.5", "-1"), "'latency_us' must be a number >= 0 and <= 1e+06, got -1"},
      {node_json("", "", "",
                 pcie3(R"("nominal_gbytes_per_s": 16, "efficiency": 0.5, "latency_us": 1)")),
       "link_types.pcie3: missing 'source'"},
      {node_json(R"(, {"name": "gpu0", "kind": "gpu"})"),
       "devices[4]: a second device named 'gpu0'"},
      {node_json(R"(, {"name": "s2", "kind": "router"})"), "unknown device kind 'router'"},
      {node_json(R"(, {"name": "s2", "kind": "net_switch"})"), "unknown device kind 'net_switch'"},
      {node_json(R"(, {"name": "n.0", "kind": "cpu"})"), "must be letters, digits"},
      // A third GPU reachable only through another GPU: routes do not pass through GPUs.
      {node_json(R"(, {"name": "gpu2", "kind": "gpu"})",
                 R"(, {"from": "gpu1", "to": "gpu2", "type": "pcie3", "duplex": true})"),
       "GPU 'gpu0' has no path to GPU 'gpu2'"},
      {node_json(R"(, {"name": "gpu2", "kind": "gpu"})"), "has no path to GPU 'gpu2'"},
      {"{\"name\": \"tiny\",\n  \"devices\": [}", "not valid JSON: parse error at line 2"},
      {"[1, 2]", "must be an object"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of(c.text);
    EXPECT_EQ(msg.rfind("node type 'my-node.json': ", 0), 0u) << msg;
    EXPECT_NE(msg.find(c.expected), std::string::npos)
        << "expected: " << c.expected << "\n     got: " << msg;
  }
}

// The floor holds at its value, and a file is read only up to the size of a config file.
TEST(TopologyFiles, LinkFloorAndConfigFileSize) {
  EXPECT_EQ(error_of(with_pcie3("0.001", "1", "0.5")), "(no error)");
  EXPECT_EQ(error_of(with_pcie3("0.01", "0.1", "0.5")), "(no error)");
  const std::string path = ::testing::TempDir() + "node-" + std::to_string(::getpid()) + ".json";
  std::string text = node_json();
  text.resize(static_cast<std::size_t>(model::kMaxConfigBytes), ' ');
  ASSERT_TRUE(write_file(path, text, true).ok());
  auto n = load_node_type(path);
  EXPECT_TRUE(n.ok()) << n.error().message;
  ASSERT_TRUE(write_file(path, text + " ", true).ok());
  n = load_node_type(path);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().message.find("'" + path + "'"), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("1 MiB limit"), std::string::npos) << n.error().message;
  std::remove(path.c_str());
}

TEST(TopologyFiles, NearestNicsAreSpreadOverEquidistantOnes) {
  const std::string text = R"({"name": "pair", "description": "d", "source": "s",
    "link_types": {"p": {"kind": "pcie", "nominal_gbytes_per_s": 16, "efficiency": 0.75,
                         "latency_us": 0, "source": "s"}},
    "devices": [{"name": "gpu0", "kind": "gpu"}, {"name": "gpu1", "kind": "gpu"},
                {"name": "gpu2", "kind": "gpu"}, {"name": "sw0", "kind": "pcie_switch"},
                {"name": "sw1", "kind": "pcie_switch"}, {"name": "cpu", "kind": "cpu"},
                {"name": "nic0", "kind": "nic"}, {"name": "nic1", "kind": "nic"},
                {"name": "nic2", "kind": "nic"}],
    "links": [{"from": "gpu0", "to": "sw0", "type": "p", "duplex": true},
              {"from": "gpu1", "to": "sw0", "type": "p", "duplex": true},
              {"from": "nic0", "to": "sw0", "type": "p", "duplex": true},
              {"from": "nic1", "to": "sw0", "type": "p", "duplex": true},
              {"from": "gpu2", "to": "sw1", "type": "p", "duplex": true},
              {"from": "sw0", "to": "cpu", "type": "p", "duplex": true},
              {"from": "sw1", "to": "cpu", "type": "p", "duplex": true},
              {"from": "nic2", "to": "cpu", "type": "p", "duplex": true}]})";
  auto n = parse_node_type_json(text, "pair.json");
  ASSERT_TRUE(n.ok()) << n.error().message;
  // GPUs 0 and 1 share a switch with NICs 0 and 1; GPU 2 is nearest NIC 2 (on the CPU).
  EXPECT_EQ(n->gpu_nic, (std::vector<int>{0, 1, 2}));
}

TEST(TopologyFiles, LoadByNameOrPath) {
  auto unknown = load_node_type("dgx-9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown node type 'dgx-9'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("dgx1-v100"), std::string::npos);
  auto missing = load_node_type("/nonexistent/node.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/node.json"), std::string::npos);
  const std::string path =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-topology-node.json";
  ASSERT_TRUE(write_file(path, node_json(), /*force=*/true).ok());
  auto n = load_node_type(path);
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n->name, "tiny");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dagsgd::sim
