// as_completed(futures): yields the futures in the order their tasks finish.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "tessera/future.hpp"

namespace tessera {

template <class T>
class AsCompleted {
 public:
  explicit AsCompleted(std::vector<Future<T>> futures)
      : futures_(std::move(futures)),
        queue_(std::make_shared<CompletionQueue>()),
        remaining_(futures_.size()) {
    std::set<ResultSink*> sinks;
    for (std::size_t i = 0; i < futures_.size(); ++i) {
      pending_[{futures_[i].sink().get(), futures_[i].slot()}].push_back(i);
      sinks.insert(futures_[i].sink().get());
    }
    for (ResultSink* sink : sinks) sink->listen(queue_);
  }

  // The next finished future (successful or not); nullopt when every one has been yielded.
  std::optional<Future<T>> next() {
    if (remaining_ == 0) return std::nullopt;
    std::unique_lock lock(queue_->mutex);
    for (;;) {
      while (!queue_->finished.empty()) {
        auto [sink, slot] = queue_->finished.front();
        queue_->finished.pop_front();
        auto it = pending_.find({sink, slot});
        if (it == pending_.end()) continue;
        const std::size_t index = it->second.back();
        it->second.pop_back();
        if (it->second.empty()) pending_.erase(it);
        // Several futures on one slot: each is yielded once.
        if (pending_.count({sink, slot})) queue_->finished.emplace_front(sink, slot);
        --remaining_;
        return futures_[index];
      }
      queue_->changed.wait(lock);
    }
  }

  class iterator {
   public:
    using value_type = Future<T>;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(AsCompleted* owner) : owner_(owner) { ++*this; }
    const Future<T>& operator*() const { return *current_; }
    const Future<T>* operator->() const { return &*current_; }
    iterator& operator++() {
      current_ = owner_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !current_; }

   private:
    AsCompleted* owner_ = nullptr;
    std::optional<Future<T>> current_;
  };
  iterator begin() { return iterator(this); }
  std::default_sentinel_t end() { return {}; }

 private:
  std::vector<Future<T>> futures_;
  std::shared_ptr<CompletionQueue> queue_;
  std::map<std::pair<const void*, std::uint32_t>, std::vector<std::size_t>> pending_;
  std::size_t remaining_;
};

template <class T>
AsCompleted<T> as_completed(std::vector<Future<T>> futures) {
  return AsCompleted<T>(std::move(futures));
}

}  // namespace tessera
