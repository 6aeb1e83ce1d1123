// ResultSink: where the scheduler delivers the results a client asked for (one slot per wanted task),
// and where the client's future handles count their references. When a slot's last reference goes, the
// slot is queued for release and the scheduler is told once per burst, so dropping a million futures
// costs a handful of messages.
#pragma once

#include <atomic>
#include <caf/all.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "actors/messages.hpp"
#include "graph/errors.hpp"
#include "graph/task_state.hpp"
#include "graph/value.hpp"

namespace tessera {

class ResultSink;

// The scheduler a sink reports releases to; owned by the cluster (or the remote connection), which
// resets it when it shuts down. `released`, when set, replaces the message to `scheduler`.
struct SchedulerLink {
  caf::actor scheduler;
  std::function<void(const std::shared_ptr<ResultSink>&)> released{};
};

// Receives (sink, slot) for every slot that reaches a final state; as_completed listens to these.
struct CompletionQueue {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::pair<const void*, std::uint32_t>> finished;
};

class ResultSink : public std::enable_shared_from_this<ResultSink> {
 public:
  using Delivery = tessera::Delivery;

  // Every slot starts with one reference, owned by whoever created the sink. `watches` say which
  // task each slot stands for (sorted by first_slot).
  ResultSink(std::uint32_t size, std::weak_ptr<const SchedulerLink> link, std::vector<Watch> watches);
  virtual ~ResultSink() = default;
  std::uint32_t size() const { return size_; }
  const std::vector<Watch>& watches() const { return watches_; }
  // A number the owner gives the sink (a remote client's table id). Set once, before it is shared.
  void set_tag(std::uint64_t tag) { tag_ = tag; }
  std::uint64_t tag() const { return tag_; }
  // The task a slot stands for.
  TaskRef task(std::uint32_t slot) const;

  // Scheduler side. A sink standing for a remote client's table forwards instead of storing.
  virtual void deliver(std::vector<Delivery>& batch);
  std::vector<std::uint32_t> take_released();

  // Client side.
  TaskState state(std::uint32_t slot) const;
  // Waits until the slot is final; false when the deadline passed first.
  bool wait(std::uint32_t slot, std::chrono::steady_clock::time_point deadline =
                                    std::chrono::steady_clock::time_point::max()) const;
  // Waits for the slot; returns its value or throws its TaskFailed. A value held on its worker is
  // fetched from there, each time it is asked for (the client keeps no copy).
  Value result(std::uint32_t slot) const;
  // Whether a done slot's value stayed on its worker.
  bool held(std::uint32_t slot) const;
  // How held values are fetched; set by the backend that made the sink, before it is shared.
  using Fetcher = std::function<Value(TaskRef)>;
  void set_fetcher(Fetcher fetch) { fetch_ = std::move(fetch); }
  std::shared_ptr<const TaskFailed> error(std::uint32_t slot) const;
  void hold(std::uint32_t slot);
  void release(std::uint32_t slot);
  void listen(const std::shared_ptr<CompletionQueue>& queue);

  // Connection side (a remote client's table). Every slot is final and none is held on a worker: nothing
  // of it would be lost with the scheduler.
  bool settled() const;
  // After a reconnect to a scheduler that restarted: done slots whose value stayed on a worker wait
  // again (the submission is sent again, and the worker no longer has them).
  void reopen_held();
  // The connection is gone for good: every slot not final fails, and asking it throws ConnectionLost.
  void lose(const std::string& why);

 private:
  void notify_scheduler();
  const std::uint32_t size_;
  std::weak_ptr<const SchedulerLink> link_;
  std::vector<Watch> watches_;
  std::uint64_t tag_ = 0;
  std::unique_ptr<std::atomic<std::uint32_t>[]> references_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<TaskState> states_;
  std::vector<Value> values_;
  std::vector<std::shared_ptr<const TaskFailed>> errors_;  // sized on first failure
  std::vector<bool> held_;                                 // sized on first held value
  Fetcher fetch_;
  std::vector<std::weak_ptr<CompletionQueue>> listeners_;
  std::uint32_t open_slots_ = 0, held_slots_ = 0;  // not final; done and held on a worker
  std::shared_ptr<const TaskFailed> lost_;         // set by lose(): the error of the slots it failed

  std::mutex release_mutex_;
  std::vector<std::uint32_t> released_;
};

}  // namespace tessera
