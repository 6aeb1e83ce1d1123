// What the scheduler reports about itself and its workers, for status displays, the CLI and tests.
#pragma once

#include <cstdint>
#include <string>

namespace tessera {

// A snapshot of the scheduler's counters.
struct SchedulerStatus {
  std::uint32_t workers = 0;           // live, not retiring
  std::uint32_t retiring_workers = 0;  // draining before they leave
  std::uint64_t operations = 0;        // live operation records
  std::uint64_t tasks_pending = 0;     // submitted, not yet final
  std::uint64_t results_held = 0;      // finished results still held on workers
  std::uint64_t tasks_done = 0;        // since start
  std::uint64_t tasks_erred = 0;
  std::uint64_t tasks_cancelled = 0;
  std::uint64_t tasks_stolen = 0;      // moved to an idle worker before they started
  std::uint64_t workers_lost = 0;      // declared dead (no heartbeat, or stalled)
  std::uint64_t workers_stalled = 0;   // of those: held work without progress for progress_timeout
  std::uint64_t tasks_recomputed = 0;  // lost with a worker and run again from lineage
};

// One worker, for `tessera workers`.
struct WorkerInfo {
  std::uint32_t id = 0;
  std::string name;
  std::string address;  // where its peers send it inputs; empty for a worker of the scheduler's process
  std::uint32_t threads = 0;
  std::uint64_t memory_limit = 0;
  std::uint64_t tasks_assigned = 0;  // placed on it, not finished
  bool retiring = false;
};

}  // namespace tessera
