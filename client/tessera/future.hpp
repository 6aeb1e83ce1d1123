// Future<T>: a handle on one task's result that starts running at once (client.submit / client.map).
// Copies share the result; when the last handle on a result goes, the worker frees it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "actors/result_sink.hpp"
#include "graph/codec.hpp"
#include "graph/operation.hpp"

namespace tessera {

template <class T>
class Future {
 public:
  using value_type = T;

  Future() = default;
  // Takes over the reference the sink's creator holds on `slot`.
  Future(std::shared_ptr<ResultSink> sink, std::uint32_t slot) : sink_(std::move(sink)), slot_(slot) {}
  Future(const Future& other) : sink_(other.sink_), slot_(other.slot_) {
    if (sink_) sink_->hold(slot_);
  }
  Future(Future&& other) noexcept : sink_(std::move(other.sink_)), slot_(other.slot_) {}
  Future& operator=(Future other) noexcept {
    std::swap(sink_, other.sink_);
    std::swap(slot_, other.slot_);
    return *this;
  }
  ~Future() {
    if (sink_) sink_->release(slot_);
  }

  bool valid() const { return sink_ != nullptr; }
  TaskState status() const { return sink_->state(slot_); }
  bool done() const { return is_final(status()); }
  // Waits at most `timeout`; true when the task has finished (successfully or not).
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return sink_->wait(slot_, std::chrono::steady_clock::now() + timeout);
  }
  void wait() const { sink_->wait(slot_); }
  // Waits; returns the result or throws the task's TaskFailed (function, key, message).
  T result() const {
    Value v = sink_->result(slot_);
    if constexpr (!std::is_void_v<T>) return from_value<T>(v);
  }
  // The failure, once the task erred or was cancelled; nullptr otherwise.
  std::shared_ptr<const TaskFailed> exception() const { return sink_->error(slot_); }
  // The task this future stands for; what passing a future as an argument refers to.
  TaskRef task() const { return sink_->task(slot_); }
  const std::shared_ptr<ResultSink>& sink() const { return sink_; }
  std::uint32_t slot() const { return slot_; }

 private:
  std::shared_ptr<ResultSink> sink_;
  std::uint32_t slot_ = 0;
};

template <class T>
struct is_future : std::false_type {};
template <class T>
struct is_future<Future<T>> : std::true_type {};

}  // namespace tessera
