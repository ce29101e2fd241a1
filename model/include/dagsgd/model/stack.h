// Software stacks: what the collective library and the training framework do above the links
// (algorithm and protocol by size and rank count, per-message software cost, per-connection
// limits, gradient grouping and cycle delays), loaded from datasets/stacks/<name>.json with a
// source for every constant (docs/communication.md, "Software stacks").
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dagsgd/model/expected.h"
#include "dagsgd/model/registry.h"
#include "dagsgd/model/units.h"

namespace dagsgd::model {

// One row of an algorithm table: it applies below `ranks_below` ranks (0: any count) and below
// `bytes_below` bytes per rank (0: any size); the first row that applies wins.
struct AlgorithmRule {
  int ranks_below = 0;
  Bytes bytes_below = 0;
  std::string algorithm;  // a formula of model::comm_algorithm_names() (not "auto")
  bool operator==(const AlgorithmRule&) const = default;
};

// A protocol of a library that chooses one by cost (NCCL's LL, LL128, Simple).
struct StackProtocol {
  std::string name;
  // Software cost per message (a ring or tree step), added to the link's alpha.
  double per_message_intra_ns = 0;
  double per_message_inter_ns = 0;
  // Per collective, by algorithm (NCCL's baseLat); algorithms not listed: 0.
  std::vector<std::pair<std::string, double>> per_collective_ns;
  // Fraction of the link bandwidth the protocol reaches, by algorithm; an algorithm not listed
  // cannot use the protocol.
  std::vector<std::pair<std::string, double>> efficiency;
  // Tree only: NCCL's measured correction of the tree bandwidth for medium sizes, one factor per
  // power of two of the size from 64 B (factor k covers [64·2^k, 64·2^(k+1)) bytes); 1 above.
  std::vector<double> tree_correction;
  bool operator==(const StackProtocol&) const = default;
};

// The collective library.
struct LibrarySpec {
  std::string kind;  // "mpi" (algorithm tables) or "nccl" (algorithm and protocol by cost)
  std::string name;
  double per_message_ns = 0;     // software cost per message, added to every link's alpha
  double per_collective_ns = 0;  // once per collective
  double efficiency = 1;         // fraction of the link bandwidth reached (0, 1]
  // Between nodes: what one connection (a TCP stream, a socket) sustains, bytes/s, 0 = no cap;
  // `connections` of them run in parallel between two ranks (btl_tcp_links, NCCL channels).
  double connection_bandwidth = 0;
  int connections = 1;
  // What limits the library's bandwidth, and so what transfer calibration fits: "efficiency"
  // (a fraction of any link's rate) or "connection" (a rate per connection, whatever the link).
  std::string bandwidth_limit = "efficiency";
  // How transfers between one pair of ranks share their connection(s) on the flow-level tier:
  // "parallel" (each its max-min share) or "serial" (one at a time, whatever the direction: a
  // phase of a collective waits while another collective's transfer holds one of its rank
  // pairs; Open MPI's tcp BTL, one connection per peer progressed by each rank's one thread).
  std::string peer_transfers = "parallel";
  // Overrides of the link's eager/rendezvous step (eager_limit < 0: the link's own).
  Bytes eager_limit = -1;
  double rendezvous_ns = 0;
  // kind "mpi": the algorithm tables of the blocking call, the non-blocking one and the
  // non-blocking one in place.
  std::vector<AlgorithmRule> blocking;
  std::vector<AlgorithmRule> nonblocking;
  std::vector<AlgorithmRule> nonblocking_in_place;
  // kind "nccl": the algorithms and protocols it chooses among by cost, and the algorithms it
  // uses inside one node.
  std::vector<std::string> algorithms;
  std::vector<std::string> one_node_algorithms;
  std::vector<StackProtocol> protocols;
  bool operator==(const LibrarySpec&) const = default;
};

// What the training framework adds around the library.
struct FrameworkSpec {
  std::string name;
  // The call it makes: "allreduce" (blocking), "iallreduce", "iallreduce_in_place".
  std::string call = "allreduce";
  // How it groups gradients: an overlap policy ("wfbp", "bucket:25,1", "fusion:64,5"), or ""
  // to keep the scenario's.
  std::string grouping;
  double per_collective_ns = 0;  // bookkeeping per collective
  // A background thread that wakes every `cycle_ns`: a ready collective waits half a cycle on
  // average (0: none).
  double cycle_ns = 0;
  // A coordinator that gathers readiness from every rank and broadcasts the decision before each
  // collective (Horovod): two binomial trees of small messages.
  bool negotiation = false;
  // The gradients are copied to host memory and back around the library call, at this rate
  // (bytes/s, 0: no copies).
  double host_copy_bandwidth = 0;
  // Bytes per gradient element on the wire when the compute runs in fp16 (mixed precision keeps
  // fp32 gradients in some frameworks); 0: as the scenario's precision.
  int mixed_precision_gradient_bytes = 0;
  // GPU memory traffic per gradient element the framework adds around each bucket, on the
  // compute stream (docs/gpu-effects.md, "Framework copies"): bytes read and written copying
  // each gradient into its bucket's flat buffer as it becomes ready, and `copy_back_bytes`
  // copying the reduced bucket back into the gradients after the collectives (0: none).
  double copy_in_bytes = 0;
  double copy_back_bytes = 0;
  bool operator==(const FrameworkSpec&) const = default;
};

struct StackSpec {
  std::string name;
  std::string description;
  LibrarySpec library;
  std::optional<FrameworkSpec> framework;
  // Where each constant comes from, by its field ("library.per_message_us"), in file order.
  std::vector<std::pair<std::string, std::string>> sources;
  std::string path;  // the file it was read from ("" when built in code)
  // The source of `field`, or "".
  std::string source_of(const std::string& field) const;
  // Sets (or replaces) the source of `field`.
  void set_source(const std::string& field, const std::string& source);
};

// The stacks in datasets/stacks/ (file stems), sorted.
NameRegistry bundled_stacks();

// A bundled stack by name, a name of stack_names.h (a short name such as "pytorch-ddp", or
// FRAMEWORK+LIBRARY such as "pytorch-ddp+nccl-2.7-socket"), or a stack file (a path with '/' or
// ending in .json). A file may name a `base` stack and override its fields. Errors name the file
// and the field; an unknown name lists the valid ones.
Expected<StackSpec> load_stack(const std::string& name_or_path);
// The same from JSON text; `path` names the file in errors.
Expected<StackSpec> parse_stack_json(const std::string& text, const std::string& path);

// Checks the invariants a stack built in code must keep (what load_stack checks in a file).
Expected<void> validate_stack(const StackSpec& stack);

// The stack as a self-contained file (no base), loadable with load_stack.
std::string stack_to_json(const StackSpec& stack);

// The algorithm a table gives for `ranks` ranks and `bytes` per rank; "" when no row applies.
std::string rule_algorithm(const std::vector<AlgorithmRule>& rules, int ranks, double bytes);

// The algorithm table of the framework's call (blocking when there is no framework).
const std::vector<AlgorithmRule>& call_rules(const StackSpec& stack);

}  // namespace dagsgd::model
