// The stream actor's protocol: the client's parameter sets and close, the simulation pools' outcomes,
// and the scheduler's news of workers joining and leaving.
#pragma once

#include <caf/all.hpp>
#include <cstdint>

#include "actors/messages.hpp"

namespace tessera::protocols {

using stream_actor_type =
    caf::typed_actor<caf::reacts_to<stream_push_atom, StreamBatch>, caf::reacts_to<stream_close_atom>,
                     caf::reacts_to<simulated_atom, SimulationOutcome>,
                     caf::reacts_to<worker_joined_atom, StreamWorker>,
                     caf::reacts_to<worker_left_atom, std::uint32_t>>;

}  // namespace tessera::protocols
