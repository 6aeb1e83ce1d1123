// The simulation service of a worker: it keeps one simulation pool per (simulation, pool size, config)
// that streams use here, built on the first job that needs it, and answers a job for a simulation this
// process does not have, or one that needs more GPUs than this worker has, with one error record per
// parameter set. A pool has as many simulation actors as the worker's threads and devices allow for the
// simulation's declared threads and gpus (graph/simulation.hpp), unless the stream sets pool_size (which
// the devices still bound).
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute_pool.hpp"
#include "actors/protocols/worker_services.hpp"

namespace tessera {

// `name`: the worker's, named in error records (default "worker-<id>" once welcomed); `gpus`: the devices
// it hands to simulations that declare gpus; `runs_dir`: where program sets get their working directories
// (empty: a temporary directory of this process).
protocols::simulation_service_type spawn_simulation_service(caf::actor_system& system,
                                                            std::shared_ptr<ComputePool> pool,
                                                            std::string name, std::vector<int> gpus = {},
                                                            std::string runs_dir = {});

}  // namespace tessera
