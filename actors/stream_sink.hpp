// StreamSink: where a stream's durable results reach the client — a callback, or a queue an iterator
// drains — and where the client's pushes take credit. A push waits while max_in_flight parameter sets
// are pushed but not yet answered, so memory stays bounded whatever the producer does.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/value.hpp"

namespace tessera {

// One parameter set's outcome, as a client sees it.
struct StreamRecord {
  std::uint64_t id = 0;
  Value value{};
  bool failed = false;
  std::string error{};  // with failed: what the simulation raised
  std::string node{};   // with failed: where it ran
};

class StreamSink {
 public:
  explicit StreamSink(std::size_t max_in_flight) : max_in_flight_(max_in_flight ? max_in_flight : 1) {}

  // Client side. Waits for room for n more parameter sets (n is at most max_in_flight).
  void acquire(std::size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return in_flight_ + n <= max_in_flight_ || failed_stream_; });
    in_flight_ += n;
  }
  std::size_t in_flight() const {
    std::lock_guard lock(mutex_);
    return in_flight_;
  }
  // Results arrive here instead of the queue from now on (called on a Tessera thread).
  void on_result(std::function<void(const StreamRecord&)> callback) {
    std::lock_guard lock(mutex_);
    callback_ = std::move(callback);
  }
  // The next result in completion order; nullopt once the stream has finished and all were taken.
  std::optional<StreamRecord> next(
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) {
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, deadline, [&] { return !queue_.empty() || finished_; });
    if (queue_.empty()) return std::nullopt;
    auto out = std::move(queue_.front());
    queue_.pop_front();
    return out;
  }
  bool wait_finished(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    return changed_.wait_until(lock, deadline, [&] { return finished_; });
  }
  std::uint64_t delivered() const {
    std::lock_guard lock(mutex_);
    return delivered_;
  }
  const std::string& stream_error() const { return stream_error_; }

  // Stream side: results that are durable now.
  void deliver(std::vector<StreamRecord>& records) {
    std::function<void(const StreamRecord&)> callback;
    {
      std::lock_guard lock(mutex_);
      in_flight_ -= std::min<std::size_t>(in_flight_, records.size());
      delivered_ += records.size();
      callback = callback_;
      if (!callback)
        for (auto& r : records) queue_.push_back(std::move(r));
    }
    changed_.notify_all();
    if (callback)
      for (const auto& r : records) callback(r);
  }
  // Closed and every pushed parameter set answered (or the stream failed as a whole).
  void finish(std::string error = {}) {
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
      if (!error.empty()) {
        stream_error_ = std::move(error);
        failed_stream_ = true;
      }
    }
    changed_.notify_all();
  }

 private:
  const std::size_t max_in_flight_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t in_flight_ = 0;
  std::uint64_t delivered_ = 0;
  std::deque<StreamRecord> queue_;
  std::function<void(const StreamRecord&)> callback_;
  bool finished_ = false, failed_stream_ = false;
  std::string stream_error_;
};

}  // namespace tessera
