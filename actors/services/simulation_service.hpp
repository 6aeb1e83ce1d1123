// The simulation service of a worker: it keeps one simulation pool per (simulation, pool size, config)
// that streams use here, built on the first job that needs it, and answers a job for a simulation this
// process does not have with one error record per parameter set.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>

#include "actors/compute_pool.hpp"
#include "actors/protocols/worker_services.hpp"

namespace tessera {

// `name`: the worker's, named in error records (default "worker-<id>" once welcomed).
protocols::simulation_service_type spawn_simulation_service(caf::actor_system& system,
                                                            std::shared_ptr<ComputePool> pool,
                                                            std::string name);

}  // namespace tessera
