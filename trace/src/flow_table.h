// The reader's count of flow records (file_parser.cc): starts and ends per flow category and id,
// in one open-addressed table, without the node a std::unordered_map allocates per flow (a
// Kineto trace has a flow for most of its kernel launches).
#pragma once

#include <cstdint>
#include <utility>

#include "open_table.h"

namespace dagsgd::trace::detail {

// A flow's category (interned per file) and id: Kineto pairs 's' and 'f' records by both.
struct FlowKey {
  std::int32_t cat = 0;
  std::int64_t id = 0;
  bool operator==(const FlowKey&) const = default;
};

// A key's slot hash: splitmix64 over the id and category (ids hashed from strings fill 64 bits),
// all but the id's low bits: a Kineto trace's flows come in id order, start and end side by
// side, so the ids of one block of kRun share a few cache lines of the table instead of missing
// the cache once each; ids of different blocks still land apart.
struct FlowKeyHash {
  static constexpr std::uint64_t kRun = 16;
  std::uint64_t operator()(const FlowKey& k) const {
    const auto id = static_cast<std::uint64_t>(k.id);
    return mix64((id / kRun) ^ (static_cast<std::uint64_t>(k.cat) << 48)) * kRun + id % kRun;
  }
};

// Per flow, its (starts, ends).
using FlowTable = OpenTable<FlowKey, std::pair<int, int>, FlowKeyHash, 1024>;

}  // namespace dagsgd::trace::detail
