// The table of collective algorithms (house style: NCCL's tuning.cc): one row per collective and
// algorithm with its alpha-beta-gamma plan, the point-to-point transfers the flow tier runs for
// each plan phase, how many transfers those are, and its source. Adding an algorithm touches this
// file only: its three functions and its row. Notation: p workers, M bytes (the whole vector,
// CollectiveOp's convention), alpha per message, beta per byte on the wire, gamma per byte reduced,
// lg = log2.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "collective_patterns.h"
#include "collective_plan.h"
#include "dagsgd/model/check.h"
#include "dagsgd/model/registry.h"

namespace dagsgd::model::detail {
namespace {

PhaseTransfers plain(std::vector<Transfer> t, double share = 1) {
  return PhaseTransfers{{std::move(t)}, share};
}

// Transfer counts (CountFn): per plan phase, a ring over the p workers, every ordered pair of
// them, or once around them.
double ring_count(const Plan& plan, const Shape& s) {
  const double p = s.workers();
  return p < 2 ? 0 : static_cast<double>(plan.size()) * p;
}
double all_pairs_count(const Plan& plan, const Shape& s) {
  const double p = s.workers();
  return static_cast<double>(plan.size()) * p * (p - 1);
}
// A chain from the root, binomial trees and a double binary tree reach each other rank once.
double each_other_rank(const Shape& s) { return s.workers() - 1.0; }

// Ring (reduce-scatter then allgather, p-1 steps each of M/p):
//   2(p-1)·α + 2(p-1)/p·M·β + (p-1)/p·M·γ
void ring_over(Plan& plan, LinkClass link, int p, double m) {
  const double steps = p - 1;
  plan.push_back({link, steps, m / p, steps / p * m, steps / p * m});  // reduce-scatter
  plan.push_back({link, steps, m / p, steps / p * m, 0});              // allgather
}
void ring(Plan& plan, const Shape& s, double m) { ring_over(plan, flat_link(s), s.workers(), m); }

// Double binary tree (NCCL >= 2.4), pipelined: two trees each carry M/2; every rank is inner in
// one tree and a leaf in the other, so it sends and receives M per phase. Reduce up, then
// broadcast down, each lg p deep (d = ceil(lg p)):
//   2d·α + 2M·β + M·γ
void tree(Plan& plan, const Shape& s, double m) {
  const double depth = ceil_log2(s.workers());
  plan.push_back({flat_link(s), depth, m / 2, m, m});  // reduce
  plan.push_back({flat_link(s), depth, m / 2, m, 0});  // broadcast
}

// NCCL-style trees: a double binary tree over the nodes' first ranks, and each node's ranks in
// a chain to its first one (both trees use the chain, each with half the data).
std::vector<Transfer> tree_phase(const Patterns& pat, bool up) {
  const auto nodes = pat.by_node();
  std::vector<Transfer> t;
  if (nodes.size() == 1) return pat.double_tree(nodes.front(), up);
  std::vector<int> leaders;
  leaders.reserve(nodes.size());
  for (const auto& n : nodes) leaders.push_back(n.front());
  t = pat.double_tree(leaders, up);
  for (const auto& n : nodes) {
    for (std::size_t k = 1; k < n.size(); ++k) {
      for (int tree = 0; tree < 2; ++tree) {
        t.push_back(up ? pat.pair(n[k], n[k - 1]) : pat.pair(n[k - 1], n[k]));
      }
    }
  }
  return t;
}
std::vector<PhaseTransfers> tree_transfers(const Plan& /*plan*/, const Patterns& pat,
                                           const Shape& /*shape*/) {
  return {plain(tree_phase(pat, true), 0.5), plain(tree_phase(pat, false), 0.5)};
}
// Up and down, each two trees reaching every rank but the root once (the leaders' double tree
// plus each node's chains, twice).
double tree_count(const Plan& /*plan*/, const Shape& s) { return 4 * each_other_rank(s); }

std::vector<PhaseTransfers> ring_transfers(const Plan& plan, const Patterns& pat,
                                           const Shape& /*shape*/) {
  return std::vector<PhaseTransfers>(plan.size(), plain(pat.ring(pat.all())));
}

// Non-power-of-two p (MPICH): the r = p - p' extra ranks (p' = 2^floor(lg p)) first fold
// their vector into a partner (α + Mβ + Mγ) and get the result back at the end (α + Mβ).
void fold_in(Plan& plan, LinkClass link, int p, double m) {
  if (p != (1 << floor_log2(p))) plan.push_back({link, 1, m, m, m});
}
void fold_out(Plan& plan, LinkClass link, int p, double m) {
  if (p != (1 << floor_log2(p))) plan.push_back({link, 1, m, m, 0});
}

// Recursive doubling: lg p' exchanges of the whole vector:
//   lg p'·(α + M·β + M·γ)  [+ fold-in/out when p is not a power of two]
void recursive_doubling(Plan& plan, const Shape& s, double m) {
  const LinkClass link = flat_link(s);
  const int p = s.workers();
  fold_in(plan, link, p, m);
  const double steps = floor_log2(p);
  plan.push_back({link, steps, m, steps * m, steps * m});
  fold_out(plan, link, p, m);
}

// The exchanges among the largest power of two p' <= p ranks (`body`), with the extra ranks'
// fold-in before and fold-out after when p is not a power of two (fold_in, fold_out).
template <typename Body>
std::vector<PhaseTransfers> folded(const Patterns& pat, const Shape& s, Body body) {
  const int p = s.workers();
  const int p2 = 1 << floor_log2(p);
  std::vector<PhaseTransfers> out;
  if (p != p2) out.push_back(plain(pat.fold(p2, true)));
  body(out, p2);
  if (p != p2) out.push_back(plain(pat.fold(p2, false)));
  return out;
}
// The fold-in and fold-out of the extra ranks, and `per_level` exchanges of the p' ranks per
// level of lg p'.
double folded_count(const Shape& s, int per_level) {
  const int p = s.workers();
  const int p2 = 1 << floor_log2(p);
  return 2.0 * (p - p2) + static_cast<double>(per_level) * p2 * floor_log2(p);
}

std::vector<PhaseTransfers> recursive_doubling_transfers(const Plan& /*plan*/, const Patterns& pat,
                                                         const Shape& s) {
  return folded(pat, s, [&](std::vector<PhaseTransfers>& out, int p2) {
    PhaseTransfers steps;
    for (int d = 1; d < p2; d *= 2) steps.steps.push_back(pat.exchange(p2, d));
    out.push_back(std::move(steps));
  });
}
double recursive_doubling_count(const Plan& /*plan*/, const Shape& s) { return folded_count(s, 1); }

// Rabenseifner: reduce-scatter by recursive halving (M/2, M/4, ... M/p'), allgather by
// recursive doubling (M/p', ..., M/2):
//   2·lg p'·α + 2(p'-1)/p'·M·β + (p'-1)/p'·M·γ  [+ fold-in/out]
void rabenseifner(Plan& plan, const Shape& s, double m) {
  const LinkClass link = flat_link(s);
  const int p = s.workers();
  const int levels = floor_log2(p);
  fold_in(plan, link, p, m);
  for (int k = 1; k <= levels; ++k) {
    const double chunk = m / (1 << k);
    plan.push_back({link, 1, chunk, chunk, chunk});
  }
  for (int k = levels; k >= 1; --k) {
    const double chunk = m / (1 << k);
    plan.push_back({link, 1, chunk, chunk, 0});
  }
  fold_out(plan, link, p, m);
}

std::vector<PhaseTransfers> rabenseifner_transfers(const Plan& /*plan*/, const Patterns& pat,
                                                   const Shape& s) {
  return folded(pat, s, [&](std::vector<PhaseTransfers>& out, int p2) {
    for (int d = p2 / 2; d >= 1; d /= 2) out.push_back(plain(pat.exchange(p2, d)));  // halving
    for (int d = 1; d < p2; d *= 2) out.push_back(plain(pat.exchange(p2, d)));       // doubling
  });
}
double rabenseifner_count(const Plan& /*plan*/, const Shape& s) { return folded_count(s, 2); }

// Binomial reduce then binomial broadcast (Open MPI libnbc's allred_sched_diss, what
// MPI_Iallreduce runs in place, and below 4 ranks or 64 KiB): d = ceil(lg p) rounds toward
// the root, each a whole vector received and summed, then d rounds away from it, the root
// sending the whole vector in each:
//   2d·α + 2d·M·β + d·M·γ        (p = 2: 2α + 2Mβ + Mγ, twice the ring's bytes)
void binomial(Plan& plan, const Shape& s, double m) {
  const LinkClass link = flat_link(s);
  const double depth = ceil_log2(s.workers());
  plan.push_back({link, depth, m, depth * m, depth * m});  // reduce
  plan.push_back({link, depth, m, depth * m, 0});          // broadcast
}

// libnbc's allred_sched_diss: virtual rank v (the position) sends to v - 2^(r-1) in reduce
// round r when v % 2^r == 2^(r-1); then in broadcast round r every v < 2^r sends to v + 2^r.
// The same trees serve a binomial reduce and broadcast alone (Open MPI's tuned binomial).
PhaseTransfers binomial_reduce_steps(const Patterns& pat, int p) {
  PhaseTransfers reduce;
  for (int r = 1; r <= ceil_log2(p); ++r) {
    std::vector<Transfer> t;
    for (int v = 0; v < p; ++v) {
      if (v % (1 << r) == (1 << (r - 1))) t.push_back(pat.pair(v, v - (1 << (r - 1))));
    }
    reduce.steps.push_back(std::move(t));
  }
  return reduce;
}
PhaseTransfers binomial_broadcast_steps(const Patterns& pat, int p) {
  PhaseTransfers bcast;
  for (int r = 0; r < ceil_log2(p); ++r) {
    std::vector<Transfer> t;
    for (int v = 0; v < (1 << r) && v + (1 << r) < p; ++v) t.push_back(pat.pair(v, v + (1 << r)));
    bcast.steps.push_back(std::move(t));
  }
  return bcast;
}
std::vector<PhaseTransfers> binomial_transfers(const Plan& /*plan*/, const Patterns& pat,
                                               const Shape& s) {
  return {binomial_reduce_steps(pat, s.workers()), binomial_broadcast_steps(pat, s.workers())};
}
double binomial_count(const Plan& /*plan*/, const Shape& s) { return 2 * each_other_rank(s); }

// Sharded parameter server: push shards, servers sum, pull shards.
// Colocated (one shard on every worker, s = 0): each worker sends its p-1 foreign shards and
// serves one, the same volume as the ring:
//   2(p-1)·α + 2(p-1)/p·M·β + (p-1)/p·M·γ
// s dedicated servers (always across the inter-node link): a worker's link carries M, a
// server's p·M/s, and the busiest endpoint handles max(s, p) messages per direction:
//   2·max(s,p)·α + 2·max(M, p·M/s)·β + (p-1)·M/s·γ
void ps(Plan& plan, const Shape& s, double m) {
  const int p = s.workers();
  if (s.ps_servers == 0) {
    const LinkClass link = flat_link(s);
    plan.push_back({link, p - 1.0, m / p, (p - 1.0) / p * m, (p - 1.0) / p * m});  // push
    plan.push_back({link, p - 1.0, m / p, (p - 1.0) / p * m, 0});                  // pull
    return;
  }
  const double servers = s.ps_servers;
  const double messages = std::max(servers, static_cast<double>(p));
  const double wire = std::max(m, p * m / servers);
  plan.push_back({LinkClass::kInter, messages, m / servers, wire, (p - 1) * m / servers});
  plan.push_back({LinkClass::kInter, messages, m / servers, wire, 0});
}

// Dedicated servers are not GPUs: their phases stay analytical (no transfers).
std::vector<PhaseTransfers> ps_transfers(const Plan& plan, const Patterns& pat, const Shape& s) {
  if (s.ps_servers > 0) return std::vector<PhaseTransfers>(plan.size());
  return std::vector<PhaseTransfers>(plan.size(), plain(pat.all_pairs(), 1.0 / (s.workers() - 1)));
}
double ps_count(const Plan& plan, const Shape& s) {
  return s.ps_servers > 0 ? 0 : all_pairs_count(plan, s);
}

// Alltoall-sum-allgather (Theano-MPI): each worker sends chunk j to worker j (pairwise, p-1
// steps of M/p), sums the p chunks it owns, and allgathers the sums:
//   2(p-1)·α + 2(p-1)/p·M·β + (p-1)/p·M·γ
// Equal to the ring on a non-blocking full-duplex fabric; they differ under contention (the
// flow-level tier), not here.
void asa(Plan& plan, const Shape& s, double m) {
  const LinkClass link = flat_link(s);
  const int p = s.workers();
  plan.push_back({link, p - 1.0, m / p, (p - 1.0) / p * m, 0});  // alltoall
  plan.push_back({link, 0, 0, 0, (p - 1.0) / p * m});            // sum
  plan.push_back({link, p - 1.0, m / p, (p - 1.0) / p * m, 0});  // allgather
}

std::vector<PhaseTransfers> asa_transfers(const Plan& /*plan*/, const Patterns& pat,
                                          const Shape& s) {
  const double share = 1.0 / (s.workers() - 1);
  return {plain(pat.all_pairs(), share),   // alltoall
          PhaseTransfers{},                // the sum: computation only
          plain(pat.all_pairs(), share)};  // allgather
}
double asa_count(const Plan& /*plan*/, const Shape& s) {
  const double p = s.workers();
  return 2 * p * (p - 1);  // the alltoall and the allgather
}

// Hierarchical, n nodes of g workers: intra-node reduce-scatter (ring, g), inter-node ring
// allreduce of each worker's M/g shard among the n nodes (the g shards' rings run in parallel
// and share the node's NIC, which so carries M), intra-node allgather:
//   intra: 2(g-1)·α_i + 2(g-1)/g·M·β_i + (g-1)/g·M·γ_i
//   inter: 2(n-1)·α_e + 2(n-1)/n·M·β_e + (n-1)/n·(M/g)·γ_e
void hier(Plan& plan, const Shape& s, double m) {
  const int n = s.nodes;
  const int g = s.gpus_per_node;
  if (n == 1) return ring_over(plan, LinkClass::kIntra, g, m);
  if (g == 1) return ring_over(plan, LinkClass::kInter, n, m);
  plan.push_back({LinkClass::kIntra, g - 1.0, m / g, (g - 1.0) / g * m, (g - 1.0) / g * m});
  plan.push_back(
      {LinkClass::kInter, 2.0 * (n - 1), m / g / n, 2.0 * (n - 1) / n * m, (n - 1.0) / n * m / g});
  plan.push_back({LinkClass::kIntra, g - 1.0, m / g, (g - 1.0) / g * m, 0});
}

std::vector<PhaseTransfers> hier_transfers(const Plan& plan, const Patterns& pat, const Shape& s) {
  const auto nodes = pat.by_node();
  const std::size_t g = nodes.front().size();
  if (nodes.size() == 1 || g == 1) return ring_transfers(plan, pat, s);
  std::vector<Transfer> intra;
  for (const auto& n : nodes) {
    auto r = pat.ring(n);
    intra.insert(intra.end(), r.begin(), r.end());
  }
  std::vector<Transfer> inter;
  for (std::size_t k = 0; k < g; ++k) {
    std::vector<int> shard;
    shard.reserve(nodes.size());
    for (const auto& n : nodes) shard.push_back(n[std::min(k, n.size() - 1)]);
    auto r = pat.ring(shard);
    inter.insert(inter.end(), r.begin(), r.end());
  }
  return {plain(intra), plain(inter, 1.0 / static_cast<double>(g)), plain(intra)};
}
// A ring inside every node, twice, and one ring across the nodes per local GPU: 3p.
double hier_count(const Plan& plan, const Shape& s) {
  if (s.nodes == 1 || s.gpus_per_node == 1) return ring_count(plan, s);
  return 3.0 * s.workers();
}

// Ring all-gather, the ring's second half alone: p-1 steps, each rank passing on a chunk of c
// bytes (c = M/p):  (p-1)·α + (p-1)·c·β
void allgather_chunks(Plan& plan, const Shape& s, double chunk) {
  const double steps = s.workers() - 1;
  plan.push_back({flat_link(s), steps, chunk, steps * chunk, 0});
}
void ring_allgather(Plan& plan, const Shape& s, double m) {
  const double steps = s.workers() - 1;
  plan.push_back({flat_link(s), steps, m / s.workers(), steps / s.workers() * m, 0});
}

// Ring reduce-scatter, the ring's first half alone:  (p-1)·α + (p-1)/p·M·β + (p-1)/p·M·γ
void ring_reduce_scatter(Plan& plan, const Shape& s, double m) {
  const double steps = s.workers() - 1;
  plan.push_back(
      {flat_link(s), steps, m / s.workers(), steps / s.workers() * m, steps / s.workers() * m});
}

// Pairwise all-to-all (NCCL's and Open MPI's for large messages): every rank sends M/p to each
// of the p-1 others, all in flight together on a non-blocking fabric:
//   (p-1)·α + (p-1)/p·M·β
void pairwise_alltoall(Plan& plan, const Shape& s, double m) {
  const double steps = s.workers() - 1;
  plan.push_back({flat_link(s), steps, m / s.workers(), steps / s.workers() * m, 0});
}
std::vector<PhaseTransfers> all_pairs_transfers(const Plan& plan, const Patterns& pat,
                                                const Shape& s) {
  return std::vector<PhaseTransfers>(plan.size(), plain(pat.all_pairs(), 1.0 / (s.workers() - 1)));
}

// Pipelined chain from the root (NCCL's ring broadcast and reduce): chunks stream along the
// p-1 edges of the ring at once, so each link carries M once:
//   broadcast (p-1)·α + M·β;  reduce (p-1)·α + M·β + M·γ
void chain_broadcast(Plan& plan, const Shape& s, double m) {
  plan.push_back({flat_link(s), s.workers() - 1.0, m, m, 0});
}
void chain_reduce(Plan& plan, const Shape& s, double m) {
  plan.push_back({flat_link(s), s.workers() - 1.0, m, m, m});
}
std::vector<PhaseTransfers> chain_transfers(const Plan& /*plan*/, const Patterns& pat,
                                            const Shape& s) {
  std::vector<Transfer> t;
  for (int v = 0; v + 1 < s.workers(); ++v) t.push_back(pat.pair(v, v + 1));
  return {plain(std::move(t))};
}
double chain_count(const Plan& /*plan*/, const Shape& s) { return each_other_rank(s); }

// Binomial tree (Open MPI tuned's and libnbc's broadcast and reduce): d = ceil(lg p) rounds,
// the whole vector in each:  broadcast d·(α + M·β);  reduce d·(α + M·β + M·γ)
void binomial_broadcast(Plan& plan, const Shape& s, double m) {
  const double depth = ceil_log2(s.workers());
  plan.push_back({flat_link(s), depth, m, depth * m, 0});
}
void binomial_reduce(Plan& plan, const Shape& s, double m) {
  const double depth = ceil_log2(s.workers());
  plan.push_back({flat_link(s), depth, m, depth * m, depth * m});
}
std::vector<PhaseTransfers> binomial_broadcast_transfers(const Plan& /*plan*/, const Patterns& pat,
                                                         const Shape& s) {
  return {binomial_broadcast_steps(pat, s.workers())};
}
std::vector<PhaseTransfers> binomial_reduce_transfers(const Plan& /*plan*/, const Patterns& pat,
                                                      const Shape& s) {
  return {binomial_reduce_steps(pat, s.workers())};
}
double binomial_tree_count(const Plan& /*plan*/, const Shape& s) { return each_other_rank(s); }

// libnbc's MPI_Ireduce_scatter (Open MPI coll/libnbc nbc_ireduce_scatter.c): a binomial reduce
// of the whole vector to rank 0 (d = ceil(lg p) rounds, as its reduce), then rank 0 sends each
// other rank its chunk, p-1 sends of M/p through its own link:
//   d·(α + M·β + M·γ) + (p-1)·α + (p-1)/p·M·β
void binomial_scatter(Plan& plan, const Shape& s, double m) {
  binomial_reduce(plan, s, m);
  const double others = s.workers() - 1;
  plan.push_back({flat_link(s), others, m / s.workers(), others / s.workers() * m, 0});
}
PhaseTransfers scatter_from_root(const Patterns& pat, int p) {
  std::vector<Transfer> t;
  for (int v = 1; v < p; ++v) t.push_back(pat.pair(0, v));
  return plain(std::move(t), 1.0 / (p - 1));
}
std::vector<PhaseTransfers> binomial_scatter_transfers(const Plan& /*plan*/, const Patterns& pat,
                                                       const Shape& s) {
  return {binomial_reduce_steps(pat, s.workers()), scatter_from_root(pat, s.workers())};
}
double binomial_scatter_count(const Plan& /*plan*/, const Shape& s) {
  return 2 * each_other_rank(s);
}

// libnbc's MPI_Iallgatherv and MPI_Iallgather (nbc_iallgatherv.c, nbc_iallgather.c, linear):
// every rank sends its chunk of M/p to each other rank, all posted at once, the pairwise
// all-to-all's transfers:  (p-1)·α + (p-1)/p·M·β

// Our runtime's rsag exchange (runtime/exchange.h): libnbc's reduce-scatter above, then its
// linear all-gather of the averaged chunks:
//   d·(α + M·β + M·γ) + 2(p-1)·α + 2(p-1)/p·M·β
void rsag(Plan& plan, const Shape& s, double m) {
  binomial_scatter(plan, s, m);
  pairwise_alltoall(plan, s, m);
}
std::vector<PhaseTransfers> rsag_transfers(const Plan& plan, const Patterns& pat, const Shape& s) {
  auto out = binomial_scatter_transfers(plan, pat, s);
  out.push_back(plain(pat.all_pairs(), 1.0 / (s.workers() - 1)));
  return out;
}
double rsag_count(const Plan& /*plan*/, const Shape& s) {
  const double p = s.workers();
  return 2 * (p - 1) + p * (p - 1);
}

// One point-to-point message of M bytes between the group's first two ranks:  α + M·β
void direct_message(Plan& plan, const Shape& s, double m) {
  plan.push_back({flat_link(s), 1, m, m, 0});
}
std::vector<PhaseTransfers> direct_transfers(const Plan& /*plan*/, const Patterns& pat,
                                             const Shape& /*shape*/) {
  return {plain({pat.pair(0, 1)})};
}
double direct_count(const Plan& /*plan*/, const Shape& /*shape*/) { return 1; }

// The table. Allreduce's "auto" is resolved before it (comm_model.cc: tree below
// auto_tree_threshold_bytes, else ring; under a stack, the stack's rules or costs).
constexpr CollectiveAlgorithm kAlgorithms[] = {
    {CollectiveOp::kAllreduce, "ring", ring, ring_transfers, ring_count, true,
     "Patarasuk & Yuan 2009; NCCL ring (src/device/all_reduce.h)"},
    {CollectiveOp::kAllreduce, "tree", tree, tree_transfers, tree_count, true,
     "NCCL >= 2.4 double binary tree (Sanders et al. 2009; NCCL src/graph/trees.cc)"},
    {CollectiveOp::kAllreduce, "recursive_doubling", recursive_doubling,
     recursive_doubling_transfers, recursive_doubling_count, true,
     "Thakur, Rabenseifner & Gropp 2005 (MPICH)"},
    {CollectiveOp::kAllreduce, "rabenseifner", rabenseifner, rabenseifner_transfers,
     rabenseifner_count, true, "Rabenseifner 2004; Thakur, Rabenseifner & Gropp 2005"},
    {CollectiveOp::kAllreduce, "binomial", binomial, binomial_transfers, binomial_count, true,
     "Open MPI libnbc nbc_iallreduce.c allred_sched_diss"},
    {CollectiveOp::kAllreduce, "ps", ps, ps_transfers, ps_count, true,
     "sharded parameter server (Li et al. 2014, OSDI)"},
    {CollectiveOp::kAllreduce, "asa", asa, asa_transfers, asa_count, true,
     "Theano-MPI alltoall-sum-allgather (Ma, Mao & Taylor 2016)"},
    {CollectiveOp::kAllreduce, "rsag", rsag, rsag_transfers, rsag_count, true,
     "our runtime's rsag: Open MPI libnbc MPI_Ireduce_scatter then MPI_Iallgatherv"},
    {CollectiveOp::kAllreduce, "hier", hier, hier_transfers, hier_count, false,
     "hierarchical allreduce (Horovod HOROVOD_HIERARCHICAL_ALLREDUCE; Jia et al. 2018)"},
    {CollectiveOp::kReduceScatter, "ring", ring_reduce_scatter, ring_transfers, ring_count, true,
     "NCCL ring reduce-scatter (src/device/reduce_scatter.h); Thakur et al. 2005"},
    {CollectiveOp::kReduceScatter, "binomial", binomial_scatter, binomial_scatter_transfers,
     binomial_scatter_count, true,
     "Open MPI libnbc nbc_ireduce_scatter.c: binomial reduce to rank 0, linear scatter"},
    {CollectiveOp::kAllgather, "ring", ring_allgather, ring_transfers, ring_count, true,
     "NCCL ring all-gather (src/device/all_gather.h); Thakur et al. 2005"},
    {CollectiveOp::kAllgather, "linear", pairwise_alltoall, all_pairs_transfers, all_pairs_count,
     true, "Open MPI libnbc nbc_iallgatherv.c, nbc_iallgather.c: every rank to every other"},
    {CollectiveOp::kAlltoall, "pairwise", pairwise_alltoall, all_pairs_transfers, all_pairs_count,
     true, "NCCL all-to-all as grouped send/recv; Open MPI coll_tuned_alltoall.c pairwise"},
    {CollectiveOp::kBroadcast, "ring", chain_broadcast, chain_transfers, chain_count, true,
     "NCCL ring broadcast, pipelined chain (src/device/broadcast.h)"},
    {CollectiveOp::kBroadcast, "binomial", binomial_broadcast, binomial_broadcast_transfers,
     binomial_tree_count, true, "Open MPI coll_tuned_bcast.c binomial tree"},
    {CollectiveOp::kReduce, "ring", chain_reduce, chain_transfers, chain_count, true,
     "NCCL ring reduce, pipelined chain (src/device/reduce.h)"},
    {CollectiveOp::kReduce, "binomial", binomial_reduce, binomial_reduce_transfers,
     binomial_tree_count, true, "Open MPI coll_tuned_reduce.c binomial tree"},
    {CollectiveOp::kSendRecv, "direct", direct_message, direct_transfers, direct_count, true,
     "one point-to-point message (NCCL ncclSend/ncclRecv, MPI_Send/MPI_Recv)"},
};

}  // namespace

const CollectiveAlgorithm* find_algorithm(CollectiveOp collective, const std::string& name) {
  for (const auto& a : kAlgorithms) {
    if (a.collective == collective && name == a.name) return &a;
  }
  return nullptr;
}

std::vector<std::string> algorithm_names(CollectiveOp collective) {
  std::vector<std::string> names;
  for (const auto& a : kAlgorithms) {
    if (a.collective == collective) names.emplace_back(a.name);
  }
  return names;
}

Expected<void> check_transfer_count(const CollectiveAlgorithm& a, const Plan& plan,
                                    const Shape& shape) {
  const double n = a.transfer_count(plan, shape);
  if (n <= kMaxFlowTransfers) return ok();
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "the flow tier would hold %.3g transfers for one %s by %s over %d GPUs, more than "
                "its limit of %.0f (about 2 GiB): price it with the analytical tier "
                "(--network-model analytic, no --topology) or on fewer GPUs",
                n, collective_op_name(a.collective), a.name, shape.workers(), kMaxFlowTransfers);
  return Error{buf};
}

Expected<Plan> allreduce_plan(const std::string& algorithm, const Shape& shape, double bytes) {
  const CollectiveAlgorithm* a = find_algorithm(CollectiveOp::kAllreduce, algorithm);
  if (a == nullptr) {
    return NameRegistry("collective algorithm formula", algorithm_names(CollectiveOp::kAllreduce))
        .check(algorithm)
        .error();
  }
  Plan plan;
  if (shape.workers() > 1) a->plan(plan, shape, bytes);
  return plan;
}

Plan sparse_allgather_plan(const Shape& shape, double local_bytes) {
  Plan plan;
  if (shape.workers() > 1) allgather_chunks(plan, shape, local_bytes);
  return plan;
}

std::vector<std::string> single_link_algorithms() {
  std::vector<std::string> out;
  for (const auto& a : kAlgorithms) {
    if (a.collective == CollectiveOp::kAllreduce && a.single_link) out.emplace_back(a.name);
  }
  return out;
}

}  // namespace dagsgd::model::detail

namespace dagsgd::model {
namespace {

constexpr std::pair<CollectiveOp, const char*> kOpNames[] = {
    {CollectiveOp::kAllreduce, "allreduce"}, {CollectiveOp::kReduceScatter, "reduce_scatter"},
    {CollectiveOp::kAllgather, "allgather"}, {CollectiveOp::kAlltoall, "alltoall"},
    {CollectiveOp::kBroadcast, "broadcast"}, {CollectiveOp::kReduce, "reduce"},
    {CollectiveOp::kSendRecv, "sendrecv"},
};

}  // namespace

const char* collective_op_name(CollectiveOp op) {
  for (const auto& [o, name] : kOpNames) {
    if (o == op) return name;
  }
  DAGSGD_CHECK(false);  // every enumerator has a name
  return "";
}

Expected<CollectiveOp> parse_collective_op(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& [o, n] : kOpNames) {
    if (name == n) return o;
    names.emplace_back(n);
  }
  return NameRegistry("collective", std::move(names)).check(name).error();
}

std::vector<std::string> collective_op_algorithms(CollectiveOp op) {
  return detail::algorithm_names(op);
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = std::max(1, ranks);
  // nccl-tests doc/PERFORMANCE.md, "Bus bandwidth": what each rank's busiest link carries per
  // byte of the operation's size.
  switch (op) {
    case CollectiveOp::kAllreduce:
      return 2 * (n - 1) / n;
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllgather:
    case CollectiveOp::kAlltoall:
      return (n - 1) / n;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
    case CollectiveOp::kSendRecv:
      return 1;
  }
  DAGSGD_CHECK(false);  // every enumerator is a case
  return 1;
}

}  // namespace dagsgd::model
