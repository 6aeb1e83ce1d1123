// ComputePool: a worker's `threads_per_worker` compute threads. Task functions run here, never on CAF's
// scheduler threads, so a function that blocks or sleeps does not stall message handling.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
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

  // `reserve`: the bytes the job keeps in memory while it runs (its tasks' inputs and results). With a
  // memory budget set, a job starts only while what the chunk store holds (set_held), what the running
  // jobs reserve and its own reservation fit the budget, or when nothing runs and the store holds nothing
  // it could spill (so that a worker always makes progress); jobs start in the order submitted.
  // `unknown_results`: results of the job whose size nothing tells yet (the first tasks of an operation
  // without inputs), each reserved as large as the largest value seen, from when the job starts until it
  // ends, growing while it runs: the first tasks of x = random(...) were all queued, and the first two
  // started, before any had made a chunk; reserving a warm-up's 2 MB each, they left "room" that the
  // store read a spilled chunk back into (three 125 MiB chunks under a 256 MiB limit).
  void submit(std::function<void()> job, std::uint64_t reserve = 0, std::uint64_t unknown_results = 0);
  // The size of a value this worker's chunk store took: the largest is what an unknown result reserves.
  void note_value_bytes(std::uint64_t bytes);
  std::size_t threads() const { return threads_.size(); }
  // Jobs submitted and not started yet.
  std::size_t queued() const { return queued_.load(std::memory_order_acquire); }
  // From a job running on a pool's thread: that pool, which outlives the job; nullptr on any other thread.
  // A job that would run on and on (a simulation process's feed) hands its thread over through it.
  static ComputePool* of_this_thread();
  // 0: no budget (reservations are ignored).
  void set_memory_budget(std::uint64_t bytes);
  std::uint64_t memory_budget() const { return budget_.load(std::memory_order_relaxed); }
  // What the running jobs reserve, plus the reservation of the first job waiting for room: what the
  // chunk store makes room for by spilling.
  std::uint64_t memory_claim() const { return claim_.load(std::memory_order_relaxed); }
  // What the chunk store holds in memory and could spill; `stuck`: spilling fails, so nothing will come
  // down by waiting. A job waiting for room is woken when it falls.
  void set_held(std::uint64_t bytes, bool stuck);
  // A job's results, from its end until their owner has put them in the chunk store (and set_held counts
  // them): counted against the budget while the returned token lives. Without it the next job would start
  // in the gap, counting memory that is neither reserved nor held.
  static std::shared_ptr<void> hand_over(const std::weak_ptr<ComputePool>& pool, std::uint64_t bytes);
  void set_admission(Admission admission);
  Admission admission() const { return admission_.load(std::memory_order_relaxed); }

 private:
  void run();
  struct Job {
    std::function<void()> run;
    std::uint64_t reserve = 0;
    std::uint64_t unknown_results = 0;
  };
  // What a job reserves while it runs, at the largest value seen now (with mutex_ held).
  std::uint64_t reservation(const Job& job) const {
    return job.reserve + job.unknown_results * largest_value_;
  }
  bool admits();  // with mutex_ held; updates claim_
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<std::size_t> queued_{0};
  std::atomic<bool> spinning_{false};
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::size_t running_ = 0;            // jobs being run, with mutex_ held
  std::uint64_t reserved_ = 0;         // what they reserve, with mutex_ held
  std::uint64_t running_unknown_ = 0;  // their results of unknown size, with mutex_ held
  std::uint64_t largest_value_ = 0;    // note_value_bytes, with mutex_ held
  std::uint64_t handed_over_ = 0;      // results of ended jobs not yet in the chunk store, with mutex_ held
  std::atomic<std::uint64_t> budget_{0};
  std::atomic<std::uint64_t> claim_{0};
  std::atomic<std::uint64_t> held_{0};
  std::atomic<bool> stuck_{false};
  std::atomic<bool> waiting_for_room_{false};
  std::atomic<Admission> admission_{Admission::open};
  std::vector<std::thread> threads_;
};

}  // namespace tessera
