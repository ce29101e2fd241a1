// Topology speed: building a cluster of DGX-1 nodes (node-local routes once, the network by
// construction) and answering the routes of a ring over all its GPUs, cold and cached.
#include <benchmark/benchmark.h>

#include "dagsgd/model/hardware.h"
#include "dagsgd/sim/cluster_network.h"
#include "dagsgd/sim/cluster_topology.h"
#include "dagsgd/sim/node_type.h"

namespace {

using namespace dagsgd;

struct Fixture {
  sim::NodeType node;
  sim::ClusterNetwork network;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    x.node = *sim::load_node_type("dgx1-v100");
    x.network = *sim::parse_network_spec("fat-tree:2:8");
    auto catalog = model::HardwareCatalog::load_default();
    (void)sim::set_network_fabric(x.network, *catalog->fabric("ib-edr"));
    return x;
  }();
  return f;
}

// Build plus the 2 x GPUs routes of a ring (both directions) on a fresh cluster.
void build_and_ring_routes(benchmark::State& state) {
  const Fixture& f = fixture();
  const int nodes = static_cast<int>(state.range(0));
  std::size_t hops = 0;
  for (auto _ : state) {
    auto t = sim::ClusterTopology::build(f.node, nodes, f.network);
    if (!t.ok()) state.SkipWithError(t.error().message.c_str());
    const int n = t->gpu_count();
    for (int r = 0; r < n; ++r) {
      hops += t->route(r, (r + 1) % n).size() + t->route((r + 1) % n, r).size();
    }
  }
  benchmark::DoNotOptimize(hops);
  state.counters["gpus"] = static_cast<double>(nodes * f.node.gpus_per_node());
}
BENCHMARK(build_and_ring_routes)
    ->Name("build_and_ring_routes/smoke")
    ->Arg(2)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(build_and_ring_routes)->Arg(128)->Unit(benchmark::kMillisecond);

// A route already asked for: what the flow tier pays per transfer.
void cached_route(benchmark::State& state) {
  const Fixture& f = fixture();
  auto t = sim::ClusterTopology::build(f.node, 128, f.network);
  const int n = t->gpu_count();
  for (int r = 0; r < n; ++r) (void)t->route(r, (r + 1) % n);
  int r = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(t->route(r, (r + 1) % n).size());
    r = (r + 1) % n;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(cached_route)->Unit(benchmark::kNanosecond);

}  // namespace

BENCHMARK_MAIN();
