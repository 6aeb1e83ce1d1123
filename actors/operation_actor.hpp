// The operation actor: one per operation (graph layer) on each worker that runs some of its tasks. It
// receives its tasks' inputs as messages, fires a task when its last input arrives, runs it on the
// worker's compute pool, keeps the result in the worker's chunk store, sends it straight to the tasks that
// need it (on this worker or another), and reports finished tasks to the scheduler in batches.
#pragma once

#include <caf/all.hpp>
#include <memory>

#include "actors/chunk_store.hpp"
#include "actors/compute_pool.hpp"
#include "actors/messages.hpp"
#include "actors/protocols/chunk_store.hpp"
#include "actors/protocols/gpu_device.hpp"
#include "actors/protocols/operation.hpp"
#include "actors/protocols/scheduler.hpp"
#include "actors/protocols/worker.hpp"
#include "actors/worker_directory.hpp"

namespace tessera {

struct OperationActorArgs {
  OperationPtr op;
  std::uint32_t worker_id;
  protocols::input_target_type worker;  // its own worker: inputs for tasks here
  protocols::scheduler_actor_type scheduler;
  std::shared_ptr<ComputePool> pool;
  std::shared_ptr<const WorkerDirectory> directory;  // where results for other workers go
  protocols::gpu_device_type gpu;                    // the worker's GPU device actor; invalid without a GPU
  std::shared_ptr<ChunkStore> store;                 // where its results and input copies are held
  protocols::chunk_store_type store_actor;           // told when the store has disk work
};

protocols::operation_actor_type spawn_operation_actor(caf::actor_system& system, OperationActorArgs args);

}  // namespace tessera
