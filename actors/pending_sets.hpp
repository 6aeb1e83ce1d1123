// A stream's parameter sets waiting for a simulation actor: the highest priority goes first, and within
// one priority the order they came in (push order), except that a set sent back to run again (a retry,
// a lost worker's, one given back unrun) goes before the others of its priority.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "graph/value.hpp"

namespace tessera {

struct PendingSet {
  std::uint64_t id = 0;
  Value parameters;
  double priority = 0;
  double pushed_at = 0;  // when its stream accepted it (SetTimeline's clock)
  double timeout = 0;    // its own, in seconds; 0: the stream's
};

class PendingSets {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }

  void push_back(PendingSet set) {
    buckets_[set.priority].push_back(std::move(set));
    ++size_;
  }
  // Runs again: first among its priority.
  void push_front(PendingSet set) {
    buckets_[set.priority].push_front(std::move(set));
    ++size_;
  }
  // The next to dispatch; the queue must not be empty.
  PendingSet pop() {
    auto first = buckets_.begin();
    PendingSet set = std::move(first->second.front());
    first->second.pop_front();
    if (first->second.empty()) buckets_.erase(first);
    --size_;
    return set;
  }
  // Each queued set, in dispatch order.
  template <class Visit>
  void for_each(Visit visit) const {
    for (const auto& [priority, sets] : buckets_)
      for (const auto& set : sets) visit(set);
  }
  // Takes out every set `matches` accepts, in dispatch order.
  template <class Matches>
  std::vector<PendingSet> take_if(Matches matches) {
    std::vector<PendingSet> taken;
    for (auto bucket = buckets_.begin(); bucket != buckets_.end();) {
      auto& sets = bucket->second;
      std::deque<PendingSet> kept;
      for (auto& set : sets)
        if (matches(static_cast<const PendingSet&>(set)))
          taken.push_back(std::move(set));
        else
          kept.push_back(std::move(set));
      sets = std::move(kept);
      bucket = sets.empty() ? buckets_.erase(bucket) : std::next(bucket);
    }
    size_ -= taken.size();
    return taken;
  }

 private:
  std::map<double, std::deque<PendingSet>, std::greater<>> buckets_;
  std::size_t size_ = 0;
};

}  // namespace tessera
