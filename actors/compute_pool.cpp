#include "actors/compute_pool.hpp"

#include "backends/dispatch.hpp"

#include <chrono>

namespace tessera {

namespace {
// Long enough to cover an operation actor's round trip (task done -> next task submitted) on this
// machine kind; measured: a chain of tiny tasks runs ~2x faster, throughput of independent tasks is
// unchanged.
constexpr auto kSpin = std::chrono::microseconds(50);
}  // namespace

ComputePool::ComputePool(std::size_t threads) {
  // Chunks run in parallel on these threads; BLAS's own threads would only oversubscribe the cores.
  backends::set_blas_threads(1);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

ComputePool::~ComputePool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ComputePool::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(std::move(job));
    queued_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_one();
}

void ComputePool::run() {
  for (;;) {
    std::function<void()> job;
    // One idle thread at a time polls briefly before sleeping: a dependent task submitted right after
    // this one finished starts without a futex wake-up (chains of tiny tasks).
    if (queued_.load(std::memory_order_acquire) == 0 &&
        !spinning_.exchange(true, std::memory_order_acq_rel)) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      while (queued_.load(std::memory_order_acquire) == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::yield();
      spinning_.store(false, std::memory_order_release);
    }
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
    }
    job();
  }
}

}  // namespace tessera
