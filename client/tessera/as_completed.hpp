// as_completed(futures): yields the futures in the order their tasks finish.
#pragma once

#include <chrono>
#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "tessera/future.hpp"

namespace tessera {

namespace detail {

// The order in which result handles finish: next() waits for the next one and gives its index. Several
// handles on one slot are each given once.
class CompletionOrder {
 public:
  // The handles must stay alive while the order is read.
  explicit CompletionOrder(const std::vector<const ResultHandle*>& handles);
  ~CompletionOrder();
  CompletionOrder(CompletionOrder&&) noexcept;
  CompletionOrder& operator=(CompletionOrder&&) noexcept;

  // Nullopt once every handle has been given.
  std::optional<std::size_t> next();
  // The same, or nullopt when the deadline passed first (exhausted() tells the two apart): what a caller
  // that must stay interruptible (the Python client, for Ctrl-C) waits with.
  std::optional<std::size_t> next(std::chrono::steady_clock::time_point deadline);
  bool exhausted() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace detail

template <class T>
class AsCompleted {
 public:
  explicit AsCompleted(std::vector<Future<T>> futures)
      : futures_(std::move(futures)), order_(handles_of(futures_)) {}

  // The next finished future (successful or not); nullopt when every one has been yielded.
  std::optional<Future<T>> next() {
    auto index = order_.next();
    if (!index) return std::nullopt;
    return futures_[*index];
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
  static std::vector<const detail::ResultHandle*> handles_of(const std::vector<Future<T>>& futures) {
    std::vector<const detail::ResultHandle*> handles;
    handles.reserve(futures.size());
    for (const auto& f : futures) handles.push_back(&f.handle());
    return handles;
  }

  std::vector<Future<T>> futures_;
  detail::CompletionOrder order_;
};

template <class T>
AsCompleted<T> as_completed(std::vector<Future<T>> futures) {
  return AsCompleted<T>(std::move(futures));
}

}  // namespace tessera
