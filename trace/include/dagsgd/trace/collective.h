// The collective vocabulary every trace consumer shares (importer, DAG builder, replay): which
// names in a trace are collectives, what each moves, and what NCCL's kernel names say.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dagsgd::trace {

enum class CollectiveKind : std::uint8_t {
  kNone,  // not a collective
  kAllreduce,
  kBroadcast,
  kAllgather,
  kReduceScatter,
  kReduce,
  kAlltoall,
  kBarrier,
};

// From a name as traces spell it: our args.collective and PMPI spans ("allreduce", "bcast"),
// NCCL's "Collective name" arg ("allreduce", "reduce_scatter"), kernel spellings ("AllReduce",
// "ReduceScatter", "AllGather"), PyTorch's variants ("_allgather_base", "all_to_allv",
// "reduce_scatter_tensor_coalesced"). Case and '_' do not matter; anything else is kNone.
CollectiveKind classify_collective(std::string_view name);

// The collective an NCCL kernel runs, from its name (ncclKernel_AllReduce_RING_LL_Sum_float,
// ncclDevKernel_Broadcast_RING_LL(...)); kNone when the name is not an NCCL collective kernel.
CollectiveKind nccl_kernel_collective(std::string_view kernel_name);
// The algorithm an NCCL kernel name carries: "ring", "tree", or "" when it says none.
std::string nccl_kernel_algorithm(std::string_view kernel_name);
// Whether a kernel name is NCCL's (communication kernels of every kind, p2p included).
bool is_nccl_kernel(std::string_view kernel_name);

// The ranks of a process group as traces write them ("[0, 1, 2, 3]", as a string or an array);
// empty when the text is not a list of ranks in [0, 2^20).
std::vector<int> parse_group_ranks(std::string_view text);

// The canonical name: "allreduce", "broadcast", "allgather", "reduce_scatter", "reduce",
// "alltoall", "barrier" ("" for kNone).
const char* collective_name(CollectiveKind kind);

// Whether every rank leaves it at about the same time (so its ends can align clocks): not a
// reduce, whose non-root ranks leave as soon as they have sent.
bool leaves_together(CollectiveKind kind);

}  // namespace dagsgd::trace
