// A worker's pool of simulation actors for one simulation (and one config, isolation and timeout): each
// simulation actor owns an instance, built once from the config on its first parameter set and kept
// between parameter sets (warm caches, loaded tables), and runs one job at a time on the worker's compute
// threads. Under process isolation the instance lives in a child process the actor supervises
// (actors/simulation_process.hpp), and the compute thread only feeds it. The pool actor hands queued
// jobs to whichever simulation actor is free; one whose instance lives in a process also holds a second
// job, started by the same compute thread the moment the first ends (the pool takes it back for an
// actor with nothing to do). Results go straight to the stream.
//
// A timeout under thread isolation cannot stop the user's code: the actor answers the stream at once
// (the set failed, the rest of its job back unrun) and stays busy until the run returns, its result then
// discarded. Each hung set costs one simulation actor and its compute thread for as long as it hangs.
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <vector>

#include "actors/compute_pool.hpp"
#include "graph/simulation.hpp"
#include "graph/stream_record.hpp"

namespace tessera {

struct SimulationPoolArgs {
  const SimulationType* type = nullptr;
  // A program's type, made from its stream's setup (type points into it): the pool keeps it alive.
  std::shared_ptr<const SimulationType> owned_type{};
  // Where a program's sets get their working directories (the worker's data_dir/runs, or a temporary one).
  std::string runs_dir{};
  std::shared_ptr<const Config> config;
  std::uint32_t size = 1;  // simulation actors
  std::uint32_t worker_id = 0;
  std::string node;  // named in error records
  std::shared_ptr<ComputePool> compute;
  Isolation isolation = Isolation::thread;
  double timeout_seconds = 0;  // per set; 0: none
  // For a simulation that declares gpus: the worker's devices, `type->gpus` of them to each simulation
  // actor in turn (the service sizes the pool so that none is shared).
  std::vector<int> gpus{};
};

caf::actor spawn_simulation_pool(caf::actor_system& system, SimulationPoolArgs args);

}  // namespace tessera
