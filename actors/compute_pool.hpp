// ComputePool: a worker's `threads_per_worker` compute threads. Task functions run here, never on CAF's
// scheduler threads, so a function that blocks or sleeps does not stall message handling.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

// Whether the pool starts queued jobs: all of them, one at a time (only when none is running), or none.
// A worker's chunk store closes it while memory is above the pause fraction and spilling can still free
// some, and lets one job at a time through when nothing is left to spill, so that a worker slows down but
// never stops for good.
enum class Admission : std::uint8_t { open, one_at_a_time, closed };

class ComputePool {
 public:
  explicit ComputePool(std::size_t threads);
  // Stops the threads: jobs still queued are dropped, jobs running finish first.
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  void submit(std::function<void()> job);
  std::size_t threads() const { return threads_.size(); }
  void set_admission(Admission admission);
  Admission admission() const { return admission_.load(std::memory_order_relaxed); }

 private:
  void run();
  bool admits() const;  // with mutex_ held
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<bool> spinning_{false};
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::size_t running_ = 0;  // jobs being run, with mutex_ held
  std::atomic<Admission> admission_{Admission::open};
  std::vector<std::thread> threads_;
};

}  // namespace tessera
