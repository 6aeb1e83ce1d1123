// The generator actor's protocol: its stream says how many sets it can run at once, passes each result
// once it is durable, says when no more sets are wanted (its client closed it), and when the stream has
// ended: a message after the last results, so the generator is told each of them before it goes.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <vector>

#include "actors/messages.hpp"

namespace tessera::protocols {

using generator_actor_type =
    caf::typed_actor<caf::reacts_to<generator_slots_atom, std::uint32_t>,
                     caf::reacts_to<generator_tell_atom, std::vector<StreamResult>>,
                     caf::reacts_to<generator_stop_atom>, caf::reacts_to<generator_end_atom>>;

}  // namespace tessera::protocols

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::StreamResult>)
