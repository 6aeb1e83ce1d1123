// The chunk store actor: a worker's disk work and memory watch. It spills past the target when told
// (spill_atom), reads back the spilled inputs of waiting tasks where memory has room (so compute threads
// do not wait on the disk), samples the process's memory every 20 ms to pause or resume the worker's
// compute pool, and reports the worker's memory to the scheduler every 0.5 s. Detached: RocksDB blocks.
#pragma once

#include <caf/all.hpp>
#include <memory>

#include "actors/chunk_store.hpp"
#include "actors/compute_pool.hpp"
#include "actors/protocols/chunk_store.hpp"
#include "actors/protocols/scheduler.hpp"

namespace tessera {

protocols::chunk_store_type spawn_chunk_store_actor(caf::actor_system& system,
                                                    std::shared_ptr<ChunkStore> store,
                                                    std::shared_ptr<ComputePool> pool,
                                                    protocols::scheduler_actor_type scheduler);

}  // namespace tessera
