// How the scheduler sizes the work it places on each worker.
#pragma once

#include <cstdint>

namespace tessera {

struct SchedulerOptions {
  // How much queued work (in seconds of measured task time) each compute thread may hold beyond the
  // task it runs: small keeps load balanced, large amortises messages for tiny tasks. Default 2 ms.
  double backlog_seconds_per_thread = 0.002;
  // Tasks one worker may hold per thread when nothing is known yet about an operation's task duration.
  // Default 2.
  std::uint32_t initial_tasks_per_thread = 2;
};

}  // namespace tessera
