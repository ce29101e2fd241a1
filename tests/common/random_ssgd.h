// Random S-SGD configurations full of ties (tiny and zero durations, equal workers, stragglers)
// for the tests that hold the compact S-SGD DAG to the explicit one.
#pragma once

#include <random>

#include "dagsgd/model/ssgd.h"

namespace dagsgd::testing {

inline model::SsgdConfig random_ssgd_config(std::mt19937_64& rng, int max_workers = 6) {
  auto pick = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Round by round: times from {0..3} (ties everywhere) or from a wide range.
  const int max_time = pick(0, 2) == 0 ? 3 : 1'000'000;
  auto time = [&] { return static_cast<model::Nanos>(pick(0, max_time)); };
  model::SsgdConfig c;
  c.layers.resize(static_cast<std::size_t>(pick(1, 7)));
  for (auto& l : c.layers) {
    l.forward = time();
    l.backward = time();
    l.param_elements = pick(0, 3) == 0 ? 0 : pick(1, 5000);
  }
  c.workers = pick(1, max_workers);
  c.iterations = pick(1, 4);
  c.prefetch = pick(0, 1) == 1;
  c.io = time();
  c.h2d = time();
  c.update = time();
  if (pick(0, 2) == 0) {
    // Stragglers: some workers alike, some slower.
    const double factors[] = {1.0, 1.0, 1.5, 2.0, 0.5};
    for (int w = 0; w < c.workers; ++w) c.slowdown.push_back(factors[pick(0, 4)]);
  }
  const model::OverlapPolicy::Kind kinds[] = {
      model::OverlapPolicy::Kind::kNone, model::OverlapPolicy::Kind::kWfbp,
      model::OverlapPolicy::Kind::kMgwfbp, model::OverlapPolicy::Kind::kBucket};
  model::OverlapPolicy policy{kinds[pick(0, 3)]};
  policy.bucket_bytes = pick(1, 20000);
  const model::Nanos alpha = time();
  const int per_element = pick(0, 2);
  c.groups = model::make_groups(c.layers, policy, [&](std::int64_t e) {
    return alpha + static_cast<model::Nanos>(per_element) * e / (max_time == 3 ? 2000 : 1);
  });
  return c;
}

}  // namespace dagsgd::testing
