// The collective vocabulary (collective.h).
#include "dagsgd/trace/collective.h"

#include <cctype>
#include <iterator>

namespace dagsgd::trace {

namespace {

// Lower case without '_' so that "reduce_scatter", "ReduceScatter" and "reducescatter" match.
std::string folded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '_') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

CollectiveKind classify_collective(std::string_view name) {
  const std::string f = folded(name);
  if (f == "allreduce") return CollectiveKind::kAllreduce;
  if (f == "broadcast" || f == "bcast") return CollectiveKind::kBroadcast;
  if (f == "allgather") return CollectiveKind::kAllgather;
  if (f == "reducescatter") return CollectiveKind::kReduceScatter;
  if (f == "reduce") return CollectiveKind::kReduce;
  if (f == "alltoall") return CollectiveKind::kAlltoall;
  if (f == "barrier") return CollectiveKind::kBarrier;
  return CollectiveKind::kNone;
}

bool is_nccl_kernel(std::string_view kernel_name) {
  return kernel_name.find("nccl") != std::string_view::npos;
}

CollectiveKind nccl_kernel_collective(std::string_view kernel_name) {
  if (!is_nccl_kernel(kernel_name)) return CollectiveKind::kNone;
  // ncclKernel_<Collective>_<ALGO>_<PROTO>_... or ncclDevKernel_<Collective>_<ALGO>(...)
  const auto us = kernel_name.find('_');
  if (us == std::string_view::npos) return CollectiveKind::kNone;
  const auto end = kernel_name.find_first_of("_(", us + 1);
  return classify_collective(kernel_name.substr(
      us + 1, end == std::string_view::npos ? std::string_view::npos : end - us - 1));
}

std::string nccl_kernel_algorithm(std::string_view kernel_name) {
  if (!is_nccl_kernel(kernel_name)) return "";
  if (kernel_name.find("_RING_") != std::string_view::npos) return "ring";
  if (kernel_name.find("_TREE_") != std::string_view::npos) return "tree";
  return "";
}

const char* collective_name(CollectiveKind kind) {
  // In the order of the enum.
  static constexpr const char* kNames[] = {
      "", "allreduce", "broadcast", "allgather", "reduce_scatter", "reduce", "alltoall", "barrier"};
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "";
}

bool is_modelable(CollectiveKind kind) {
  return kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kBroadcast ||
         kind == CollectiveKind::kAllgather || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kReduce;
}

double traffic_factor(CollectiveKind kind) {
  return kind == CollectiveKind::kAllreduce ? 1.0 : 0.5;
}

bool leaves_together(CollectiveKind kind) {
  return kind != CollectiveKind::kNone && kind != CollectiveKind::kReduce;
}

}  // namespace dagsgd::trace
