// The GLM service of a worker: for each fit with partitions here it gathers the held (X, y) results the
// fit names (asking the worker for them: references, not copies), spawns the fit's partition actor over
// them, and hands it the fit's rounds until the fit is released.
#pragma once

#include <caf/all.hpp>
#include <memory>

#include "actors/compute_pool.hpp"
#include "actors/protocols/worker_services.hpp"

namespace tessera {

// `worker` answers fetch_atom for held results; answers that have no actor of this process to go to go
// to `scheduler` (in a worker process, its proxy over the connection).
protocols::glm_service_type spawn_glm_service(caf::actor_system& system, caf::actor worker,
                                              caf::actor scheduler, std::shared_ptr<ComputePool> pool);

}  // namespace tessera
