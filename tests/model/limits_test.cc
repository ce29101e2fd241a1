// Numbers out of range in networks, catalogs and fabric files, and times computed from them that
// would overflow: an Error naming the file and field, never an abort or a wrong number (issue 13,
// classes 1, 2, 4, 5 and 13; docs/limits.md).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <string>

#include "common/text.h"
#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/dag.h"
#include "dagsgd/model/hardware.h"
#include "dagsgd/model/io.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/ssgd.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {
namespace {

using dagsgd::testing::contains;

std::string limits_temp_file(const std::string& name, const std::string& content) {
  std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-lim-" + name;
  EXPECT_TRUE(write_file(path, content, true).ok());
  return path;
}

std::string one_layer_network(const std::string& flops) {
  return R"({"name": "n", "description": "", "source": "test", "input_shape": [3, 224, 224],
  "layers": [{"name": "fc", "type": "fc", "params": [{"name": "weight", "shape": [10, 10]}],
    "forward_flops": )" +
         flops + R"(, "activation_elements": 10}]})";
}

// A --fabric-file entry; `field` replaces one number.
std::string fabric(const std::string& field, const std::string& value) {
  std::string j = R"({"name": "slow", "description": "d", "scope": "inter", "nominal_gbps": 10,
    "achievable_gbps": 8, "latency_us": 20, "source": "test"})";
  const auto at = j.find("\"" + field + "\": ");
  EXPECT_NE(at, std::string::npos) << field;
  const auto start = at + field.size() + 4;
  j.replace(start, j.find_first_of(",}", start) - start, value);
  return j;
}

// Class 1: 1e999 is beyond double; nlohmann's out_of_range must not escape as an exception.
TEST(Limits, NetworkNumberBeyondDoubleIsAnErrorWithPosition) {
  auto net = parse_network_json(one_layer_network("1e999"), "huge.json");
  ASSERT_FALSE(net.ok());
  EXPECT_TRUE(contains(net.error().message, "network 'huge.json': not valid JSON: line 3"))
      << net.error().message;
  EXPECT_TRUE(contains(net.error().message, "number overflow")) << net.error().message;
}

// Class 2: forward_flops 1e25 per sample is refused where it is read.
TEST(Limits, NetworkFlopsOutOfRange) {
  auto net = parse_network_json(one_layer_network("1e25"), "big.json");
  ASSERT_FALSE(net.ok());
  EXPECT_TRUE(contains(net.error().message,
                       "network 'big.json': layer 0 'fc': 'forward_flops' 1e+25 is out of range"))
      << net.error().message;
  EXPECT_TRUE(parse_network_json(one_layer_network("1e18"), "ok.json").ok());
}

// Class 2: times computed from in-range numbers can still overflow; worker_times says which.
TEST(Limits, WorkerTimesNameWhatOverflowed) {
  auto net = parse_network_json(one_layer_network("1e18"), "n.json");
  ASSERT_TRUE(net.ok());
  auto w = worker_times(*net, 1024, /*flops_per_s=*/1e6, 9e11, 1.2e10);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(contains(w.error().message, "layer 0 'fc': forward")) << w.error().message;
  EXPECT_TRUE(contains(w.error().message, "out of range")) << w.error().message;
  auto ok = worker_times(*net, 1, 1e18, 9e11, 1.2e10);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->layers[0].forward, 1'000'000'000);
  EXPECT_EQ(ok->layers[0].backward, 2'000'000'000);
  EXPECT_FALSE(worker_times(*net, 1, std::nan(""), 9e11, 1.2e10).ok());
  EXPECT_FALSE(worker_times(*net, 0, 1e12, 9e11, 1.2e10).ok());
  // The unchecked form saturates instead of overflowing: never negative.
  auto sat = layer_times_from_flops(*net, 1 << 30, 1e-3);
  EXPECT_EQ(sat[0].forward, kMaxTimestamp);
  EXPECT_EQ(sat[0].backward, kMaxTimestamp);
}

// Class 2: --io-time 1e10 and nan, --step-time.
TEST(Limits, DurationsFromSecondsAreChecked) {
  auto big = duration_ns(1e10, 1e9, "--io-time");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message,
            "--io-time: 1e+10 s is out of range (a duration must be below 1e15 ns, 11.6 days)");
  auto nan = duration_ns(std::nan(""), 1e9, "--io-time");
  ASSERT_FALSE(nan.ok());
  EXPECT_TRUE(contains(nan.error().message, "--io-time: not a number")) << nan.error().message;
  EXPECT_FALSE(duration_ns(-1, 1e9, "x").ok());
  EXPECT_EQ(*duration_ns(0.25, 1e9, "x"), 250'000'000);
  EXPECT_EQ(from_seconds(1e10), kMaxTimestamp);  // saturates: no undefined llround
  EXPECT_EQ(from_seconds(std::nan("")), kMaxTimestamp);
  EXPECT_EQ(from_seconds(-1e300), -kMaxTimestamp);
  EXPECT_EQ(saturating_add(kMaxTimestamp, kMaxTimestamp), kMaxTimestamp);
  std::vector<LayerTime> layers = {{1000, 2000, 10}};
  auto s = scale_to_step_time(layers, 10, from_seconds(1e10));
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.error().message, "the step time")) << s.error().message;
}

// Classes 2 and 4: slow.json with "achievable_gbps": 1e-300 (the cause of the DAG abort and of
// replay's -9.2e12 ms); class 13: latency_us 1e308 names the file and field.
TEST(Limits, FabricNumbersOutOfRangeNameFileAndField) {
  HardwareCatalog c = *HardwareCatalog::load_default();
  const std::string slow = limits_temp_file("slow.json", fabric("achievable_gbps", "1e-300"));
  auto r = c.add_fabric_file(slow);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "hardware file '" + slow + "': fabric 0 ('slow'): "))
      << r.error().message;
  EXPECT_TRUE(contains(r.error().message, "'achievable_gbps' must be from 1e-06 to 1e+07 Gbit/s"))
      << r.error().message;
  const std::string lat = limits_temp_file("lat.json", fabric("latency_us", "1e308"));
  auto l = c.add_fabric_file(lat);
  ASSERT_FALSE(l.ok());
  EXPECT_TRUE(contains(l.error().message, "'latency_us' must be from 0 to 1e+07 us, got 1e+308"))
      << l.error().message;
  EXPECT_TRUE(contains(l.error().message, lat));
  const std::string nan = limits_temp_file("nan.json", fabric("nominal_gbps", "\"NaN\""));
  EXPECT_FALSE(c.add_fabric_file(nan).ok());
  auto gpu = HardwareCatalog::parse(
      R"({"gpus": [{"name": "g", "description": "d", "fp32_tflops": 1e300, "fp16_tflops": 1,
          "memory_gbytes_per_s": 1, "source": "s"}]})",
      "gpus.json", R"([)" + fabric("latency_us", "1") + "]", "fabrics.json");
  ASSERT_FALSE(gpu.ok());
  EXPECT_TRUE(contains(gpu.error().message,
                       "hardware file 'gpus.json': gpu 0 ('g'): "
                       "'fp32_tflops' must be from 1e-06 to 1e+06"))
      << gpu.error().message;
}

// Class 14: invalid JSON in a fabric file gives the line and column.
TEST(Limits, InvalidFabricJsonHasLineAndColumn) {
  HardwareCatalog c = *HardwareCatalog::load_default();
  const std::string path = limits_temp_file("broken.json", "{\"name\": \"x\",\n \"scope\": inter}");
  auto r = c.add_fabric_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error().message, "'" + path + "': not valid JSON: line 2, column 11"))
      << r.error().message;
  // Class 17: /dev/zero as --fabric-file.
  auto zero = c.add_fabric_file("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_TRUE(contains(zero.error().message, "character device")) << zero.error().message;
}

// Class 4: whatever the link, a collective's time is >= 0; beyond the range it saturates and
// the checked form says so.
TEST(Limits, CollectiveTimesSaturateAndCheckedOnesFail) {
  Topology t;
  t.nodes = 4;
  t.gpus_per_node = 1;
  t.inter.alpha_ns = 1e13;         // 10,000 s per message: in range for one message
  t.inter.beta_ns_per_byte = 8e6;  // 1 kbit/s, the slowest link a fabric file may state
  t.intra = t.inter;
  auto m = make_comm_model(t, ExchangeConfig{});
  ASSERT_TRUE(m.ok()) << m.error().message;
  const std::int64_t elements = 25'000'000'000;  // 100 GB of fp32 gradients: 1.2e18 ns
  EXPECT_EQ((*m)->exchange_time(elements), 1'200'060'000'000'000'000);
  EXPECT_EQ((*m)->exchange_time(250'000'000'000'000), kMaxTimestamp);  // 1.2e22 ns saturates
  EXPECT_GE((*m)->phases(elements).body, 0);
  auto checked = (*m)->checked_exchange_time(elements);
  ASSERT_FALSE(checked.ok());
  EXPECT_TRUE(contains(checked.error().message, "aggregating 25000000000 gradient elements"))
      << checked.error().message;
  EXPECT_FALSE((*m)->checked_phases(elements).ok());
  EXPECT_TRUE((*m)->checked_exchange_time(1).ok());
  t.inter.alpha_ns = 1e300;
  EXPECT_FALSE(make_comm_model(t, ExchangeConfig{}).ok());
}

// Class 5: 1 x 2147483647 GPUs, and a DAG too large to build.
TEST(Limits, WorkerCountAndDagSize) {
  Topology t;
  t.nodes = 1;
  t.gpus_per_node = std::numeric_limits<int>::max();
  auto m = make_comm_model(t, ExchangeConfig{});
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(contains(m.error().message, "2147483647 workers is out of range (at most 1048576)"))
      << m.error().message;
  t.nodes = 3;  // the product passes int: no overflow in workers() either
  EXPECT_EQ(t.workers(), std::numeric_limits<int>::max());

  // ResNet-50 (161 layers) on 100,000 nodes of 8: 800,000 workers, the comm model takes them; the
  // DAG of 3 iterations would hold ~780 million tasks.
  SsgdConfig c;
  c.layers.assign(161, LayerTime{1000, 2000, 100});
  c.workers = 800'000;
  c.iterations = 3;
  auto check = check_ssgd_config(c);
  ASSERT_FALSE(check.ok());
  EXPECT_TRUE(contains(check.error().message, "800000 workers x 161 layers x 3 iterations"))
      << check.error().message;
  EXPECT_TRUE(contains(check.error().message, "out of range (at most 50000000 tasks"))
      << check.error().message;
  c.workers = 1024;  // what docs/performance.md simulates
  EXPECT_TRUE(check_ssgd_config(c).ok());
}

TEST(Limits, SsgdConfigDurationsAndTotals) {
  SsgdConfig c;
  c.layers = {{1000, 2000, 10}, {1000, 2000, 10}};
  c.workers = 2;
  c.groups = {{1, 1, 10, 500}, {0, 0, 10, 500}};
  ASSERT_TRUE(check_ssgd_config(c).ok());
  SsgdConfig bad = c;
  bad.io = kMaxTimestamp;  // what a saturated --io-time gives
  auto e = check_ssgd_config(bad);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(contains(e.error().message, "io lasts 3000000000000000000 ns: out of range"))
      << e.error().message;
  bad = c;
  bad.groups[1].comm = -1;
  EXPECT_TRUE(contains(check_ssgd_config(bad).error().message, "gradient group 1's aggregation"));
  bad = c;
  bad.groups[0].last = 5;
  EXPECT_FALSE(check_ssgd_config(bad).ok());
  bad = c;
  bad.slowdown = {1.0, std::nan("")};
  EXPECT_FALSE(check_ssgd_config(bad).ok());
  bad = c;
  bad.slowdown = {1.0, 1e12};  // a slowed layer beyond the range
  EXPECT_FALSE(check_ssgd_config(bad).ok());
  // Durations in range each, whose sum would pass int64 over many workers and iterations.
  bad = c;
  bad.layers = {{100'000'000'000'000, 200'000'000'000'000, 10}};
  bad.groups.clear();
  bad.workers = 4096;
  bad.iterations = 1000;
  EXPECT_TRUE(contains(check_ssgd_config(bad).error().message, "add up to 2^62 ns or more"));

  // The DAG's own check, for simulators whose durations change after the build.
  Dag dag = build_ssgd_dag(c);
  EXPECT_TRUE(dag.check_bounds().ok());
  dag.mutable_task(3).duration = kMaxTimestamp;
  auto b = dag.check_bounds();
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(contains(b.error().message, "out of range")) << b.error().message;
}

// MG-WFBP's grouping adds collective times up; saturated ones must not overflow it.
TEST(Limits, GroupingWithSaturatedTimesDoesNotOverflow) {
  std::vector<LayerTime> layers(50, LayerTime{kMaxTimestamp, kMaxTimestamp, 1000});
  auto groups =
      make_groups(layers, *parse_overlap("mgwfbp"), [](std::int64_t) { return kMaxTimestamp; });
  ASSERT_FALSE(groups.empty());
  for (const auto& g : groups) EXPECT_EQ(g.comm, kMaxTimestamp);
}

}  // namespace
}  // namespace dagsgd::model
