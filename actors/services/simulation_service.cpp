#include "actors/services/simulation_service.hpp"

#include <unordered_map>

#include "actors/protocols/simulation_pool.hpp"
#include "actors/simulation_pool.hpp"

namespace tessera {
namespace {

struct SimulationServiceState {
  std::uint32_t worker_id = 0;
  std::string name;
  std::shared_ptr<ComputePool> pool;
  // Streams with the same settings share a pool.
  std::unordered_map<std::string, caf::actor> pools;
};

using SimulationService = protocols::simulation_service_type::stateful_base<SimulationServiceState>;

std::string pool_key(const SimulationJob& job) {
  std::string key = job.simulation + "/" + std::to_string(job.pool_size);
  if (job.config)
    for (const auto& [name, value] : job.config->entries())
      key += "/" + name + "=" + std::to_string(value.content_hash());
  return key;
}

protocols::simulation_service_type::behavior_type simulation_service(SimulationService* self,
                                                                     std::shared_ptr<ComputePool> pool,
                                                                     std::string name) {
  self->state.pool = std::move(pool);
  self->state.name = std::move(name);
  return {
      [=](welcome_atom, std::uint32_t id) {
        self->state.worker_id = id;
        if (self->state.name.empty()) self->state.name = "worker-" + std::to_string(id);
      },
      [=](simulate_atom, SimulationJob& job) {
        auto& st = self->state;
        auto key = pool_key(job);
        auto it = st.pools.find(key);
        if (it == st.pools.end()) {
          const SimulationType* type = SimulationRegistry::global().find(job.simulation);
          if (!type) {
            // The stream checked the name where it was opened; this worker lacks the plugin.
            SimulationOutcome outcome{st.worker_id, job.stream_id, {}, 0};
            for (auto id : job.ids)
              outcome.records.push_back(StreamRecord{
                  id, Value{}, true, "simulation '" + job.simulation + "' is not registered on " + st.name,
                  st.name});
            caf::anon_send(job.stream, simulated_atom::value, std::move(outcome));
            return;
          }
          const std::uint32_t size = job.pool_size ? job.pool_size : st.pool->threads();
          auto spawned = spawn_simulation_pool(
              self->home_system(),
              SimulationPoolArgs{type, job.config, size, st.worker_id, st.name, st.pool});
          it = st.pools.emplace(std::move(key), spawned).first;
        }
        caf::anon_send(it->second, simulate_atom::value, std::move(job));
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
                                                            std::string name) {
  return system.spawn(simulation_service, std::move(pool), std::move(name));
}

}  // namespace tessera
