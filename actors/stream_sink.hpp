// StreamSink: where a stream's durable results reach the client — a callback, or a queue an iterator
// drains — and where the client's pushes take credit. A push waits while max_in_flight parameter sets
// are pushed but not yet answered, so memory stays bounded whatever the producer does. Results nobody
// has taken yet are kept whole up to a cap; past it only their ids are kept (8 bytes each) and the
// iterator reads them back from the store, in the same completion order. The sink knows which ids are
// still unanswered (a bit each), so a result delivered twice (again after a reconnect) counts once, and
// a client that reconnects can say which results it still waits for.
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
#include <unordered_set>
#include <vector>

#include "graph/errors.hpp"
#include "graph/stream_record.hpp"
#include "graph/value.hpp"

namespace tessera {

// The ids of a stream's parameter sets not answered yet: one bit per id from the oldest unanswered one
// to the newest pushed. Ids are added in order.
class UnansweredIds {
 public:
  void add(std::uint64_t id) {
    if (words_.empty()) base_ = end_ = id & ~std::uint64_t{63};
    while ((id - base_) / 64 >= words_.size()) words_.push_back(0);
    words_[(id - base_) / 64] |= std::uint64_t{1} << ((id - base_) % 64);
    end_ = std::max(end_, id + 1);
    count_ += 1;
  }
  // True when `id` was unanswered (and now is not).
  bool erase(std::uint64_t id) {
    if (words_.empty() || id < base_ || id >= end_) return false;
    auto& word = words_[(id - base_) / 64];
    const std::uint64_t bit = std::uint64_t{1} << ((id - base_) % 64);
    if (!(word & bit)) return false;
    word &= ~bit;
    count_ -= 1;
    while (words_.size() > 1 && words_.front() == 0) {
      words_.pop_front();
      base_ += 64;
    }
    return true;
  }
  std::size_t size() const { return count_; }
  std::vector<std::uint64_t> list() const {
    std::vector<std::uint64_t> out;
    out.reserve(count_);
    for (std::size_t w = 0; w < words_.size(); ++w)
      for (std::uint64_t word = words_[w]; word; word &= word - 1)
        out.push_back(base_ + 64 * w + static_cast<std::uint64_t>(__builtin_ctzll(word)));
    return out;
  }

 private:
  std::deque<std::uint64_t> words_;
  std::uint64_t base_ = 0, end_ = 0;
  std::size_t count_ = 0;
};

class StreamSink {
 public:
  using Fetch = std::function<std::optional<StreamRecord>(std::uint64_t id)>;
  explicit StreamSink(std::size_t max_in_flight)
      : max_in_flight_(max_in_flight ? max_in_flight : 1),
        keep_whole_(std::max<std::size_t>(65536, 4 * max_in_flight_)) {}
  // How results past the cap are read back (from the store). Set before the first delivery.
  void set_fetch(Fetch fetch) { fetch_ = std::move(fetch); }
  // An ensemble's sink: its generator pushes the sets, so every id delivered is new to this client (once
  // each), and nothing is acquired.
  void set_generated() { generated_ = true; }

  // Client side. Waits for room for one more parameter set, the one with `id` (ids come in order); false,
  // acquiring nothing, when the stream has ended (stream_error() says why). Throws StreamInterrupted after
  // interrupt(), ConnectionLost once the connection is gone.
  bool acquire(std::uint64_t id) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] {
      return in_flight_ + 1 <= max_in_flight_ || failed_stream_ || !lost_.empty() || interrupted_;
    });
    if (!lost_.empty()) throw ConnectionLost(lost_);
    if (interrupted_)
      throw StreamInterrupted("pushing was interrupted while parameter set " + std::to_string(id) +
                              " waited for room (max_in_flight sets unanswered)");
    if (failed_stream_) return false;
    in_flight_ += 1;
    unanswered_.add(id);
    return true;
  }
  // A resumed stream's client takes over the sets it had accepted and not answered (their results come
  // here, and give credit back) and its max_in_flight (what the stream itself takes). Called before any
  // result of the stream reaches this sink, and before any push.
  void take_over(std::vector<std::uint64_t> unanswered, std::size_t max_in_flight) {
    std::lock_guard lock(mutex_);
    std::sort(unanswered.begin(), unanswered.end());
    for (std::uint64_t id : unanswered) unanswered_.add(id);
    in_flight_ += unanswered.size();
    if (max_in_flight) max_in_flight_ = max_in_flight;
  }
  // Stream::interrupt: a push waiting for room, and every later one, stops with StreamInterrupted.
  void interrupt() {
    {
      std::lock_guard lock(mutex_);
      interrupted_ = true;
    }
    changed_.notify_all();
  }
  // Parameter sets the stream has accepted (written ahead where it runs): ids below this.
  std::uint64_t accepted() const {
    std::lock_guard lock(mutex_);
    return accepted_;
  }
  // The ids pushed whose results have not come (what a reconnecting client asks for again). For an
  // ensemble, the ids its stream accepted whose results have not come.
  // Where an ensemble's client asks for every stored result from (the ids past what it was told its
  // stream accepted); none for a stream the client pushes.
  std::optional<std::uint64_t> resend_from() const {
    std::lock_guard lock(mutex_);
    if (!generated_) return std::nullopt;
    return accepted_;
  }
  std::vector<std::uint64_t> unanswered() const {
    std::lock_guard lock(mutex_);
    if (!generated_) return unanswered_.list();
    std::vector<std::uint64_t> out;
    for (std::uint64_t id = 0; id < accepted_; ++id)
      if (!generated_ids_.count(id)) out.push_back(id);
    return out;
  }
  // The connection to the stream is gone for good: every wait ends with ConnectionLost(why).
  void lose(std::string why) {
    {
      std::lock_guard lock(mutex_);
      if (finished_) return;
      lost_ = std::move(why);
      finished_ = true;
    }
    changed_.notify_all();
  }
  std::size_t in_flight() const {
    std::lock_guard lock(mutex_);
    return in_flight_;
  }
  // Every result not taken yet goes to `callback`: those already waiting first, on this thread, in
  // completion order, then each as it comes, on a Tessera thread. (An ensemble's results start at once,
  // so a callback set just after it opens must not miss the first ones to the queue.) The callback never
  // runs on two threads at once: it takes over from the queue only once the queue is empty.
  void on_result(std::function<void(const StreamRecord&)> callback) {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (queue_.empty() && spilled_.empty()) {
        callback_ = std::move(callback);
        return;
      }
      auto waiting = std::move(queue_);
      queue_.clear();
      auto spilled = std::move(spilled_);
      spilled_.clear();
      lock.unlock();
      {
        InCallback inside;
        for (const auto& r : waiting) callback(r);
        for (std::uint64_t id : spilled)
          if (auto r = fetch_ ? fetch_(id) : std::nullopt) callback(*r);
      }
      lock.lock();  // what came meanwhile was queued: it goes next round
    }
  }
  // The next result in completion order; nullopt once the stream has finished and all were taken.
  std::optional<StreamRecord> next(
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) {
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, deadline, [&] { return !queue_.empty() || !spilled_.empty() || finished_; });
    if (!lost_.empty() && queue_.empty()) throw ConnectionLost(lost_);
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
  // Finished, and every result taken: next() has nothing more to give.
  bool drained() const {
    std::lock_guard lock(mutex_);
    return finished_ && queue_.empty() && spilled_.empty();
  }
  bool wait_finished(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    const bool finished = changed_.wait_until(lock, deadline, [&] { return finished_; });
    if (!lost_.empty()) throw ConnectionLost(lost_);
    return finished;
  }
  std::uint64_t delivered() const {
    std::lock_guard lock(mutex_);
    return delivered_;
  }
  const std::string& stream_error() const { return stream_error_; }

  // Stream side: parameter sets with ids below `up_to` are written ahead.
  virtual ~StreamSink() = default;
  virtual void accept(std::uint64_t up_to) {
    // Nothing waits for this (credit comes back with results): no wakeup.
    std::lock_guard lock(mutex_);
    accepted_ = std::max(accepted_, up_to);
  }
  // Stream side: parameter sets it took no room for (a client past max_in_flight, which ours never is).
  virtual void refuse(const std::string&) {}
  // Stream side: results that are durable now. One answered before (delivered again after a reconnect)
  // is dropped here.
  // True on a thread running a result callback (on_result) of some stream.
  static bool& in_callback() {
    static thread_local bool inside = false;
    return inside;
  }
  struct InCallback {
    InCallback() { in_callback() = true; }
    ~InCallback() { in_callback() = false; }
  };
  virtual void deliver(std::vector<StreamRecord>& records) {
    std::function<void(const StreamRecord&)> callback;
    {
      std::lock_guard lock(mutex_);
      if (generated_)
        std::erase_if(records, [&](const StreamRecord& r) { return !generated_ids_.insert(r.id).second; });
      else
        std::erase_if(records, [&](const StreamRecord& r) { return !unanswered_.erase(r.id); });
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
    if (callback) {
      // The callback runs on the thread that answers the stream (its actor, or the connection's I/O
      // thread): what waits for that thread must not be called from it.
      InCallback inside;
      for (const auto& r : records) callback(r);
    }
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
  std::size_t max_in_flight_;  // changed only by take_over, before pushes
  const std::size_t keep_whole_;
  Fetch fetch_;
  std::deque<std::uint64_t> spilled_;  // ids of results past the cap, in completion order
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t in_flight_ = 0;
  std::uint64_t delivered_ = 0;
  std::deque<StreamRecord> queue_;
  std::function<void(const StreamRecord&)> callback_;
  bool finished_ = false, failed_stream_ = false, interrupted_ = false;
  std::string stream_error_;
  std::string lost_;  // set: the connection is gone for good
  std::uint64_t accepted_ = 0;
  UnansweredIds unanswered_;
  bool generated_ = false;
  std::unordered_set<std::uint64_t> generated_ids_;  // an ensemble's ids delivered so far
};

}  // namespace tessera
