// Sharded data parallelism: levels, memory per GPU (the ZeRO paper's formulas) and the
// prefetched parameter all-gathers of ZeRO-3 / FSDP in closed form.
#include "dagsgd/model/sharding.h"

#include <algorithm>
#include <utility>

#include "dagsgd/model/check.h"
#include "dagsgd/model/format.h"
#include "dagsgd/model/registry.h"

namespace dagsgd::model {
namespace {

constexpr std::pair<Sharding, const char*> kShardingNames[] = {
    {Sharding::kNone, "none"},   {Sharding::kZero1, "zero1"}, {Sharding::kZero2, "zero2"},
    {Sharding::kZero3, "zero3"}, {Sharding::kFsdp, "fsdp"},
};

}  // namespace

std::vector<std::string> sharding_names() {
  std::vector<std::string> out;
  for (const auto& [s, name] : kShardingNames) out.emplace_back(name);
  return out;
}

Expected<Sharding> parse_sharding(const std::string& name) {
  for (const auto& [s, n] : kShardingNames) {
    if (name == n) return s;
  }
  return NameRegistry("sharding level", sharding_names()).check(name).error();
}

const char* sharding_name(Sharding s) {
  for (const auto& [level, name] : kShardingNames) {
    if (level == s) return name;
  }
  DAGSGD_CHECK(false);  // every enumerator has a name
  return "";
}

StateBytes adam_state_bytes(Precision precision) {
  if (precision == Precision::kFp16) return {2, 2, 12};
  return {4, 4, 8};
}

GpuMemory gpu_memory(Sharding s, std::int64_t params, int workers, Precision precision,
                     std::int64_t gathered_elements, double activation_bytes) {
  const StateBytes b = adam_state_bytes(precision);
  const double psi = static_cast<double>(params);
  const double n = std::max(workers, 1);
  GpuMemory m;
  m.parameters = b.parameters * psi / (shards_parameters(s) ? n : 1);
  m.gradients = b.gradients * psi / (shards_gradients(s) ? n : 1);
  m.optimizer = b.optimizer * psi / (shards_optimizer(s) ? n : 1);
  if (shards_parameters(s) && workers > 1) {
    m.gathered = b.parameters * static_cast<double>(gathered_elements);
  }
  m.activations = activation_bytes;
  return m;
}

std::string memory_text(const GpuMemory& m) {
  std::string parts;
  for (auto [name, bytes] : {std::pair{"parameters", m.parameters},
                             {"gradients", m.gradients},
                             {"optimizer state", m.optimizer},
                             {"gathered units", m.gathered},
                             {"activations", m.activations}}) {
    if (bytes <= 0) continue;
    parts += (parts.empty() ? "" : ", ") + std::string(name) + " " + fmt("%.2f", bytes / kGiB);
  }
  return fmt("%.2f GiB", m.total() / kGiB) + (parts.empty() ? "" : " (" + parts + " GiB)");
}

double activation_bytes(const Network& net, int batch, Precision precision) {
  double elements = 0;
  for (const auto& l : net.layers) elements += static_cast<double>(l.activation_elements);
  return elements * batch * bytes_per_element(precision);
}

Nanos GatherWaits::total() const {
  Nanos t = 0;
  for (Nanos w : forward) t += w;
  for (Nanos w : backward) t += w;
  return t;
}

namespace {

// One pass (forward, or backward with the units reversed) of compute `run` behind gathers
// `gather` one unit ahead; the waits of each unit, in the order given.
std::vector<Nanos> prefetched_pass(const std::vector<Nanos>& run,
                                   const std::vector<Nanos>& gather) {
  std::vector<Nanos> wait(run.size(), 0);
  Nanos gather_end = 0;     // of the previous unit's gather
  Nanos compute_end = 0;    // of the previous unit's compute
  Nanos compute_start = 0;  // of the previous unit's compute: when the next gather may start
  for (std::size_t u = 0; u < run.size(); ++u) {
    gather_end = std::max(gather_end, compute_start) + gather[u];
    const Nanos start = std::max(compute_end, gather_end);
    wait[u] = start - compute_end;
    compute_start = start;
    compute_end = start + run[u];
  }
  return wait;
}

}  // namespace

GatherWaits gather_waits(const std::vector<Nanos>& forward, const std::vector<Nanos>& backward,
                         const std::vector<Nanos>& gather) {
  DAGSGD_CHECK(forward.size() == gather.size() && backward.size() == gather.size());
  GatherWaits w;
  w.forward = prefetched_pass(forward, gather);
  std::vector<Nanos> b(backward.rbegin(), backward.rend());
  std::vector<Nanos> g(gather.rbegin(), gather.rend());
  w.backward = prefetched_pass(b, g);
  std::reverse(w.backward.begin(), w.backward.end());
  return w;
}

}  // namespace dagsgd::model
