// The protocols of a GLM fit's actors. The solver (a blocking actor on its own thread, in the
// scheduler's process) receives only the partitions' answers and the scheduler's news of lost workers,
// all as GLM messages; a worker's partition actor receives the fit's rounds, its own compute jobs'
// outcomes, and its release.
#pragma once

#include <caf/all.hpp>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"

namespace tessera {
struct GlmPartOutcome;  // one partition's job, back to its partition actor (partition_actor.cpp)
using glm_part_atom = caf::atom_constant<caf::atom("glmpart")>;
}  // namespace tessera

namespace tessera::protocols {

using glm_solver_type = caf::typed_actor<caf::reacts_to<glm_atom, GlmMessage>>;

using glm_partition_type =
    caf::typed_actor<caf::reacts_to<glm_atom, GlmMessage>, caf::reacts_to<glm_part_atom, GlmPartOutcome>,
                     caf::reacts_to<shutdown_atom>>;

}  // namespace tessera::protocols
