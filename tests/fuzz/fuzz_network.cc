// Fuzz target: a network definition, then the model pipeline predict runs on it (worker times
// from FLOPs, gradient groups of every overlap policy, the DAG's limits, the DAG itself when
// small). Whatever the bytes: an Error, or times that are in range and a DAG that can be simulated.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/ssgd.h"
#include "fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd::model;
  auto net = parse_network_json(dagsgd::fuzz::text_of(data, size), "fuzz");
  if (!net.ok()) return 0;
  FUZZ_REQUIRE(!net->layers.empty());
  // A V100 at its catalog rates (datasets/hardware/gpus.json) and 40% of peak, PCIe 3.
  auto w = worker_times(*net, 64, 15.7e12 * 0.4, 900e9, 12e9);
  if (!w.ok()) return 0;
  double sum = static_cast<double>(w->update);
  for (const auto& l : w->layers) {
    FUZZ_REQUIRE(l.forward >= 0 && l.forward < kMaxDuration);
    FUZZ_REQUIRE(l.backward >= 0 && l.backward < kMaxDuration);
    sum += static_cast<double>(l.forward) + static_cast<double>(l.backward);
  }
  FUZZ_REQUIRE(sum < static_cast<double>(kMaxDuration));
  Topology topo;
  topo.nodes = 2;
  topo.gpus_per_node = 2;
  topo.intra.alpha_ns = 5000;  // 10GbE-like and PCIe-like links
  topo.intra.beta_ns_per_byte = 1e9 / 12e9;
  topo.inter.alpha_ns = 30000;
  topo.inter.beta_ns_per_byte = 1e9 / 1.1e9;
  auto comm = make_comm_model(topo, ExchangeConfig{});
  FUZZ_REQUIRE(comm.ok());
  const CommModel& cm = **comm;
  for (const char* policy : {"none", "wfbp", "mgwfbp", "bucket:25"}) {
    auto overlap = parse_overlap(policy);
    FUZZ_REQUIRE(overlap.ok());
    SsgdConfig c;
    c.layers = w->layers;
    c.workers = topo.workers();
    c.iterations = 2;
    c.update = w->update;
    c.h2d = w->h2d;
    c.groups = make_groups(c.layers, *overlap, [&](std::int64_t e) { return cm.exchange_time(e); });
    for (const auto& g : c.groups) FUZZ_REQUIRE(g.comm >= 0);
    if (!check_ssgd_config(c).ok()) continue;
    if (c.layers.size() > 200) continue;  // building is linear; keep executions fast
    Dag dag = build_ssgd_dag(c);
    FUZZ_REQUIRE(dag.check_bounds().ok());
  }
  return 0;
}
