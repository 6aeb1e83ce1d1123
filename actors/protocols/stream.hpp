// The stream actor's protocol: the client's parameter sets, close, cancel and reattach, the simulation pools'
// outcomes, the scheduler's news of workers joining and leaving, and its progress watchdog's question.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "actors/messages.hpp"

namespace tessera::protocols {

inline constexpr std::uint64_t kNotReopened = ~std::uint64_t{0};

using stream_actor_type = caf::typed_actor<
    caf::reacts_to<stream_push_atom, StreamBatch>, caf::reacts_to<stream_close_atom>,
    // Closed because its client is gone (why, kept in its record when its input had not ended).
    caf::reacts_to<stream_abandon_atom, std::string>,
    // A client resumes it (it was closed before its input ended): the ids it accepted, from which the
    // client pushes on, and the sets the client's sink takes over; kNotReopened once it has finished
    // (then it is resumed from the store).
    caf::replies_to<stream_reopen_atom, StreamReopen>::with<StreamReopened>,
    // Its own: what was written ahead since the last sync is made durable, then accepted.
    caf::reacts_to<stream_sync_atom>,
    // A client that reconnected; true once its stored results were sent again.
    caf::replies_to<stream_attach_atom, StreamAttach>::with<bool>,
    // Cancel sets; the answer goes to the request's reply.
    caf::reacts_to<stream_cancel_atom, StreamCancel>, caf::reacts_to<simulated_atom, SimulationOutcome>,
    caf::reacts_to<worker_joined_atom, StreamWorker>, caf::reacts_to<worker_left_atom, std::uint32_t>,
    // Its ensemble's generator failed: no more sets come, and the stream ends with this error.
    caf::reacts_to<generator_failed_atom, std::string>,
    // The scheduler's progress watchdog: simulation jobs in flight per worker, and
    // parameter sets each answered since it last asked.
    caf::replies_to<stream_progress_atom>::with<std::vector<StreamLoad>>>;

}  // namespace tessera::protocols

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::StreamLoad>)
