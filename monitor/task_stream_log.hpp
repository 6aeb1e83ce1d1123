// What the dashboard's task stream and rates show: the most recent runs, one entry per job a worker
// reported (worker, function or simulation, end, duration, count), in a ring of fixed size; the tasks and
// the parameter sets that finished in each of the last ten minutes' seconds; the per-task durations in a
// histogram; and the parameter sets each worker ran. Memory is bounded whatever the task count: a
// 10,000,000-task map fills the same ring as a 1,000-task one. Written by the scheduler actor for each
// report it takes and by stream actors for each simulation job, read by the dashboard and the status;
// thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "monitor/log_histogram.hpp"

namespace tessera::monitor {

struct TaskRun {
  std::uint32_t worker = 0;
  std::uint32_t function = 0;  // index into TaskStreamSnapshot::functions
  std::uint32_t tasks = 0;     // tasks (or parameter sets) the job ran, failed ones included
  std::uint32_t failed = 0;
  double finished_at = 0;  // seconds since the Unix epoch, on the worker's clock
  double seconds = 0;      // how long the job ran
  bool sets = false;       // a simulation job: `function` names the simulation, `tasks` are its sets
};

// A stream's parameter sets the workers ran, since the start.
struct SetTotals {
  std::uint64_t sets = 0;
  std::uint64_t failed = 0;
};

struct TaskStreamSnapshot {
  std::vector<TaskRun> runs;           // oldest first
  std::vector<std::string> functions;  // names, by TaskRun::function
  bool truncated = false;              // the window reaches back past the oldest run the ring holds
};

struct TaskTotals {
  std::uint64_t tasks = 0;    // tasks run, since start
  std::uint64_t failed = 0;   // of which threw
  std::uint64_t runs = 0;     // jobs reported
  double busy_seconds = 0;    // compute time they took
  LogHistogram task_seconds;  // each task's share of its job's time
};

class TaskStreamLog {
 public:
  static constexpr std::size_t kRuns = 1 << 14;
  static constexpr std::size_t kSeconds = 600;
  // Function names kept apart; past this many, runs of new ones are shown under kOtherFunctions.
  static constexpr std::size_t kFunctions = 256;
  static constexpr std::string_view kOtherFunctions = "(other functions)";

  // Runs are recorded once a dashboard asks for them (off by default: a cluster nobody watches pays
  // nothing per report).
  void enable() { enabled_.store(true, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  void record(std::uint32_t worker, std::string_view function, double finished_at, double seconds,
              std::uint32_t tasks, std::uint32_t failed);
  // A simulation job's parameter sets: always counted (rates, totals, per worker: the status shows them),
  // drawn in the task stream once enabled.
  void record_sets(std::uint32_t worker, std::string_view simulation, double finished_at, double seconds,
                   std::uint32_t sets, std::uint32_t failed);

  // Runs that finished after `since`, oldest first; at most the ring's worth.
  TaskStreamSnapshot runs_since(double since) const;
  // Tasks that finished in each of the `count` seconds up to the one `now` is in (oldest first; the last
  // is not over yet); count <= kSeconds.
  std::vector<std::uint64_t> per_second(double now, std::size_t count) const;
  TaskTotals totals() const;
  // Tasks per second over the 10 whole seconds before the one `now` is in.
  double recent_rate(double now) const;
  // The same for parameter sets.
  std::vector<std::uint64_t> sets_per_second(double now, std::size_t count) const;
  double recent_set_rate(double now) const;
  SetTotals set_totals() const;
  std::uint64_t sets_run_by(std::uint32_t worker) const;

 private:
  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;
  std::vector<TaskRun> ring_ = std::vector<TaskRun>(kRuns);
  std::uint64_t written_ = 0;  // runs ever recorded; ring_[written_ % kRuns] is the next
  std::vector<std::string> functions_;
  std::unordered_map<std::string, std::uint32_t> function_index_;
  struct Second {
    std::int64_t second = -1;
    std::uint64_t tasks = 0;
    std::uint64_t sets = 0;
  };
  std::vector<Second> seconds_ = std::vector<Second>(kSeconds);
  TaskTotals totals_;
  SetTotals set_totals_;
  std::map<std::uint32_t, std::uint64_t> sets_by_worker_;  // one entry per worker that ever ran sets

  std::uint32_t index_of(std::string_view function);
  Second& bucket_of(double finished_at);
  std::vector<std::uint64_t> series(double now, std::size_t count, std::uint64_t Second::*field) const;
  double recent(double now, std::uint64_t Second::*field) const;  // over the 10 whole seconds before now
};

}  // namespace tessera::monitor
