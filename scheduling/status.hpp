// What the scheduler reports about itself and its workers, for status displays, the CLI and tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

// One worker's memory, as its chunk store last reported it (about every 0.5 s).
struct WorkerMemory {
  std::uint32_t worker = 0;
  std::uint64_t limit = 0;            // worker.memory_limit; 0: none
  std::uint64_t managed_bytes = 0;    // results (and inputs) it holds in memory
  std::uint64_t spilled_bytes = 0;    // results it holds on disk only
  std::uint64_t rss = 0;              // its process's resident bytes above the process's start
  std::uint64_t process_rss = 0;      // its process's resident bytes, as the system counts them (VmRSS)
  std::uint32_t process_workers = 1;  // workers sharing that process (and its resident bytes)
  std::uint64_t spills = 0;           // results written to disk
  std::uint64_t unspills = 0;         // results read back
  std::uint64_t spilled_total = 0;    // bytes written, over its life
  std::uint64_t unspilled_total = 0;
  double spill_seconds = 0;  // time spent writing and reading them
  double unspill_seconds = 0;
  std::uint64_t corrupt_records = 0;  // spilled records that came back damaged (recomputed)
  bool paused = false;                // starts no new task: memory above the pause fraction
  std::string spill_error{};          // the last spill that failed (worker, path, reason); empty if none

  double spill_mb_per_second() const { return spill_seconds > 0 ? spilled_total / spill_seconds / 1e6 : 0; }
  double unspill_mb_per_second() const {
    return unspill_seconds > 0 ? unspilled_total / unspill_seconds / 1e6 : 0;
  }
};

// A snapshot of the scheduler's counters.
struct SchedulerStatus {
  std::uint32_t workers = 0;           // live, not retiring
  std::uint32_t retiring_workers = 0;  // draining before they leave
  std::uint64_t operations = 0;        // live operation records
  std::uint64_t tasks_pending = 0;     // submitted, not yet final
  std::uint64_t results_held = 0;      // finished results still held on workers
  std::uint64_t tasks_done = 0;        // computed, since start (not those read from checkpoints)
  std::uint64_t tasks_erred = 0;
  std::uint64_t tasks_cancelled = 0;
  std::uint64_t tasks_stolen = 0;      // moved to an idle worker before they started
  std::uint64_t workers_lost = 0;      // declared dead (no heartbeat, or stalled)
  std::uint64_t workers_stalled = 0;   // of those: held work without progress for progress_timeout
  std::uint64_t tasks_recomputed = 0;  // lost with a worker and run again from lineage
  // Checkpoints (Submission::checkpoint): tasks whose result was read from one instead of computed,
  // results stored, their bytes and the time the writes took, records that failed their checksum (the
  // task was computed instead), and the last write the disk refused (empty if none).
  std::uint64_t tasks_from_checkpoint = 0;
  std::uint64_t checkpoints_written = 0;
  std::uint64_t checkpoint_bytes_written = 0;
  double checkpoint_write_seconds = 0;
  std::uint64_t checkpoints_corrupt = 0;
  std::string checkpoint_error{};
  std::uint64_t checkpoints_stored = 0;  // records in the store now
  // Streams' parameter sets the workers ran (simulation jobs, counted beside tasks), since start; failed
  // ones included in sets_done and counted again in sets_failed.
  std::uint64_t sets_done = 0;
  std::uint64_t sets_failed = 0;
  std::vector<WorkerMemory> memory{};  // one per live worker that has reported
};

// Tasks of one function by state, over the operations of it that are live and those already forgotten
// (finished and let go), for the dashboard's progress panel.
struct FunctionProgress {
  std::string function;
  std::uint64_t operations = 0;  // submitted since start
  std::uint64_t tasks = 0;
  std::uint64_t waiting = 0;     // not placed yet (inputs not ready, or no room)
  std::uint64_t processing = 0;  // placed on a worker, not finished
  std::uint64_t done = 0;
  std::uint64_t erred = 0;
  std::uint64_t cancelled = 0;
};

// One worker, for `tessera workers`.
struct WorkerInfo {
  std::uint32_t id = 0;
  std::string name;
  std::string address;  // where its peers send it inputs; empty for a worker of the scheduler's process
  std::uint32_t threads = 0;
  std::uint64_t memory_limit = 0;
  std::uint64_t tasks_assigned = 0;  // placed on it, not finished
  std::uint64_t sets_run = 0;        // streams' parameter sets it ran, since it joined
  bool retiring = false;
  WorkerMemory memory{};
};

}  // namespace tessera
