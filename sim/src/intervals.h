// Time-interval arithmetic shared by the analyses: unions, lengths and overlaps of busy spans.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "dagsgd/model/units.h"

namespace dagsgd::sim {

using Interval = std::pair<model::Nanos, model::Nanos>;

// Sorted, disjoint union of `v` (empty intervals dropped).
inline std::vector<Interval> merge(std::vector<Interval> v) {
  // The union needs the spans by start only (ties in any order); spans gathered in start order
  // need no sort.
  const auto by_start = [](const Interval& a, const Interval& b) { return a.first < b.first; };
  if (!std::is_sorted(v.begin(), v.end(), by_start)) std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (iv.second <= iv.first) continue;
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

inline model::Nanos length(const std::vector<Interval>& merged) {
  model::Nanos t = 0;
  for (const auto& iv : merged) t += iv.second - iv.first;
  return t;
}

// Length of the intersection of two merged lists.
inline model::Nanos length_and(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  model::Nanos t = 0;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    model::Nanos s = std::max(a[i].first, b[j].first);
    model::Nanos e = std::min(a[i].second, b[j].second);
    if (e > s) t += e - s;
    if (a[i].second < b[j].second) {
      ++i;
    } else {
      ++j;
    }
  }
  return t;
}

// Length of `a` outside `b`, both merged.
inline model::Nanos length_minus(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  return length(a) - length_and(a, b);
}

}  // namespace dagsgd::sim
