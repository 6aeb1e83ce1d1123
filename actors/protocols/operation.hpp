// The operation actor's protocol: what its worker forwards (assignments, inputs, subscriptions, drops,
// cancellations, steals, fetches of held results for GLM partitions), and what its compute jobs report.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <vector>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"

namespace tessera {
struct RanReport;  // a compute job's report to its operation actor (operation_actor.cpp)
}

namespace tessera::protocols {

using operation_actor_type =
    caf::typed_actor<caf::reacts_to<assign_atom, AssignRun>, caf::reacts_to<input_atom, InputBatch>,
                     caf::reacts_to<subscribe_atom, SubscribeBatch>, caf::reacts_to<drop_atom, SlotBatch>,
                     caf::reacts_to<cancel_slots_atom, SlotBatch>, caf::reacts_to<steal_atom, StealRequest>,
                     caf::replies_to<fetch_atom, std::vector<std::uint32_t>>::with<std::vector<Value>>,
                     caf::reacts_to<ran_atom, RanReport>, caf::reacts_to<shutdown_atom>>;

}  // namespace tessera::protocols
