// The scheduler's side of a remote client's result table and of its stream: what the scheduler delivers
// to them goes back over the client's connection instead of being kept.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "actors/result_sink.hpp"
#include "actors/stream_sink.hpp"
#include "nodes/transport.hpp"

namespace tessera {

// A remote client's result table, seen from the scheduler: deliveries are sent back, not stored.
class RemoteSink final : public ResultSink {
 public:
  RemoteSink(std::uint32_t slots, std::weak_ptr<const SchedulerLink> link, std::vector<Watch> watches,
             std::weak_ptr<transport::Server> server, std::string peer)
      : ResultSink(slots, std::move(link), std::move(watches)),
        server_(std::move(server)),
        peer_(std::move(peer)) {}

  void deliver(std::vector<Delivery>& batch) override;

  // Releases a slot once (the client's release, or the grace period's end); true when it was held.
  bool release_once(std::uint32_t slot) {
    if (released_.empty()) released_.resize(size());
    if (released_[slot]) return false;
    released_[slot] = true;
    release(slot);
    unreleased -= 1;
    return true;
  }
  void release_all() {
    for (std::uint32_t slot = 0; slot < size(); ++slot) release_once(slot);
  }
  // The client's session moved to another connection (it reconnected and resumed): what comes next goes
  // there. Returns how many slots' results went to the connections before, which the client compares with
  // what reached it.
  std::uint64_t retarget(std::string peer) {
    std::lock_guard lock(peer_mutex_);
    peer_ = std::move(peer);
    return sent_slots_;
  }

  std::uint32_t unreleased = 0;

 private:
  std::vector<bool> released_;
  std::weak_ptr<transport::Server> server_;
  std::mutex peer_mutex_;  // the peer and the count change together: a result is counted where it went
  std::string peer_;
  std::uint64_t sent_slots_ = 0;
};

// A remote client's stream, seen from the scheduler: durable results are sent back, not queued.
class RemoteStreamSink final : public StreamSink {
 public:
  RemoteStreamSink(std::weak_ptr<transport::Server> server, std::string peer)
      : StreamSink(1), server_(std::move(server)), peer_(std::move(peer)) {}
  void set_stream(std::uint64_t id) { stream_ = id; }
  // The client has been told the stream is open (set_stream first): what the stream said until now goes
  // out, in order. An ensemble's generator can deliver results, or its stream finish, before the gateway
  // answers the open, and the client must read that answer first.
  void opened() {
    for (;;) {
      std::vector<std::function<void()>> held;
      {
        std::lock_guard lock(hold_mutex_);
        if (held_.empty()) {
          open_.store(true, std::memory_order_release);
          return;
        }
        held = std::move(held_);
        held_.clear();
      }
      for (auto& later : held) later();  // what comes meanwhile is held, and goes next round
    }
  }
  void deliver(std::vector<StreamRecord>& records) override {
    // Once open, no copy and no lock: the flag never goes back.
    if (!open_.load(std::memory_order_acquire) &&
        hold([this, copy = records]() mutable { send_results(copy); }))
      return;
    send_results(records);
  }
  void accept(std::uint64_t up_to) override {
    if (!open_.load(std::memory_order_acquire) && hold([this, up_to] { send_accepted(up_to); })) return;
    send_accepted(up_to);
  }
  void finish(std::string error) override {
    if (!open_.load(std::memory_order_acquire) && hold([this, error] { send_finished(error); })) return;
    send_finished(error);
  }
  void refuse(const std::string& reason) override;
  // Results sent back so far (any thread), against the sets the client pushed.
  std::uint64_t delivered() const { return delivered_.load(); }

 private:
  void send_results(std::vector<StreamRecord>& records);
  void send_accepted(std::uint64_t up_to);
  void send_finished(const std::string& error);

  std::weak_ptr<transport::Server> server_;
  std::string peer_;
  std::uint64_t stream_ = 0;
  std::atomic<std::uint64_t> delivered_{0};
  // Keeps `later` while the client has not been told the stream is open.
  bool hold(std::function<void()> later) {
    std::lock_guard lock(hold_mutex_);
    if (open_.load(std::memory_order_relaxed)) return false;
    held_.push_back(std::move(later));
    return true;
  }
  std::mutex hold_mutex_;
  std::atomic<bool> open_{false};  // set under hold_mutex_
  std::vector<std::function<void()>> held_;
};

}  // namespace tessera
