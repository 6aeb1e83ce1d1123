// The worker actor: owns a compute pool of `threads` threads, a chunk store (with its store actor) that
// holds every result here, and one operation actor per operation that has tasks here. It routes the
// scheduler's assignments, subscriptions, releases and cancellations, and other workers' inputs, to the right
// operation actor, creating it on first use.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "actors/chunk_store.hpp"
#include "actors/worker_directory.hpp"

namespace tessera {

struct WorkerOptions {
  std::uint32_t threads = 1;  // compute threads: how many task functions run at once here
  std::shared_ptr<const WorkerDirectory> directory;  // where results for other workers go
  std::string name{};           // named in simulation error records; default "worker-<id>"
  std::uint32_t gpu_index = 0;  // with GPUs in the process, this worker uses device gpu_index mod count
  MemoryOptions memory{};       // its memory limit, thresholds and where it spills
};

caf::actor spawn_worker(caf::actor_system& system, caf::actor scheduler, WorkerOptions options);

}  // namespace tessera
