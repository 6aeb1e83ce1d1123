#include "actors/compute_pool.hpp"

#include <pthread.h>

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
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] {
      ::pthread_setname_np(::pthread_self(), "tessera-compute");  // as perf, top -H and gdb show it
      run();
    });
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

void ComputePool::set_admission(Admission admission) {
  {
    std::lock_guard lock(mutex_);
    if (admission_.exchange(admission) == admission) return;
  }
  wake_.notify_all();
}

bool ComputePool::admits() const {
  switch (admission_.load(std::memory_order_relaxed)) {
    case Admission::open:
      return true;
    case Admission::one_at_a_time:
      return running_ == 0;
    case Admission::closed:
      return false;
  }
  return true;
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
      wake_.wait(lock, [this] { return stopping_ || (!jobs_.empty() && admits()); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      queued_.fetch_sub(1, std::memory_order_relaxed);
      ++running_;
    }
    job();
    job = nullptr;  // what the job captured goes before the next one may start
    bool wake_next = false;
    {
      std::lock_guard lock(mutex_);
      --running_;
      wake_next = admission_.load(std::memory_order_relaxed) == Admission::one_at_a_time && !jobs_.empty();
    }
    if (wake_next) wake_.notify_one();
  }
}

}  // namespace tessera
