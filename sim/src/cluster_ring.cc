// Ring orders inside a node (cluster_ring.h): the widest Hamiltonian cycle over the node-local
// routes, exhaustive up to 8 GPUs, and its cut into a chain from NIC to NIC.
#include "cluster_ring.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

namespace dagsgd::sim::topo {
namespace {

// Order of the local GPUs around a ring: see ClusterTopology::intra_ring.
struct RingScore {
  double narrowest = 0;
  int hops = 0;
  bool better_than(const RingScore& o) const {
    return narrowest > o.narrowest || (narrowest == o.narrowest && hops < o.hops);
  }
};

constexpr int kExhaustiveRingGpus = 8;
constexpr int kRingImprovementPasses = 50;
// Ring orders scored in the improvement passes (each costs O(GPUs)): bounds large nodes.
constexpr long long kRingScoreBudget = 50'000'000;

}  // namespace

std::vector<int> ring_order(int gpus, const std::vector<std::vector<double>>& width,
                            const std::vector<std::vector<int>>& hops) {
  std::vector<int> order(gpus);
  std::iota(order.begin(), order.end(), 0);
  if (gpus <= 2) return order;
  auto score = [&](const std::vector<int>& o) {
    RingScore s{std::numeric_limits<double>::infinity(), 0};
    for (int i = 0; i < gpus; ++i) {
      const int a = o[i];
      const int b = o[(i + 1) % gpus];
      s.narrowest = std::min(s.narrowest, width[a][b]);
      s.hops += hops[a][b];
    }
    return s;
  };
  if (gpus <= kExhaustiveRingGpus) {
    // Lexicographic enumeration with GPU 0 first: the first best order is the smallest one.
    std::vector<int> best = order;
    RingScore best_score = score(order);
    while (std::next_permutation(order.begin() + 1, order.end())) {
      const RingScore s = score(order);
      if (s.better_than(best_score)) {
        best = order;
        best_score = s;
      }
    }
    return best;
  }
  // Beyond 8 GPUs: greedy widest-next from GPU 0, then segment reversals while they help.
  std::vector<int> greedy{0};
  std::vector<char> used(gpus, 0);
  used[0] = 1;
  for (int step = 1; step < gpus; ++step) {
    const int cur = greedy.back();
    int pick = -1;
    for (int c = 0; c < gpus; ++c) {
      if (used[c]) continue;
      if (pick < 0 || width[cur][c] > width[cur][pick] ||
          (width[cur][c] == width[cur][pick] && hops[cur][c] < hops[cur][pick])) {
        pick = c;
      }
    }
    used[pick] = 1;
    greedy.push_back(pick);
  }
  std::vector<int> best = score(greedy).better_than(score(order)) ? greedy : order;
  RingScore best_score = score(best);
  long long budget = kRingScoreBudget / gpus;
  for (int pass = 0; pass < kRingImprovementPasses && budget > 0; ++pass) {
    bool improved = false;
    for (int i = 1; i < gpus - 1 && budget > 0; ++i) {
      for (int j = i + 1; j < gpus && budget > 0; ++j, --budget) {
        std::vector<int> candidate = best;
        std::reverse(candidate.begin() + i, candidate.begin() + j + 1);
        const RingScore s = score(candidate);
        if (s.better_than(best_score)) {
          best = std::move(candidate);
          best_score = s;
          improved = true;
        }
      }
    }
    if (!improved) break;
  }
  return best;
}

std::vector<int> chain_through_nics(const std::vector<int>& ring,
                                    const std::vector<std::vector<double>>& width,
                                    const std::vector<std::vector<int>>& hops,
                                    const std::vector<std::pair<double, int>>& leg_out,
                                    const std::vector<std::pair<double, int>>& leg_in) {
  const int g = static_cast<int>(ring.size());
  if (g < 2) return ring;
  auto score = [&](const std::vector<int>& chain) {
    RingScore s{std::min(leg_out[chain.back()].first, leg_in[chain.front()].first),
                leg_out[chain.back()].second + leg_in[chain.front()].second};
    for (int i = 0; i + 1 < g; ++i) {
      s.narrowest = std::min(s.narrowest, width[chain[i]][chain[i + 1]]);
      s.hops += hops[chain[i]][chain[i + 1]];
    }
    return s;
  };
  std::vector<int> best = ring;
  RingScore best_score = score(ring);
  std::vector<int> chain(g);
  for (int r = 0; r < g; ++r) {
    for (int reversed = 0; reversed < 2; ++reversed) {
      for (int i = 0; i < g; ++i) {
        chain[i] = reversed ? ring[((r - 1 - i) % g + g) % g] : ring[(r + i) % g];
      }
      const RingScore s = score(chain);
      if (s.better_than(best_score)) {
        best = chain;
        best_score = s;
      }
    }
  }
  return best;
}

}  // namespace dagsgd::sim::topo
