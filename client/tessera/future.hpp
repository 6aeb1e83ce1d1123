// Future<T>: a handle on one task's result that starts running at once (client.submit / client.map).
// Copies share the result; when the last handle on a result goes, the worker frees it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "graph/codec.hpp"
#include "graph/errors.hpp"
#include "graph/operation.hpp"
#include "graph/task_state.hpp"
#include "graph/value.hpp"

namespace tessera {

class ResultSink;  // the engine's table of results a client asked for; opaque here

namespace detail {

// One counted reference on one slot of a result table: a copy holds the slot once more, and the slot is
// released when its last reference goes. Futures, and futures inside delayed graphs, are made of these.
class ResultHandle {
 public:
  ResultHandle() = default;
  // Adopts the reference the table's creator holds on `slot`.
  ResultHandle(std::shared_ptr<ResultSink> table, std::uint32_t slot) noexcept
      : table_(std::move(table)), slot_(slot) {}
  ResultHandle(const ResultHandle& other);
  ResultHandle(ResultHandle&& other) noexcept : table_(std::move(other.table_)), slot_(other.slot_) {}
  ResultHandle& operator=(ResultHandle other) noexcept {
    std::swap(table_, other.table_);
    std::swap(slot_, other.slot_);
    return *this;
  }
  ~ResultHandle();

  bool valid() const { return table_ != nullptr; }
  TaskState state() const;
  // Waits until the task is final; false when the deadline passed first.
  bool wait(
      std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) const;
  // Waits; the value, or the task's TaskFailed thrown.
  Value result() const;
  std::shared_ptr<const TaskFailed> error() const;
  TaskRef task() const;
  // Which table and slot: as_completed tells handles apart by these.
  ResultSink* table() const { return table_.get(); }
  std::uint32_t slot() const { return slot_; }

 private:
  std::shared_ptr<ResultSink> table_;
  std::uint32_t slot_ = 0;
};

}  // namespace detail

template <class T>
class Future {
 public:
  using value_type = T;

  Future() = default;
  explicit Future(detail::ResultHandle handle) : handle_(std::move(handle)) {}

  bool valid() const { return handle_.valid(); }
  TaskState status() const { return handle_.state(); }
  bool done() const { return is_final(status()); }
  // Waits at most `timeout`; true when the task has finished (successfully or not).
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return handle_.wait(std::chrono::steady_clock::now() + timeout);
  }
  void wait() const { handle_.wait(); }
  // Waits; returns the result or throws the task's TaskFailed (function, key, message).
  T result() const {
    Value v = handle_.result();
    if constexpr (!std::is_void_v<T>) return from_value<T>(v);
  }
  // The failure, once the task erred or was cancelled; nullptr otherwise.
  std::shared_ptr<const TaskFailed> exception() const { return handle_.error(); }
  // The task this future stands for; what passing a future as an argument refers to.
  TaskRef task() const { return handle_.task(); }
  // The reference this future holds (what a delayed graph or as_completed keeps of it).
  const detail::ResultHandle& handle() const { return handle_; }

 private:
  detail::ResultHandle handle_;
};

template <class T>
struct is_future : std::false_type {};
template <class T>
struct is_future<Future<T>> : std::true_type {};

}  // namespace tessera
