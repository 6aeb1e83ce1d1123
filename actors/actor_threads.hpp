// The configuration of an actor system's threads (CAF's work-stealing scheduler), shared by the embedded
// cluster and worker node processes.
#pragma once

#include <caf/actor_system_config.hpp>
#include <cstddef>

#include "scheduling/scheduler_options.hpp"

namespace tessera {

// `threads` actor threads that idle as `idle` says (scheduler.idle_threads).
void configure_actor_threads(caf::actor_system_config& config, std::size_t threads, IdleThreads idle);

}  // namespace tessera
