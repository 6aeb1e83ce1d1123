#include "actors/services/simulation_service.hpp"

#include <algorithm>
#include <unordered_map>

#include "actors/protocols/simulation_pool.hpp"
#include "actors/simulation_pool.hpp"
#include "actors/stray_errors.hpp"
#include "graph/definition_identity.hpp"
#include "programs/program_simulation.hpp"

namespace tessera {
namespace {

struct SimulationServiceState {
  std::uint32_t worker_id = 0;
  std::string name;
  std::shared_ptr<ComputePool> pool;
  std::vector<int> gpus;
  std::string runs_dir;
  // What each stream's jobs share, from its setup, with its pool's key (computed once, at the setup):
  // streams with the same settings share a pool.
  struct Stream {
    SimulationSetup setup;
    std::string pool_key;
  };
  std::unordered_map<std::uint64_t, Stream> streams;
  std::unordered_map<std::string, caf::actor> pools;
  std::unordered_map<std::uint64_t, caf::actor> pool_of;  // the pool each stream's jobs went to
};

using SimulationService = protocols::simulation_service_type::stateful_base<SimulationServiceState>;

std::string pool_key(const SimulationSetup& setup) {
  std::string key = setup.simulation + "/" + std::to_string(setup.pool_size) + "/" +
                    isolation_name(setup.isolation) + "/" + std::to_string(setup.timeout_seconds);
  if (setup.config)
    for (const auto& [name, value] : setup.config->entries())
      key += "/" + name + "=" + std::to_string(value.content_hash());
  // Two declarations under one name (a scheduler restarted with another config) never share a pool.
  if (setup.program) key += "/program:" + program_spec_digest(*setup.program);
  return key;
}

protocols::simulation_service_type::behavior_type simulation_service(SimulationService* self,
                                                                     std::shared_ptr<ComputePool> pool,
                                                                     std::string name, std::vector<int> gpus,
                                                                     std::string runs_dir) {
  survive_stray_errors(self, "simulation service of " + name);
  self->state.pool = std::move(pool);
  self->state.name = std::move(name);
  self->state.gpus = std::move(gpus);
  self->state.runs_dir = std::move(runs_dir);
  return {
      [=](welcome_atom, std::uint32_t id) {
        self->state.worker_id = id;
        if (self->state.name.empty()) self->state.name = "worker-" + std::to_string(id);
      },
      [=](simulation_setup_atom, SimulationSetup& setup) {
        auto key = pool_key(setup);
        const auto id = setup.stream_id;
        self->state.streams[id] = SimulationServiceState::Stream{std::move(setup), std::move(key)};
      },
      [=](simulation_end_atom, std::uint64_t stream) {
        self->state.streams.erase(stream);
        self->state.pool_of.erase(stream);
      },
      [=](simulate_atom, SimulationJob& job) {
        auto& st = self->state;
        // Every parameter set of a job this worker cannot run gets an error record.
        const auto refuse = [&](const std::string& why) {
          SimulationOutcome outcome{st.worker_id, job.stream_id, {}, 0};
          for (auto id : job.ids)
            outcome.records.push_back(StreamRecord{id, Value{}, true, why, st.name, Failure::error});
          caf::anon_send(job.stream, simulated_atom::value, std::move(outcome));
        };
        const auto stream = st.streams.find(job.stream_id);
        if (stream == st.streams.end())
          return refuse("stream " + std::to_string(job.stream_id) + " was not set up on " + st.name);
        const SimulationSetup& setup = stream->second.setup;
        auto it = st.pools.find(stream->second.pool_key);
        if (it == st.pools.end()) {
          // A program runs as the scheduler declared it; a compiled simulation needs this process's plugin.
          std::shared_ptr<const SimulationType> owned;
          if (setup.program)
            owned = std::make_shared<const SimulationType>(
                programs::program_simulation_type(setup.simulation, setup.program));
          const SimulationType* type =
              owned ? owned.get() : SimulationRegistry::global().find(setup.simulation);
          // The stream checked the name where it was opened; this worker lacks the plugin.
          if (!type) return refuse("simulation '" + setup.simulation + "' is not registered on " + st.name);
          // A compiled simulation this worker defines differently from the scheduler runs nowhere here:
          // its sets go back unrun, to the workers that run the scheduler's.
          if (!owned && !setup.identity.empty() && setup.identity != type->identity) {
            SimulationOutcome outcome{st.worker_id, job.stream_id, {}, 0, job.ids};
            outcome.unavailable = st.name + ": " +
                                  definitions_differ("simulation", type->name, "the scheduler",
                                                     setup.identity, st.name, type->identity);
            caf::anon_send(job.stream, simulated_atom::value, std::move(outcome));
            return;
          }
          // A program set occupies ranks x threads cores: one bigger than this worker could never start.
          if (type->program && type->threads > st.pool->threads())
            return refuse("simulation '" + type->name + "' needs " + std::to_string(type->threads) +
                          " cores per set (ranks " + std::to_string(type->program->ranks) + " x threads " +
                          std::to_string(type->program->threads) + "); " + st.name + " has " +
                          std::to_string(st.pool->threads()) + " compute thread" +
                          (st.pool->threads() == 1 ? "" : "s"));
          if (type->gpus > st.gpus.size())
            return refuse("simulation '" + type->name + "' needs " + std::to_string(type->gpus) +
                          " GPU device" + (type->gpus == 1 ? "" : "s") + " per instance; " + st.name +
                          " has " + (st.gpus.empty() ? "none" : std::to_string(st.gpus.size())) +
                          " (worker.gpus, or the devices found)");
          std::uint32_t size = setup.pool_size
                                   ? setup.pool_size
                                   : std::max<std::uint32_t>(1, st.pool->threads() / type->threads);
          if (type->gpus > 0)
            size = std::min<std::uint32_t>(size, static_cast<std::uint32_t>(st.gpus.size() / type->gpus));
          double timeout = setup.timeout_seconds;
          if (timeout <= 0 && type->program) timeout = type->program->timeout_seconds;
          SimulationPoolArgs args{type,         owned,   st.runs_dir, setup.config,    size,
                                  st.worker_id, st.name, st.pool,     setup.isolation, timeout};
          if (type->gpus > 0) args.gpus = st.gpus;
          auto spawned = spawn_simulation_pool(self->home_system(), std::move(args));
          it = st.pools.emplace(stream->second.pool_key, spawned).first;
        }
        st.pool_of[job.stream_id] = it->second;
        caf::anon_send(it->second, simulate_atom::value, std::move(job));
      },
      [=](simulation_cancel_atom, SimulationCancel& cancel) {
        auto it = self->state.pool_of.find(cancel.stream_id);
        if (it != self->state.pool_of.end())
          caf::anon_send(it->second, simulation_cancel_atom::value, std::move(cancel));
      },
      [=](shutdown_atom) {
        for (auto& [key, pool] : self->state.pools) caf::anon_send(pool, shutdown_atom::value);
        self->state.pools.clear();
        self->quit();
      },
  };
}

}  // namespace

protocols::simulation_service_type spawn_simulation_service(caf::actor_system& system,
                                                            std::shared_ptr<ComputePool> pool,
                                                            std::string name, std::vector<int> gpus,
                                                            std::string runs_dir) {
  return system.spawn(simulation_service, std::move(pool), std::move(name), std::move(gpus),
                      std::move(runs_dir));
}

}  // namespace tessera
