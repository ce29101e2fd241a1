// The building blocks of collectives' transfers for the flow tier: rings, double binary trees,
// pairwise exchanges and folds over ranks in the order the library arranges them. The table of
// algorithms (collective_algorithms.cc) builds each algorithm's transfers from these.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "dagsgd/model/collective_flows.h"

namespace dagsgd::model::detail {

// Positions in `order` stand for the ranks at those positions.
class Patterns {
 public:
  Patterns(const std::vector<int>& order, int gpus_per_node)
      : order_(order), gpus_per_node_(std::max(1, gpus_per_node)) {}

  std::vector<Transfer> ring(const std::vector<int>& positions) const {
    std::vector<Transfer> t;
    const std::size_t n = positions.size();
    if (n < 2) return t;
    for (std::size_t i = 0; i < n; ++i) t.push_back(at(positions[i], positions[(i + 1) % n]));
    return t;
  }
  std::vector<int> all() const {
    std::vector<int> v(order_.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
    return v;
  }
  std::vector<Transfer> all_pairs() const {
    std::vector<Transfer> t;
    const int p = static_cast<int>(order_.size());
    for (int i = 0; i < p; ++i) {
      for (int j = 0; j < p; ++j) {
        if (i != j) t.push_back(at(i, j));
      }
    }
    return t;
  }
  // Positions grouped by node, each group in order, the nodes in order of first appearance.
  std::vector<std::vector<int>> by_node() const {
    std::vector<std::vector<int>> groups;
    std::vector<int> group_of_node;  // node -> its group, -1 before its first position
    for (std::size_t i = 0; i < order_.size(); ++i) {
      const auto node = static_cast<std::size_t>(order_[i] / gpus_per_node_);
      if (node >= group_of_node.size()) group_of_node.resize(node + 1, -1);
      int& g = group_of_node[node];
      if (g < 0) {
        g = static_cast<int>(groups.size());
        groups.emplace_back();
      }
      groups[static_cast<std::size_t>(g)].push_back(static_cast<int>(i));
    }
    return groups;
  }
  // Pairwise exchanges at distance `d` among the first `p2` positions (i with i XOR d).
  std::vector<Transfer> exchange(int p2, int d) const {
    std::vector<Transfer> t;
    t.reserve(static_cast<std::size_t>(p2));
    for (int i = 0; i < p2; ++i) t.push_back(at(i, i ^ d));
    return t;
  }
  // The extra ranks beyond the largest power of two fold into (out of) their partners.
  std::vector<Transfer> fold(int p2, bool in) const {
    std::vector<Transfer> t;
    for (int i = p2; i < static_cast<int>(order_.size()); ++i) {
      t.push_back(in ? at(i, i - p2) : at(i - p2, i));
    }
    return t;
  }
  // Double binary tree: tree A a binary heap over the members, tree B the same over them in
  // reverse, so that (for an even count) each member is inner in one tree only. Edges child to
  // parent (`up`) or parent to child.
  std::vector<Transfer> double_tree(const std::vector<int>& members, bool up) const {
    std::vector<Transfer> t;
    const int n = static_cast<int>(members.size());
    for (int mirror = 0; mirror < 2; ++mirror) {
      auto member = [&](int k) {
        return members[static_cast<std::size_t>(mirror == 0 ? k : n - 1 - k)];
      };
      for (int c = 1; c < n; ++c) {
        const int parent = (c - 1) / 2;
        t.push_back(up ? at(member(c), member(parent)) : at(member(parent), member(c)));
      }
    }
    return t;
  }

  Transfer pair(int from_position, int to_position) const { return at(from_position, to_position); }

 private:
  Transfer at(int from_position, int to_position) const {
    return {order_[static_cast<std::size_t>(from_position)],
            order_[static_cast<std::size_t>(to_position)]};
  }
  const std::vector<int>& order_;
  int gpus_per_node_;
};

}  // namespace dagsgd::model::detail
