#include "actors/compute_pool.hpp"

#include "actors/out_of_memory.hpp"

#include <pthread.h>

#include "backends/dispatch.hpp"

#include <chrono>

namespace tessera {

namespace {
// Long enough to cover an operation actor's round trip (task done -> next task submitted) on this
// machine kind; measured: a chain of tiny tasks runs ~2x faster, throughput of independent tasks is
// unchanged.
constexpr auto kSpin = std::chrono::microseconds(50);
thread_local ComputePool* this_threads_pool = nullptr;
}  // namespace

ComputePool* ComputePool::of_this_thread() {
  return this_threads_pool;
}

ComputePool::ComputePool(std::size_t threads) {
  // Chunks run in parallel on these threads; BLAS's own threads would only oversubscribe the cores.
  backends::set_blas_threads(1);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] {
      ::pthread_setname_np(::pthread_self(), "tessera-compute");  // as perf, top -H and gdb show it
      this_threads_pool = this;
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

void ComputePool::submit(std::function<void()> job, std::uint64_t reserve, std::uint64_t unknown_results) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    jobs_.push_back(Job{std::move(job), reserve, unknown_results});
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

void ComputePool::set_memory_budget(std::uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    budget_.store(bytes, std::memory_order_relaxed);
  }
  wake_.notify_all();
}

std::shared_ptr<void> ComputePool::hand_over(const std::weak_ptr<ComputePool>& weak, std::uint64_t bytes) {
  auto pool = weak.lock();
  if (!pool || bytes == 0 || pool->budget_.load(std::memory_order_relaxed) == 0) return nullptr;
  {
    std::lock_guard lock(pool->mutex_);
    pool->handed_over_ += bytes;
  }
  // Holds the pool weakly: a report dropped after its worker ended releases nothing.
  struct Release {
    std::weak_ptr<ComputePool> weak;
    std::uint64_t bytes = 0;
    ~Release() {
      if (auto pool = weak.lock()) {
        {
          std::lock_guard lock(pool->mutex_);
          pool->handed_over_ -= bytes;
        }
        pool->wake_.notify_all();
      }
    }
  };
  auto release = std::make_shared<Release>();  // made in place: a copy's destructor would release early
  release->weak = weak;
  release->bytes = bytes;
  return release;
}

void ComputePool::note_value_bytes(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (bytes <= largest_value_) return;
  // Running jobs' unknown results grow with it (the claim keeps a waiting job's part).
  const std::uint64_t growth = (bytes - largest_value_) * running_unknown_;
  reserved_ += growth;
  claim_.fetch_add(growth, std::memory_order_relaxed);
  largest_value_ = bytes;
}

void ComputePool::set_held(std::uint64_t bytes, bool stuck) {
  const std::uint64_t before = held_.exchange(bytes, std::memory_order_relaxed);
  const bool was_stuck = stuck_.exchange(stuck, std::memory_order_relaxed);
  if ((bytes < before || (stuck && !was_stuck)) && waiting_for_room_.load(std::memory_order_relaxed)) {
    { std::lock_guard lock(mutex_); }  // a thread between its check and its wait sees the new value
    wake_.notify_all();
  }
}

bool ComputePool::admits() {
  switch (admission_.load(std::memory_order_relaxed)) {
    case Admission::open: {
      const std::uint64_t budget = budget_.load(std::memory_order_relaxed);
      if (budget == 0) return true;
      const Job& next = jobs_.front();
      const std::uint64_t held = held_.load(std::memory_order_relaxed);
      const std::uint64_t wanted = reservation(next);
      if (held + reserved_ + handed_over_ + wanted <= budget ||
          (running_ == 0 && (held == 0 || stuck_.load(std::memory_order_relaxed)))) {
        claim_.store(reserved_, std::memory_order_relaxed);
        waiting_for_room_.store(false, std::memory_order_relaxed);
        return true;
      }
      // Waits for room: the chunk store spills to make it, and running jobs end.
      claim_.store(reserved_ + wanted, std::memory_order_relaxed);
      waiting_for_room_.store(true, std::memory_order_relaxed);
      return false;
    }
    case Admission::one_at_a_time:
      return running_ == 0;
    case Admission::closed:
      return false;
  }
  return true;
}

void ComputePool::run() {
  for (;;) {
    Job job;
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
      reserved_ += reservation(job);
      running_unknown_ += job.unknown_results;
      claim_.store(reserved_, std::memory_order_relaxed);
    }
    try {
      job.run();
    } catch (const std::bad_alloc&) {
      // A task's own allocation fails the task; this one failed around it, and its report is lost.
      exit_out_of_memory("a compute thread, between tasks");
    }
    job.run = nullptr;  // what the job captured goes before the next one may start
    bool wake_next = false;
    {
      std::lock_guard lock(mutex_);
      --running_;
      reserved_ -= reservation(job);
      running_unknown_ -= job.unknown_results;
      claim_.store(reserved_, std::memory_order_relaxed);
      // A job waiting for one at a time, or for the room this one leaves.
      wake_next = !jobs_.empty() && (admission_.load(std::memory_order_relaxed) == Admission::one_at_a_time ||
                                     budget_.load(std::memory_order_relaxed) > 0);
    }
    if (wake_next) wake_.notify_one();
  }
}

}  // namespace tessera
