// The collective vocabulary (collective.h).
#include "dagsgd/trace/collective.h"

#include <algorithm>
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
  std::string f = folded(name);
  // PyTorch's variants of one collective: "_allgather_base", "allgather_into_tensor_coalesced",
  // "reduce_scatter_tensor_coalesced", "all_to_allv" (per-rank sizes: the whole still moves).
  for (std::string_view suffix : {"intotensorcoalesced", "tensorcoalesced", "coalesced", "base"}) {
    if (f.size() > suffix.size() &&
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0) {
      f.resize(f.size() - suffix.size());
      break;
    }
  }
  if (f == "alltoallv" || f == "allgatherv" || f == "reducescatterv") f.pop_back();
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

std::vector<int> parse_group_ranks(std::string_view text) {
  constexpr long kMaxRank = 1 << 20;
  std::vector<int> ranks;
  std::size_t i = 0;
  auto skip_space = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
  };
  skip_space();
  if (i == text.size() || text[i] != '[') return {};
  ++i;
  skip_space();
  if (i < text.size() && text[i] == ']') return {};
  while (i < text.size()) {
    skip_space();
    long r = 0;
    const std::size_t first = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && r < kMaxRank) {
      r = r * 10 + (text[i++] - '0');
    }
    if (i == first || r >= kMaxRank) return {};
    ranks.push_back(static_cast<int>(r));
    skip_space();
    if (i < text.size() && text[i] == ',') {
      ++i;
    } else if (i < text.size() && text[i] == ']') {
      std::vector<int> sorted = ranks;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return {};
      return ranks;
    } else {
      return {};
    }
  }
  return {};
}

const char* collective_name(CollectiveKind kind) {
  // In the order of the enum.
  static constexpr const char* kNames[] = {
      "", "allreduce", "broadcast", "allgather", "reduce_scatter", "reduce", "alltoall", "barrier"};
  const auto i = static_cast<std::size_t>(kind);
  return i < std::size(kNames) ? kNames[i] : "";
}

bool leaves_together(CollectiveKind kind) {
  return kind != CollectiveKind::kNone && kind != CollectiveKind::kReduce;
}

}  // namespace dagsgd::trace
