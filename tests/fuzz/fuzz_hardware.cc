// Fuzz target: hardware catalogs, fabric files (what `dagsgd calibrate` writes and --fabric-file
// reads) and the compute-efficiency table, then the cost of collectives over every fabric that
// loads. Whatever the bytes: an Error, or costs that are >= 0 and never overflow.
#include <cstddef>
#include <cstdint>
#include <string>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/compute_model.h"
#include "dagsgd/model/hardware.h"
#include "fuzz_check.h"

namespace {

const char* kGpus = R"({"gpus": [{"name": "g", "description": "d", "fp32_tflops": 15.7,
  "fp16_tflops": 125, "memory_gbytes_per_s": 900, "source": "fuzz harness"}]})";
const char* kFabrics = R"({"fabrics": [{"name": "f", "description": "d", "scope": "both",
  "nominal_gbps": 10, "achievable_gbps": 9, "latency_us": 30, "source": "fuzz harness"}]})";

void price_every_fabric(const dagsgd::model::HardwareCatalog& catalog) {
  using namespace dagsgd::model;
  for (const FabricSpec& f : catalog.fabrics()) {
    FUZZ_REQUIRE(f.latency >= 0 && f.latency < kMaxDuration);
    for (const auto& [nodes, gpus] : {std::pair{1, 2}, std::pair{4, 2}}) {
      Topology topo;
      topo.nodes = nodes;
      topo.gpus_per_node = gpus;
      topo.intra = LinkCost::from_fabric(f);
      topo.inter = LinkCost::from_fabric(f);
      for (const char* algorithm : {"auto", "rabenseifner", "ps", "hier"}) {
        ExchangeConfig config;
        config.algorithm = algorithm;
        auto model = make_comm_model(topo, config);
        if (!model.ok()) continue;
        for (std::int64_t elements :
             {std::int64_t{1}, std::int64_t{1} << 20, std::int64_t{250'000'000'000'000}}) {
          const Nanos t = (*model)->exchange_time(elements);
          FUZZ_REQUIRE(t >= 0 && t <= kMaxTimestamp);
          const CollectivePhases ph = (*model)->phases(elements);
          FUZZ_REQUIRE(ph.startup >= 0 && ph.body >= 0 && ph.tail >= 0);
          auto checked = (*model)->checked_exchange_time(elements);
          FUZZ_REQUIRE(checked.ok() == (t < kMaxDuration));
        }
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dagsgd::model;
  const std::string text = dagsgd::fuzz::text_of(data, size);
  static const HardwareCatalog base = *HardwareCatalog::parse(kGpus, "gpus", kFabrics, "fabrics");
  // As a --fabric-file (one entry, a list or a catalog object), then as the fabric catalog: the
  // same rows, so only the first is priced.
  HardwareCatalog with_file = base;
  const bool added = with_file.add_fabric_json(text, "fuzz").ok();
  if (added) price_every_fabric(with_file);
  auto as_fabrics = HardwareCatalog::parse(kGpus, "gpus", text, "fuzz");
  FUZZ_REQUIRE(as_fabrics.ok() == added);
  auto as_gpus = HardwareCatalog::parse(text, "fuzz", kFabrics, "fabrics");
  if (as_gpus.ok()) {
    for (const GpuSpec& g : as_gpus->gpus()) {
      FUZZ_REQUIRE(g.fp32_flops > 0 && g.fp16_flops > 0 && g.memory_bandwidth > 0);
    }
  }
  auto efficiency = parse_compute_efficiency(text, "fuzz");
  if (efficiency.ok()) FUZZ_REQUIRE(efficiency->fp32 > 0 && efficiency->fp16 <= 1);
  return 0;
}
