// The bundled hardware catalogs load, and bad catalog files are rejected with file and row.
#include "dagsgd/model/hardware.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/paths.h"

namespace dagsgd::model {
namespace {

std::string temp_file(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-" + name;
  auto w = write_file(path, content, /*force=*/true);
  EXPECT_TRUE(w.ok()) << w.error().message;
  return path;
}

// The error of adding `content` as a fabric file to the bundled catalog; every such error names
// the file. "(accepted)" when the file is taken.
std::string add_error(const std::string& name, const std::string& content) {
  const std::string path = temp_file(name, content);
  HardwareCatalog c = *HardwareCatalog::load_default();
  auto r = c.add_fabric_file(path);
  if (r.ok()) return "(accepted)";
  EXPECT_NE(r.error().message.find(path), std::string::npos) << r.error().message;
  return r.error().message;
}

const char* kFabric = R"({"name": "lab", "description": "lab cluster", "scope": "inter",
  "nominal_gbps": 10, "achievable_gbps": 8, "latency_us": 20, "eager_limit_bytes": 8192,
  "rendezvous_latency_us": 60, "source": "measured"})";

TEST(Hardware, DefaultCatalogLoads) {
  auto c = HardwareCatalog::load_default();
  ASSERT_TRUE(c.ok()) << c.error().message;
  for (const char* g : {"k80", "p100", "v100", "a100", "h100", "h200"}) {
    EXPECT_TRUE(c->gpu(g).ok()) << g;
  }
  for (const char* f :
       {"pcie3",   "pcie4",         "pcie5",       "nvlink1", "nvlink2", "nvlink3", "nvlink4",
        "nvlink5", "nvswitch-a100", "1gbe",        "10gbe",   "25gbe",   "40gbe",   "100gbe",
        "200gbe",  "400gbe",        "100gbe-roce", "ib-fdr",  "ib-edr",  "ib-hdr",  "ib-ndr"}) {
    EXPECT_TRUE(c->fabric(f).ok()) << f;
  }
  for (const auto& f : c->fabrics()) {
    EXPECT_FALSE(f.source.empty()) << f.name;
    EXPECT_LE(f.achievable_bandwidth, f.nominal_bandwidth) << f.name;
  }
  auto v100 = c->gpu("v100");
  EXPECT_DOUBLE_EQ(v100->fp32_flops, 15.7e12);
  EXPECT_DOUBLE_EQ(v100->memory_bandwidth, 900e9);
  auto ten = c->fabric("10gbe");
  EXPECT_DOUBLE_EQ(ten->nominal_bandwidth, 1.25e9);  // 10 Gbit/s in bytes/s
  EXPECT_EQ(ten->latency, 15'000);                   // 15 us in ns
  EXPECT_EQ(ten->eager_limit, 65'536);
  EXPECT_EQ(ten->scope, "inter");
  EXPECT_EQ(c->fabric("nvlink2")->nominal_bandwidth, 150e9);
}

TEST(Hardware, UnknownNamesListValidOnes) {
  auto c = HardwareCatalog::load_default();
  ASSERT_TRUE(c.ok());
  auto g = c->gpu("b300");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("'b300'"), std::string::npos);
  EXPECT_NE(g.error().message.find("v100"), std::string::npos);
  auto f = c->fabric("omnipath");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("ib-edr"), std::string::npos) << f.error().message;
}

TEST(Hardware, AddFabricFileSingleObjectOrList) {
  auto c = HardwareCatalog::load_default();
  ASSERT_TRUE(c.ok());
  const auto before = c->fabrics().size();
  ASSERT_TRUE(c->add_fabric_file(temp_file("one.json", kFabric)).ok());
  EXPECT_EQ(c->fabrics().size(), before + 1);
  auto lab = c->fabric("lab");
  ASSERT_TRUE(lab.ok());
  EXPECT_DOUBLE_EQ(lab->achievable_bandwidth, 1e9);
  EXPECT_EQ(lab->rendezvous_latency, 60'000);
  // A list that replaces "10gbe" by name and adds another.
  std::string list = std::string("[") + kFabric + "]";
  auto pos = list.find("\"lab\"");
  list.replace(pos, 5, "\"10gbe\"");
  ASSERT_TRUE(c->add_fabric_file(temp_file("list.json", list)).ok());
  EXPECT_EQ(c->fabrics().size(), before + 1);
  EXPECT_EQ(c->fabric("10gbe")->source, "measured");
}

// A fabric as `dagsgd calibrate` writes one.
FabricSpec fitted(const std::string& name, double achievable_bandwidth, Nanos latency) {
  FabricSpec f;
  f.name = name;
  f.description = "fitted";
  f.scope = "inter";
  f.nominal_bandwidth = 1.25e9;
  f.achievable_bandwidth = achievable_bandwidth;
  f.latency = latency;
  f.source = "dagsgd calibrate";
  return f;
}

// `text` (fabric_to_json's) read back through add_fabric_file, by its name.
FabricSpec read_back(const std::string& name, const std::string& text) {
  HardwareCatalog c = *HardwareCatalog::load_default();
  const auto added = c.add_fabric_file(temp_file(name + ".json", text));
  EXPECT_TRUE(added.ok()) << added.error().message;
  auto back = c.fabric(name);
  EXPECT_TRUE(back.ok());
  return back ? *back : FabricSpec{};
}

TEST(Hardware, JsonRoundTrip) {
  FabricSpec f = fitted("fit", 1.1e9, 12'345);
  f.eager_limit = 8192;
  f.rendezvous_latency = 50'000;
  const std::string text = fabric_to_json(f);
  EXPECT_NE(text.find("\"achievable_gbps\": 8.8"), std::string::npos) << text;
  const FabricSpec back = read_back("fit", text);
  EXPECT_DOUBLE_EQ(back.achievable_bandwidth, 1.1e9);
  EXPECT_EQ(back.latency, 12'345);
  EXPECT_EQ(back.eager_limit, 8192);
  EXPECT_EQ(back.rendezvous_latency, 50'000);
  EXPECT_TRUE(back.measured_allreduce.empty());
}

// The flow tier's wire: a spec entry's achievable bandwidth; a calibrated entry's line rate,
// since its fitted bandwidth is one collective's (the library's algorithm inside) and its
// curves price the collectives.
TEST(Hardware, LinkCapacityIsTheLineRateUnderMeasuredCurves) {
  FabricSpec f;
  f.nominal_bandwidth = 12.5e6;
  f.achievable_bandwidth = 3.9e6;
  EXPECT_DOUBLE_EQ(link_capacity(f), 3.9e6);
  f.measured_allreduce.push_back({4, {{32768, 29'000'000}}, {}});
  EXPECT_DOUBLE_EQ(link_capacity(f), 12.5e6);
  f.nominal_bandwidth = 1e6;  // never below what a collective was measured to achieve
  EXPECT_DOUBLE_EQ(link_capacity(f), 3.9e6);
}

TEST(Hardware, MeasuredAllreduceRoundTrip) {
  FabricSpec f = fitted("bench", 1.25e9, 1'000);
  f.scope = "both";
  f.measured_allreduce = {{2, {{1024, 50'000}, {1 << 20, 2'500'000}}},
                          {4, {{1024, 90'000}, {4096, 95'500}, {1 << 20, 4'000'000}}}};
  const std::string text = fabric_to_json(f);
  EXPECT_NE(text.find("\"allreduce_measured\""), std::string::npos) << text;
  // No algorithm said: none written (entries from before the key read as they did).
  EXPECT_EQ(text.find("\"algorithm\""), std::string::npos) << text;
  EXPECT_EQ(read_back("bench", text).measured_allreduce, f.measured_allreduce);
  f.measured_allreduce[1].algorithm = "binomial";
  const std::string with = fabric_to_json(f);
  EXPECT_NE(with.find("\"algorithm\": \"binomial\""), std::string::npos) << with;
  EXPECT_EQ(read_back("bench", with).measured_allreduce, f.measured_allreduce);
}

TEST(Hardware, BadMeasuredAllreduceSaysWhere) {
  struct Case {
    std::string curves, expect;
  };
  const Case cases[] = {
      {R"({"ranks": 2})", "must be a list"},
      {R"([{"ranks": 1, "sizes_bytes": [4, 8], "latency_us": [1, 2]}])", "'ranks' must be"},
      {R"([{"ranks": 2, "sizes_bytes": [8, 4], "latency_us": [1, 2]}])", "must increase"},
      {R"([{"ranks": 2, "sizes_bytes": [4, 8], "latency_us": [1]}])", "same length"},
      {R"([{"ranks": 2, "sizes_bytes": [4, 8], "latency_us": [1, -2]}])", "latency_us[1]"},
      {R"([{"ranks": 2, "sizes_bytes": [4, 8.5], "latency_us": [1, 2]}])", "sizes_bytes[1]"},
      {R"([{"ranks": 2, "sizes_bytes": [4, 8], "latency_us": [1, 2], "p": 2}])",
       "unknown field 'p'"},
      {R"([{"ranks": 2, "sizes_bytes": [4, 8], "latency_us": [1, 2]},
           {"ranks": 2, "sizes_bytes": [4, 8], "latency_us": [1, 2]}])",
       "a second curve for 2 ranks"},
      {R"([{"ranks": 2, "sizes_bytes": [4, 8], "latency_us": [1, 2], "algorithm": "auto"}])",
       "'algorithm': unknown allreduce formula 'auto'"},
      {R"([{"ranks": 2, "sizes_bytes": [4, 8], "latency_us": [1, 2], "algorithm": 3}])",
       "'algorithm' must be a string"},
  };
  for (const auto& k : cases) {
    std::string row = kFabric;
    row.insert(row.size() - 1, ", \"allreduce_measured\": " + k.curves);
    const std::string msg = add_error("bad-measured.json", row);
    EXPECT_NE(msg.find("allreduce_measured"), std::string::npos) << k.curves << ": " << msg;
    EXPECT_NE(msg.find(k.expect), std::string::npos) << msg;
  }
}

// Each bad file is rejected with the file, the row and what is wrong.
TEST(Hardware, BadRowsNameFileAndRow) {
  struct Case {
    std::string edit_from, edit_to, expect;
  };
  const Case cases[] = {
      {"\"achievable_gbps\": 8", "\"achievable_gbps\": 80", "exceeds 'nominal_gbps'"},
      {"\"latency_us\": 20", "\"latency_us\": -1",
       "'latency_us' must be from 0 to 1e+07 us, got -1"},
      {"\"latency_us\": 20", "\"latency_ms\": 20", "unknown field 'latency_ms'"},
      {"\"scope\": \"inter\"", "\"scope\": \"rack\"", "unknown scope 'rack'"},
      {"\"nominal_gbps\": 10", "\"nominal_gbps\": \"ten\"", "'nominal_gbps' must be a number"},
      {"\"source\": \"measured\"", "\"sauce\": \"measured\"", "unknown field 'sauce'"},
      {"\"eager_limit_bytes\": 8192,", "", "needs 'eager_limit_bytes'"},
      {"\"source\"", "\"burst_bytes\": 1.5, \"source\"", "'burst_bytes' must be a whole number"},
      {"\"source\"", "\"burst_bytes\": -1, \"source\"", "'burst_bytes' must be from 0"},
      {"\"source\"",
       "\"burst_bytes\": 65536, \"allreduce_measured\": [{\"ranks\": 2, \"sizes_bytes\": [8, 16], "
       "\"latency_us\": [30, 31]}], \"source\"",
       "already include the burst"},
  };
  for (const auto& k : cases) {
    std::string row = kFabric;
    auto pos = row.find(k.edit_from);
    ASSERT_NE(pos, std::string::npos) << k.edit_from;
    row.replace(pos, k.edit_from.size(), k.edit_to);
    const std::string doc = std::string(R"({"fabrics": [)") + kFabric + "," + row + "]}";
    const std::string msg = add_error("bad.json", doc);
    EXPECT_NE(msg.find("fabric 1"), std::string::npos) << k.edit_to << ": " << msg;
    EXPECT_NE(msg.find(k.expect), std::string::npos) << msg;
  }
}

// A shaper's burst (a token bucket's allowance) is optional, whole bytes, and written back.
TEST(Hardware, ABurstReadsAndWritesBack) {
  std::string row = kFabric;
  row.insert(row.size() - 1, ", \"burst_bytes\": 81920");
  auto c = HardwareCatalog::load_default();
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c->add_fabric_file(temp_file("burst.json", row)).ok());
  auto lab = c->fabric("lab");
  ASSERT_TRUE(lab.ok());
  EXPECT_EQ(lab->burst_bytes, 81920);
  EXPECT_EQ(LinkCost::from_fabric(*lab).burst_bytes, 81920);
  EXPECT_NE(fabric_to_json(*lab).find("\"burst_bytes\": 81920"), std::string::npos)
      << fabric_to_json(*lab);
  EXPECT_EQ(c->fabric("10gbe")->burst_bytes, 0);
  EXPECT_EQ(fabric_to_json(*c->fabric("10gbe")).find("burst_bytes"), std::string::npos);
}

TEST(Hardware, BadFiles) {
  HardwareCatalog c = *HardwareCatalog::load_default();
  auto r = c.add_fabric_file(temp_file("broken.json", "{\"fabrics\": ["));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not valid JSON"), std::string::npos);
  r = c.add_fabric_file(temp_file("dup.json", std::string("[") + kFabric + "," + kFabric + "]"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("duplicate"), std::string::npos);
  r = c.add_fabric_file("/nonexistent/fabric.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/fabric.json"), std::string::npos);
  auto g = HardwareCatalog::load(temp_file("g.json", R"({"gpus": [{"name": "x"}]})"),
                                 data_path("hardware/fabrics.json"));
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("gpu 0 ('x'): missing"), std::string::npos) << g.error().message;
}

}  // namespace
}  // namespace dagsgd::model
