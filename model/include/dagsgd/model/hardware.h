// Hardware catalogs: GPUs and interconnects, loaded from datasets/hardware/ with a source per row.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

struct GpuSpec {
  std::string name;             // "v100"
  std::string description;      // "NVIDIA Tesla V100 SXM2 32 GB"
  double fp32_flops = 0;        // peak FP32, FLOP/s
  double fp16_flops = 0;        // peak FP16/BF16 dense tensor, FLOP/s
  double memory_bandwidth = 0;  // bytes/s
  double memory_bytes = 0;      // device memory capacity; 0: not given (not checked)
  // A CPU node as one worker ("device": "cpu"): the GPU-side effects around the wire
  // (docs/gpu-effects.md) do not apply to it.
  bool cpu = false;
  std::string source;
};

// Measured allreduce latencies of one rank count on a fabric (`dagsgd calibrate` keeps its log's
// points): what the MPI or NCCL library really does there, which the comm model uses in place of
// its formula for collectives of that rank count (comm_model.h, docs/communication.md).
struct MeasuredAllreduce {
  int ranks = 0;  // p, at least 2
  // (bytes per rank, latency of the average rank), increasing sizes.
  std::vector<std::pair<Bytes, Nanos>> points;
  // Per point, the slowest rank's latency (its result arrives last), when the benchmark
  // reports it; empty otherwise.
  std::vector<Nanos> slowest;
  // Per point, the fastest rank's latency (under a rooted algorithm, the root's: done when its
  // broadcast is handed to the transport, while the others still receive it); empty if not
  // reported.
  std::vector<Nanos> fastest;
  // The allreduce algorithm the library ran for these points (a row of collective_algorithms(),
  // what `dagsgd calibrate --algorithm` fitted): beyond the largest size the time grows as its
  // formula does. "" (the default, and what a ring fit writes): as the formula `auto` picks.
  std::string algorithm;
  bool operator==(const MeasuredAllreduce&) const = default;
};

struct FabricSpec {
  std::string name;  // "10gbe", "nvlink2", "ib-edr", ...
  std::string description;
  std::string scope;                // "intra" (inside a node), "inter" (between nodes), or "both"
  double nominal_bandwidth = 0;     // bytes/s, per GPU (intra) or per NIC (inter), one direction
  double achievable_bandwidth = 0;  // bytes/s a collective can actually sustain
  Nanos latency = 0;                // per message startup (alpha)
  Bytes eager_limit = 0;            // messages above this use the rendezvous protocol (0: none)
  Nanos rendezvous_latency = 0;     // extra startup above eager_limit
  // A token-bucket shaper's allowance: after the link has idled long enough to refill it (at
  // the link's rate), this many bytes pass without waiting for the rate (0: none, every real
  // link of a data sheet). Priced by the flow tier and by stack calibration
  // (docs/communication.md).
  Bytes burst_bytes = 0;
  std::vector<MeasuredAllreduce> measured_allreduce;  // optional, one per rank count
  std::string source;
};

class HardwareCatalog {
 public:
  // datasets/hardware/gpus.json and datasets/hardware/fabrics.json.
  static Expected<HardwareCatalog> load_default();
  static Expected<HardwareCatalog> load(const std::string& gpus_path,
                                        const std::string& fabrics_path);
  // The same from texts already in memory; `*_where` name them in errors.
  static Expected<HardwareCatalog> parse(const std::string& gpus_json,
                                         const std::string& gpus_where,
                                         const std::string& fabrics_json,
                                         const std::string& fabrics_where);
  // Adds (or replaces, by name) fabrics from a user file of the same schema, e.g. the output of
  // `dagsgd calibrate`. Every number is checked against its range (docs/limits.md).
  Expected<void> add_fabric_file(const std::string& path);
  Expected<void> add_fabric_json(const std::string& text, const std::string& where);

  // Unknown names give an error that lists the valid ones.
  Expected<GpuSpec> gpu(const std::string& name) const;
  Expected<FabricSpec> fabric(const std::string& name) const;
  // The valid names, sorted, for checks and listings.
  NameRegistry gpu_names() const;
  NameRegistry fabric_names() const;
  const std::vector<GpuSpec>& gpus() const { return gpus_; }
  const std::vector<FabricSpec>& fabrics() const { return fabrics_; }

 private:
  std::vector<GpuSpec> gpus_;
  std::vector<FabricSpec> fabrics_;
};

// The fabric `name` of the bundled catalog with the fabrics of `fabric_files` added (one of theirs
// replaces a bundled fabric of the same name).
Expected<FabricSpec> find_fabric(const std::string& name,
                                 const std::vector<std::string>& fabric_files);

// One fabric as a JSON object in the catalog's file schema (human units: Gbit/s, microseconds),
// so that what `dagsgd calibrate` writes loads back through add_fabric_file.
std::string fabric_to_json(const FabricSpec& f);

// The rate that concurrent transfers share on a link of this fabric (the flow-level tier): its
// achievable bandwidth, or for a calibrated entry (one with measured allreduce latencies) its
// line rate when higher: there the achievable bandwidth is one collective's, fitted under the
// ring formula with the library's algorithm and costs inside, and the curves price collectives.
double link_capacity(const FabricSpec& f);

}  // namespace dagsgd::model
