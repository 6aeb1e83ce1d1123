// A worker's pool of simulation actors for one simulation (and one config): each simulation actor owns
// an instance, built once from the config on its first parameter set and kept between parameter sets
// (warm caches, loaded tables), and runs one job at a time on the worker's compute threads. The pool
// actor hands queued jobs to whichever simulation actor is free. Results go straight to the stream.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>

#include "actors/compute_pool.hpp"
#include "graph/simulation.hpp"

namespace tessera {

struct SimulationPoolArgs {
  const SimulationType* type = nullptr;
  std::shared_ptr<const Config> config;
  std::uint32_t size = 1;  // simulation actors
  std::uint32_t worker_id = 0;
  std::string node;  // named in error records
  std::shared_ptr<ComputePool> compute;
};

caf::actor spawn_simulation_pool(caf::actor_system& system, SimulationPoolArgs args);

}  // namespace tessera
