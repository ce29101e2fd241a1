// An open-addressed hash table for the reader's hot lookups (the flow counts of file_parser.cc,
// the correlation ids of trace_dag_kineto.cc): linear probing in one vector, a power of two
// long and at most half used, with no node allocated per entry as std::unordered_map does.
// Private to trace/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dagsgd::trace::detail {

// splitmix64's finalizer: spreads keys that count up (ids) over the whole table.
inline std::uint64_t mix64(std::uint64_t h) {
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

// Key -> Value; `Hash` gives a key's slot hash, `kFirstSize` is the first allocation (a power
// of two). Keys compare with ==.
template <typename Key, typename Value, typename Hash, std::size_t kFirstSize>
class OpenTable {
 public:
  // The value of `k`, value-initialized when new.
  Value& operator[](const Key& k) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    Slot& s = slots_[index(slots_, k)];
    if (!s.used) {
      s = Slot{k, Value{}, true};
      ++used_;
    }
    return s.value;
  }
  // The value of `k`; null when absent.
  const Value* find(const Key& k) const {
    if (slots_.empty()) return nullptr;
    const Slot& s = slots_[index(slots_, k)];
    return s.used ? &s.value : nullptr;
  }
  // Empty; `keep_room` keeps the allocation for the next use.
  void clear(bool keep_room = false) {
    if (keep_room) {
      std::fill(slots_.begin(), slots_.end(), Slot{});
    } else {
      slots_.clear();
    }
    used_ = 0;
  }
  // f(key, value) for every entry, in no particular order.
  template <typename F>
  void each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.used) f(s.key, s.value);
    }
  }

 private:
  struct Slot {
    Key key{};
    Value value{};
    bool used = false;
  };

  // Where `k` is, or the free slot where it would go.
  static std::size_t index(const std::vector<Slot>& slots, const Key& k) {
    const std::size_t mask = slots.size() - 1;
    for (std::size_t i = Hash{}(k)&mask;; i = (i + 1) & mask) {
      if (!slots[i].used || slots[i].key == k) return i;
    }
  }

  void grow() {
    std::vector<Slot> bigger(slots_.empty() ? kFirstSize : 2 * slots_.size());
    for (const Slot& s : slots_) {
      if (s.used) bigger[index(bigger, s.key)] = s;
    }
    slots_ = std::move(bigger);
  }

  std::vector<Slot> slots_;
  std::size_t used_ = 0;
};

}  // namespace dagsgd::trace::detail
