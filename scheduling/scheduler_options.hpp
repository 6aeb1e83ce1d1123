// How the scheduler sizes the work it places on each worker, and how long it waits for a worker that
// holds work and finishes none of it.
#pragma once

#include <chrono>
#include <cstdint>

namespace tessera {

// What an idle actor thread does (scheduler.idle_threads). `wait`: after a brief spin it blocks and the next
// message wakes it: each hand-off from a ZeroMQ, compute or client thread costs a wake-up (~10-20 us), and
// an idle node uses no CPU. `poll`: CAF's stock policy, sleeping 50 us between polls for about 25 ms after
// its last work before it blocks: idle threads steal work queued on busy ones sooner (within 250 us rather
// than 1 ms), which may help actors that hand each other much work, but each hand-off from outside waits
// out a sleep (p50 of one submit + result through one node here: 455 us poll, 269 us wait).
enum class IdleThreads : std::uint8_t { wait, poll };

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
  // How the runtime's actor threads idle (see IdleThreads). Default wait.
  IdleThreads idle_threads = IdleThreads::wait;
};

}  // namespace tessera
