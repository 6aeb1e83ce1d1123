// The protocols of a worker's simulation pool: the pool takes jobs and hands each to a free simulation
// actor, which runs it and says it is idle again.
#pragma once

#include <caf/all.hpp>
#include <cstdint>

#include "actors/messages.hpp"

namespace tessera::protocols {

using simulation_pool_type = caf::typed_actor<caf::reacts_to<simulate_atom, SimulationJob>,
                                              caf::reacts_to<simulation_cancel_atom, SimulationCancel>,
                                              caf::reacts_to<idle_atom, std::uint32_t>,  // from its actors
                                              caf::reacts_to<shutdown_atom>>;

using simulation_actor_type =
    caf::typed_actor<caf::reacts_to<simulate_atom, SimulationJob>,
                     caf::reacts_to<simulation_cancel_atom, SimulationCancel>,  // stop what it runs of these
                     caf::reacts_to<simulation_timeout_atom, std::uint64_t>,    // to itself: check the clock
                     caf::reacts_to<shutdown_atom>>;

}  // namespace tessera::protocols
