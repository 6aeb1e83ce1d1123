// The chunk store actor's protocol: one per worker, on its own thread, doing the worker's disk work for
// its ChunkStore and watching its memory. Implemented by actors/chunk_store_actor.cpp.
#pragma once

#include <caf/all.hpp>
#include <cstdint>

#include "actors/messages.hpp"

namespace tessera::protocols {

using chunk_store_type = caf::typed_actor<
    // Its worker: the id it was given (reports name it), and that it leaves.
    caf::reacts_to<welcome_atom, std::uint32_t>, caf::reacts_to<shutdown_atom>,
    // Operation actors: memory passed the target, or records on disk were let go.
    caf::reacts_to<spill_atom>,
    // Its own timer: memory is sampled, the compute pool paused or resumed, the scheduler told.
    caf::reacts_to<tick_atom>>;

}  // namespace tessera::protocols
