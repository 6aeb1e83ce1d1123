// How the scheduler sizes the work it places on each worker, and how long it waits for a worker that
// holds work and finishes none of it.
#pragma once

#include <chrono>
#include <cstdint>

namespace tessera {

struct SchedulerOptions {
  // How much queued work (in seconds of measured task time) each compute thread may hold beyond the
  // task it runs: small keeps load balanced, large amortises messages for tiny tasks. Default 2 ms.
  double backlog_seconds_per_thread = 0.002;
  // Tasks one worker may hold per thread when nothing is known yet about an operation's task duration.
  // Default 2.
  std::uint32_t initial_tasks_per_thread = 2;
  // The progress watchdog: a worker that holds work it can run (placed tasks whose inputs are all
  // computed, or a stream's simulation jobs) and finishes none of it for this long is declared stalled.
  // It is then treated as lost: its work runs again elsewhere and nothing more is placed on it. Only
  // finished work counts as progress, so one task or simulation job that genuinely runs longer than this
  // on an otherwise quiet worker is taken for a stall too; that is why the default is generous. Keep it
  // well above the longest task. 0 turns the watchdog off. Default 300 s (`scheduler.progress_timeout`).
  std::chrono::milliseconds progress_timeout{std::chrono::seconds(300)};
};

}  // namespace tessera
