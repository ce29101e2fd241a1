// The reader's count of flow records (file_parser.cc): starts and ends per flow category and id,
// in one open-addressed table, without the node a std::unordered_map allocates per flow (a
// Kineto trace has a flow for most of its kernel launches).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dagsgd::trace::detail {

// A flow's category (interned per file) and id: Kineto pairs 's' and 'f' records by both.
struct FlowKey {
  std::int32_t cat = 0;
  std::int64_t id = 0;
  bool operator==(const FlowKey&) const = default;
};

class FlowTable {
 public:
  // The (starts, ends) of `k`, (0, 0) when new.
  std::pair<int, int>& operator[](const FlowKey& k) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    Slot& s = find(slots_, k);
    if (!s.used) {
      s = Slot{k, {0, 0}, true};
      ++used_;
    }
    return s.counts;
  }

  void clear() {
    slots_.clear();
    used_ = 0;
  }

  // f(key, counts) for every flow, in no particular order.
  template <typename F>
  void each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.used) f(s.key, s.counts);
    }
  }

 private:
  struct Slot {
    FlowKey key;
    std::pair<int, int> counts{0, 0};
    bool used = false;
  };

  static Slot& find(std::vector<Slot>& slots, const FlowKey& k) {
    // splitmix64's finalizer over the id and category (ids hashed from strings fill 64 bits),
    // all but the id's low bits: a Kineto trace's flows come in id order, start and end side by
    // side, so the ids of one block of kRun share a few cache lines of the table instead of
    // missing the cache once each; ids of different blocks still land apart.
    const auto id = static_cast<std::uint64_t>(k.id);
    std::uint64_t h = (id / kRun) ^ (static_cast<std::uint64_t>(k.cat) << 48);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    h = h * kRun + id % kRun;
    const std::size_t mask = slots.size() - 1;
    for (std::size_t i = h & mask;; i = (i + 1) & mask) {
      if (!slots[i].used || slots[i].key == k) return slots[i];
    }
  }

  void grow() {
    std::vector<Slot> bigger(slots_.empty() ? 1024 : 2 * slots_.size());
    for (const Slot& s : slots_) {
      if (s.used) find(bigger, s.key) = s;
    }
    slots_ = std::move(bigger);
  }

  static constexpr std::uint64_t kRun = 16;
  std::vector<Slot> slots_;  // a power of two long, at most half used
  std::size_t used_ = 0;
};

}  // namespace dagsgd::trace::detail
