#include "actors/result_sink.hpp"

#include <algorithm>
#include <stdexcept>

namespace tessera {

ResultSink::ResultSink(std::uint32_t size, std::weak_ptr<const SchedulerLink> link,
                       std::vector<Watch> watches)
    : size_(size),
      link_(std::move(link)),
      watches_(std::move(watches)),
      references_(new std::atomic<std::uint32_t>[size]),
      states_(size, TaskState::waiting),
      values_(size),
      open_slots_(size) {
  for (std::uint32_t i = 0; i < size; ++i) references_[i].store(1, std::memory_order_relaxed);
}

TaskRef ResultSink::task(std::uint32_t slot) const {
  auto it = std::upper_bound(watches_.begin(), watches_.end(), slot,
                             [](std::uint32_t s, const Watch& w) { return s < w.first_slot; });
  if (it == watches_.begin()) throw std::out_of_range("result slot " + std::to_string(slot) + " has no task");
  --it;
  return TaskRef{it->op, it->first_task + (slot - it->first_slot)};
}

void ResultSink::deliver(std::vector<Delivery>& batch) {
  std::vector<std::shared_ptr<CompletionQueue>> queues;
  std::vector<std::uint32_t> finished;
  {
    std::lock_guard lock(mutex_);
    for (auto& d : batch) {
      if (d.slot >= size_ || is_final(states_[d.slot])) continue;  // a remote peer may send anything
      finished.push_back(d.slot);
      states_[d.slot] = d.state;
      open_slots_ -= 1;
      if (d.state == TaskState::done) {
        values_[d.slot] = std::move(d.value);
        if (d.held) {
          if (held_.empty()) held_.resize(size_);
          held_[d.slot] = true;
          held_slots_ += 1;
        }
      } else {
        if (errors_.empty()) errors_.resize(size_);
        errors_[d.slot] = std::move(d.error);
      }
    }
    if (!listeners_.empty())
      for (auto& weak : listeners_)
        if (auto q = weak.lock()) queues.push_back(std::move(q));
  }
  changed_.notify_all();
  for (auto& q : queues) {
    {
      std::lock_guard lock(q->mutex);
      for (auto slot : finished) q->finished.emplace_back(this, slot);
    }
    q->changed.notify_all();
  }
}

std::vector<std::uint32_t> ResultSink::take_released() {
  std::lock_guard lock(release_mutex_);
  return std::exchange(released_, {});
}

TaskState ResultSink::state(std::uint32_t slot) const {
  std::lock_guard lock(mutex_);
  return states_[slot];
}

bool ResultSink::wait(std::uint32_t slot, std::chrono::steady_clock::time_point deadline) const {
  std::unique_lock lock(mutex_);
  return changed_.wait_until(lock, deadline, [&] { return is_final(states_[slot]); });
}

Value ResultSink::result(std::uint32_t slot) const {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return is_final(states_[slot]); });
  if (states_[slot] != TaskState::done) {
    if (lost_ && errors_[slot] == lost_) throw ConnectionLost(lost_->message());
    // A new one, not a copy: a copy of std::runtime_error shares its message's buffer with the original,
    // which the thread that drops the sink frees (a race ThreadSanitizer sees through libstdc++).
    const TaskFailed& failed = *errors_[slot];
    throw TaskFailed(failed.function(), failed.key(), failed.message(), failed.cancelled());
  }
  if (held_.empty() || !held_[slot]) return values_[slot];
  lock.unlock();
  if (!fetch_)
    throw std::logic_error("result slot " + std::to_string(slot) +
                           " is held on a worker, and nothing fetches it");
  return fetch_(task(slot));
}

bool ResultSink::held(std::uint32_t slot) const {
  std::lock_guard lock(mutex_);
  return !held_.empty() && held_[slot];
}

std::shared_ptr<const TaskFailed> ResultSink::error(std::uint32_t slot) const {
  std::lock_guard lock(mutex_);
  return errors_.empty() ? nullptr : errors_[slot];
}

void ResultSink::hold(std::uint32_t slot) {
  references_[slot].fetch_add(1, std::memory_order_relaxed);
}

void ResultSink::release(std::uint32_t slot) {
  if (references_[slot].fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  bool first;
  {
    std::lock_guard lock(release_mutex_);
    first = released_.empty();
    released_.push_back(slot);
  }
  // One message per burst: the scheduler drains everything released by the time it reads it.
  if (first) notify_scheduler();
}

void ResultSink::notify_scheduler() {
  auto link = link_.lock();
  if (!link) return;
  if (link->released) {
    link->released(shared_from_this());
  } else {
    caf::anon_send(link->scheduler, release_atom::value, shared_from_this());
  }
}

bool ResultSink::settled() const {
  std::lock_guard lock(mutex_);
  return open_slots_ == 0 && held_slots_ == 0;
}

void ResultSink::reopen_held() {
  std::lock_guard lock(mutex_);
  if (held_slots_ == 0) return;
  for (std::uint32_t slot = 0; slot < size_; ++slot)
    if (held_[slot]) {
      held_[slot] = false;
      states_[slot] = TaskState::waiting;
      values_[slot] = Value{};
      open_slots_ += 1;
    }
  held_slots_ = 0;
}

void ResultSink::lose(const std::string& why) {
  std::vector<Delivery> failed;
  {
    std::lock_guard lock(mutex_);
    if (!lost_) lost_ = std::make_shared<const TaskFailed>(kLostConnectionFunction, "", why, false);
    for (std::uint32_t slot = 0; slot < size_; ++slot)
      if (!is_final(states_[slot])) failed.push_back(Delivery{slot, TaskState::erred, Value{}, lost_});
  }
  // Through deliver, so that waiters and as_completed listeners hear of it as of any failure.
  ResultSink::deliver(failed);
}

void ResultSink::listen(const std::shared_ptr<CompletionQueue>& queue) {
  std::vector<std::uint32_t> already;
  {
    std::lock_guard lock(mutex_);
    listeners_.push_back(queue);
    for (std::uint32_t i = 0; i < size_; ++i)
      if (is_final(states_[i])) already.push_back(i);
  }
  {
    std::lock_guard lock(queue->mutex);
    for (auto slot : already) queue->finished.emplace_back(this, slot);
  }
  queue->changed.notify_all();
}

}  // namespace tessera
