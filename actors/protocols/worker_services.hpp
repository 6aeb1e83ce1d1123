// The protocols of the services a worker hosts beside its operations. Each service is an actor of its
// own, spawned with its worker, holding its own state; the worker hands it the messages of its kind
// (delegated, so answers go to the original sender) and tells it the worker's id and when to stop.
// A service that needs results the worker holds asks the worker (fetch_results_atom).
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <vector>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"

namespace tessera::protocols {

using worker_service_type =
    caf::typed_actor<caf::reacts_to<welcome_atom, std::uint32_t>, caf::reacts_to<shutdown_atom>>;

// Parameter sets of streams, run by simulation pools (one per simulation, pool size and config).
using simulation_service_type =
    worker_service_type::extend<caf::reacts_to<simulation_setup_atom, SimulationSetup>,
                                caf::reacts_to<simulation_end_atom, std::uint64_t>,
                                caf::reacts_to<simulate_atom, SimulationJob>,
                                caf::reacts_to<simulation_cancel_atom, SimulationCancel>>;

// GLM fits: a fit's partitions on this worker, kept resident in a partition actor per fit.
using glm_service_type = worker_service_type::extend<caf::reacts_to<glm_atom, GlmMessage>>;

}  // namespace tessera::protocols
