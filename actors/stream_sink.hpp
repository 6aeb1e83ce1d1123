// StreamSink: where a stream's durable results reach the client — a callback, or a queue an iterator
// drains — and where the client's pushes take credit. A push waits while max_in_flight parameter sets
// are pushed but not yet answered, so memory stays bounded whatever the producer does. Results nobody
// has taken yet are kept whole up to a cap; past it only their ids are kept (8 bytes each) and the
// iterator reads them back from the store, in the same completion order.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph/stream_record.hpp"
#include "graph/value.hpp"

namespace tessera {

class StreamSink {
 public:
  using Fetch = std::function<std::optional<StreamRecord>(std::uint64_t id)>;
  explicit StreamSink(std::size_t max_in_flight)
      : max_in_flight_(max_in_flight ? max_in_flight : 1),
        keep_whole_(std::max<std::size_t>(65536, 4 * max_in_flight_)) {}
  // How results past the cap are read back (from the store). Set before the first delivery.
  void set_fetch(Fetch fetch) { fetch_ = std::move(fetch); }

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
    changed_.wait_until(lock, deadline, [&] { return !queue_.empty() || !spilled_.empty() || finished_; });
    if (!queue_.empty()) {
      auto out = std::move(queue_.front());
      queue_.pop_front();
      return out;
    }
    if (spilled_.empty() || !fetch_) return std::nullopt;
    const std::uint64_t id = spilled_.front();
    spilled_.pop_front();
    lock.unlock();
    return fetch_(id);
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
  virtual ~StreamSink() = default;
  virtual void deliver(std::vector<StreamRecord>& records) {
    std::function<void(const StreamRecord&)> callback;
    {
      std::lock_guard lock(mutex_);
      in_flight_ -= std::min<std::size_t>(in_flight_, records.size());
      delivered_ += records.size();
      callback = callback_;
      if (!callback)
        for (auto& r : records) {
          if (queue_.size() < keep_whole_ && spilled_.empty()) {
            queue_.push_back(std::move(r));
          } else {
            spilled_.push_back(r.id);
          }
        }
    }
    changed_.notify_all();
    if (callback)
      for (const auto& r : records) callback(r);
  }
  // Closed and every pushed parameter set answered (or the stream failed as a whole).
  virtual void finish(std::string error = {}) {
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
  const std::size_t keep_whole_;
  Fetch fetch_;
  std::deque<std::uint64_t> spilled_;  // ids of results past the cap, in completion order
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
