// The scheduler actor: accepts submitted graphs, places tasks on workers (data locality first, then
// load, in batches sized by how long the operation's tasks take), tracks every task's state, delivers
// wanted results to clients, cancels what depends on a failure, frees results nobody needs, and
// moves results off workers that retire.
#pragma once

#include <caf/all.hpp>
#include <memory>

#include "actors/worker_directory.hpp"

namespace tessera {

struct SchedulerOptions {
  // How much queued work (in seconds of measured task time) each compute thread may hold beyond the
  // task it runs: small keeps load balanced, large amortises messages for tiny tasks.
  double backlog_seconds_per_thread = 0.002;
  // Tasks one worker may hold when nothing is known yet about an operation's task duration.
  std::uint32_t initial_tasks_per_thread = 2;
  // Filled with each registered worker, for the workers of this process to find each other. Made by the
  // scheduler when not given.
  std::shared_ptr<WorkerDirectory> directory{};
};

caf::actor spawn_scheduler(caf::actor_system& system, SchedulerOptions options = {});

}  // namespace tessera
