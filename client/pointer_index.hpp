// PointerIndex: a map from object addresses to dense indices, for walks over graphs of a million nodes.
// Open addressing in one flat table: no allocation per entry, one cache line per lookup (a node-based
// std::unordered_map spent most of a million-task lowering in malloc and page faults). Internal to client/.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace tessera::detail {

template <class T>
class PointerIndex {
 public:
  static constexpr std::uint32_t kAbsent = UINT32_MAX;

  // The index stored for `key`, or kAbsent.
  std::uint32_t find(const T* key) const {
    if (slots_.empty()) return kAbsent;
    for (std::size_t at = home(key);; at = (at + 1) & mask()) {
      const Slot& slot = slots_[at];
      if (slot.key == key) return slot.index;
      if (!slot.key) return kAbsent;
    }
  }
  bool contains(const T* key) const { return find(key) != kAbsent; }

  // Stores `index` for `key` unless it has one already; returns whether it was stored. `key` is not null.
  bool insert(const T* key, std::uint32_t index) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    for (std::size_t at = home(key);; at = (at + 1) & mask()) {
      Slot& slot = slots_[at];
      if (slot.key == key) return false;
      if (!slot.key) {
        slot = Slot{key, index};
        ++size_;
        return true;
      }
    }
  }

  std::size_t size() const { return size_; }

 private:
  struct Slot {
    const T* key = nullptr;
    std::uint32_t index = kAbsent;
  };

  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t home(const T* key) const {
    // Fibonacci hashing: heap addresses share their low bits (alignment), the product's high bits do not.
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(key));
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    shift_ = 64 - static_cast<unsigned>(std::countr_zero(slots_.size()));
    size_ = 0;
    for (const Slot& slot : old)
      if (slot.key) insert(slot.key, slot.index);
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  unsigned shift_ = 64;
};

}  // namespace tessera::detail
