// The worker actor: owns a compute pool of `threads` threads, a chunk store (with its store actor) that
// holds every result here, and one operation actor per operation that has tasks here. It routes the
// scheduler's assignments, subscriptions, releases and cancellations, and other workers' inputs, to the right
// operation actor, creating it on first use.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/chunk_store.hpp"
#include "actors/worker_directory.hpp"

namespace tessera {

struct WorkerOptions {
  std::uint32_t threads = 1;  // compute threads: how many task functions run at once here
  std::shared_ptr<const WorkerDirectory> directory;  // where results for other workers go
  std::string name{};           // named in simulation error records; default "worker-<id>"
  std::uint32_t gpu_index = 0;  // with GPUs in the process, this worker uses device gpu_index mod count
  MemoryOptions memory{};       // its memory limit, thresholds and where it spills
  std::vector<int> simulation_gpus{};  // the devices it hands to simulations that declare gpus
  std::string runs_dir{};  // where program sets get working directories (empty: a temporary directory)
};

caf::actor spawn_worker(caf::actor_system& system, caf::actor scheduler, WorkerOptions options);

// The CUDA ordinals of the devices this process finds (none without a GPU or a CUDA build).
std::vector<int> devices_found();
// The devices worker `index` of `workers` hands to simulations: every workers-th from its own, or, when
// there are more workers than devices, a share of device index mod count.
std::vector<int> share_of_gpus(const std::vector<int>& devices, std::uint32_t index, std::uint32_t workers);

}  // namespace tessera
