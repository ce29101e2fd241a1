// Sharded data parallelism (ZeRO stages 1-3, PyTorch FSDP): what each level shards, the memory
// a GPU holds for it, and the closed form of FSDP's parameter all-gathers with prefetch
// (docs/communication.md, "Sharded data parallelism").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dagsgd/model/comm_model.h"
#include "dagsgd/model/expected.h"
#include "dagsgd/model/network.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// none: plain data parallelism (allreduce). zero1: optimizer state sharded; zero2: and
// gradients; zero3 and fsdp (FSDP's FULL_SHARD, the same plan): and parameters.
enum class Sharding { kNone, kZero1, kZero2, kZero3, kFsdp };
Expected<Sharding> parse_sharding(const std::string& name);
const char* sharding_name(Sharding s);
std::vector<std::string> sharding_names();
// Gradient buckets are reduce-scattered (not allreduced) and the optimizer steps on 1/N.
inline bool shards_optimizer(Sharding s) { return s != Sharding::kNone; }
inline bool shards_gradients(Sharding s) {
  return s == Sharding::kZero2 || s == Sharding::kZero3 || s == Sharding::kFsdp;
}
// Parameters are all-gathered before each unit's forward and backward.
inline bool shards_parameters(Sharding s) { return s == Sharding::kZero3 || s == Sharding::kFsdp; }

// Bytes per parameter of the model states, ZeRO paper (Rajbhandari et al. 2020, section 3.1)
// with Adam: mixed precision (fp16) keeps fp16 parameters (2) and gradients (2) and K = 12
// bytes of fp32 parameters, momentum and variance; fp32 training keeps 4 + 4 and K = 8.
struct StateBytes {
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;  // K
};
StateBytes adam_state_bytes(Precision precision);

// One GPU's memory in bytes. The model states as ZeRO's stages divide them over N workers
// (none: (2 + 2 + K)Ψ; zero1: 2Ψ + 2Ψ + KΨ/N; zero2: 2Ψ + (2 + K)Ψ/N; zero3: (2 + 2 + K)Ψ/N);
// under zero3/fsdp, `gathered` holds the full parameters of the units in flight (the one
// running and the one prefetched); activations as the network file gives them.
struct GpuMemory {
  double parameters = 0;
  double gradients = 0;
  double optimizer = 0;
  double gathered = 0;
  double activations = 0;
  double total() const { return parameters + gradients + optimizer + gathered + activations; }
};
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// "9.1 GiB (parameters 0.2, gradients 0.2, optimizer state 1.3, activations 7.4 GiB)", the
// parts that are not zero.
std::string memory_text(const GpuMemory& m);
// `params`: Ψ; `gathered_elements`: the parameters of the units in flight at once (zero3/fsdp);
// `activation_bytes`: what forward keeps for backward on one GPU.
GpuMemory gpu_memory(Sharding s, std::int64_t params, int workers, Precision precision,
                     std::int64_t gathered_elements, double activation_bytes);

// What forward keeps for backward on one GPU: every layer's output (Layer::activation_elements
// per sample) for `batch` samples, in the compute precision's bytes.
double activation_bytes(const Network& net, int batch, Precision precision);

// Parameter all-gathers of zero3/fsdp on their own stream, one unit ahead of compute
// (FSDP's forward_prefetch and BACKWARD_PRE, DeepSpeed's stage-3 prefetch): units in forward
// order with their forward and backward compute and the time of one all-gather of their
// parameters. Forward: the first gather starts with the iteration; gather u starts when gather
// u-1 has ended and unit u-1's forward has begun; unit u's forward starts when unit u-1's has
// ended and gather u has. Backward (units last to first): the same, starting from the end of
// forward. Returns, per unit, how long its forward and its backward wait for their gather.
struct GatherWaits {
  std::vector<Nanos> forward;
  std::vector<Nanos> backward;
  Nanos total() const;
};
GatherWaits gather_waits(const std::vector<Nanos>& forward, const std::vector<Nanos>& backward,
                         const std::vector<Nanos>& gather);

}  // namespace dagsgd::model
