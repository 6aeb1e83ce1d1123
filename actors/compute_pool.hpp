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

class ComputePool {
 public:
  explicit ComputePool(std::size_t threads);
  // Stops the threads: jobs still queued are dropped, jobs running finish first.
  ~ComputePool();
  ComputePool(const ComputePool&) = delete;
  ComputePool& operator=(const ComputePool&) = delete;

  void submit(std::function<void()> job);
  std::size_t threads() const { return threads_.size(); }

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<bool> spinning_{false};
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tessera
