// The trace event schema: Chrome Trace Event records in the Kineto layout, times in nanoseconds.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "dagsgd/model/units.h"

namespace dagsgd::trace {

// Kineto categories we write and read (the `cat` field).
namespace cat {
inline constexpr const char* kKernel = "kernel";
inline constexpr const char* kGpuMemcpy = "gpu_memcpy";
inline constexpr const char* kGpuMemset = "gpu_memset";
inline constexpr const char* kCudaRuntime = "cuda_runtime";
inline constexpr const char* kCudaDriver = "cuda_driver";
inline constexpr const char* kCudaSync = "cuda_sync";
inline constexpr const char* kUserAnnotation = "user_annotation";
inline constexpr const char* kGpuUserAnnotation = "gpu_user_annotation";
inline constexpr const char* kCpuOp = "cpu_op";
inline constexpr const char* kAc2g = "ac2g";
}  // namespace cat

// Our own fields in `args` (see docs/formats.md).
namespace arg {
inline constexpr const char* kLayer = "layer";
inline constexpr const char* kPhase = "phase";
inline constexpr const char* kIteration = "iteration";
inline constexpr const char* kBytes = "bytes";
inline constexpr const char* kCollective = "collective";
inline constexpr const char* kAlgorithm = "algorithm";
// PyTorch's names for a communication call's args (its `record_param_comms` events), which
// Holistic Trace Analysis parses by default (hta/configs/default_event_args.py:176-205,
// `nccl::collective_name`, `nccl::group_size`) and our reader takes as `collective`/`comm_size`.
inline constexpr const char* kCollectiveName = "Collective name";
inline constexpr const char* kGroupSize = "Group size";
}  // namespace arg

struct Event;
// Adds the PyTorch-style args of a communication call: `Collective name` (e.g. "allreduce") and,
// when `group_size` > 0, `Group size` (ranks in the call's communicator).
void add_comm_args(Event& e, const std::string& collective, std::int64_t group_size);

// The S-SGD phase a span belongs to (DESIGN.md, "The S-SGD DAG model").
enum class Phase : std::uint8_t { kNone, kIo, kH2D, kForward, kBackward, kComm, kUpdate };
const char* phase_name(Phase p);
// Returns kNone for unknown names.
Phase phase_from_name(const std::string& name);

using ArgValue = std::variant<std::int64_t, double, std::string>;

struct Arg {
  std::string key;
  ArgValue value;
};

struct Event {
  std::string name;
  std::string cat;
  char ph = 'X';         // 'X' complete, 'i' instant, 's'/'f' flow, 'M' metadata, 'C' counter
  model::Nanos ts = 0;   // since the trace's time base
  model::Nanos dur = 0;  // for 'X'
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::int64_t id = -1;  // flow id for 's'/'f' (e.g. the CUPTI correlation id); -1 = none
  std::vector<Arg> args;

  Event& add(std::string key, ArgValue value) {
    args.push_back(Arg{std::move(key), std::move(value)});
    return *this;
  }
  const ArgValue* find(const std::string& key) const {
    for (const auto& a : args) {
      if (a.key == key) return &a.value;
    }
    return nullptr;
  }
};

}  // namespace dagsgd::trace
