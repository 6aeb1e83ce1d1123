#include "actors/simulation_pool.hpp"

#include <chrono>
#include <deque>

#include "actors/messages.hpp"
#include "actors/protocols/simulation_pool.hpp"

namespace tessera {
namespace {

struct Instance {
  std::unique_ptr<Simulation> simulation;  // built on the first job, on a compute thread
  std::string construction_error;
};

struct SimulationState {
  std::shared_ptr<Instance> instance = std::make_shared<Instance>();
};

// One simulation actor: its instance runs one job at a time (the pool sends it one at a time).
protocols::simulation_actor_type::behavior_type simulation_actor(
    protocols::simulation_actor_type::stateful_pointer<SimulationState> self, SimulationPoolArgs args,
    caf::actor pool, std::uint32_t index) {
  return {
      [=](simulate_atom, SimulationJob& job) {
        auto instance = self->state.instance;
        // The job must not hold the compute pool: the last reference dropped on one of its own threads
        // would make the pool join itself.
        const SimulationType* type = args.type;
        auto config = args.config;
        const std::uint32_t worker_id = args.worker_id;
        const std::string node = args.node;
        args.compute->submit([type, config, worker_id, node, pool, index, instance, job = std::move(job)] {
          const auto start = std::chrono::steady_clock::now();
          if (!instance->simulation && instance->construction_error.empty()) {
            try {
              instance->simulation = type->make(*config);
            } catch (const std::exception& e) {
              instance->construction_error = e.what();
            } catch (...) {
              instance->construction_error = "unknown exception";
            }
          }
          SimulationOutcome outcome;
          outcome.worker = worker_id;
          outcome.stream_id = job.stream_id;
          outcome.records.reserve(job.ids.size());
          for (std::size_t i = 0; i < job.ids.size(); ++i) {
            StreamRecord record;
            record.id = job.ids[i];
            if (!instance->simulation) {
              record.failed = true;
              record.error =
                  "simulation '" + type->name + "' could not be built: " + instance->construction_error;
            } else {
              try {
                record.value = instance->simulation->run(job.parameters[i]);
              } catch (const std::exception& e) {
                record.failed = true;
                record.error = e.what();
              } catch (...) {
                record.failed = true;
                record.error = "unknown exception";
              }
            }
            if (record.failed) record.node = node;
            outcome.records.push_back(std::move(record));
          }
          outcome.busy_seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          caf::anon_send(job.stream, simulated_atom::value, std::move(outcome));
          caf::anon_send(pool, idle_atom::value, index);
        });
      },
      [=](shutdown_atom) { self->quit(); },
  };
}

struct PoolState {
  std::vector<protocols::simulation_actor_type> simulations;
  std::vector<std::uint32_t> free;
  std::deque<SimulationJob> queued;

  template <class Self>
  void dispatch(Self* self) {
    while (!free.empty() && !queued.empty()) {
      const std::uint32_t index = free.back();
      free.pop_back();
      self->send(simulations[index], simulate_atom::value, std::move(queued.front()));
      queued.pop_front();
    }
  }
};

protocols::simulation_pool_type::behavior_type pool_actor(
    protocols::simulation_pool_type::stateful_pointer<PoolState> self, SimulationPoolArgs args) {
  const auto me = caf::actor_cast<caf::actor>(self);
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(1, args.size); ++i) {
    self->state.simulations.push_back(self->spawn<caf::linked>(simulation_actor, args, me, i));
    self->state.free.push_back(i);
  }
  return {
      [=](simulate_atom, SimulationJob& job) {
        self->state.queued.push_back(std::move(job));
        self->state.dispatch(self);
      },
      [=](idle_atom, std::uint32_t index) {
        self->state.free.push_back(index);
        self->state.dispatch(self);
      },
      [=](shutdown_atom) {
        for (auto& s : self->state.simulations) self->send(s, shutdown_atom::value);
        self->quit();
      },
  };
}

}  // namespace

caf::actor spawn_simulation_pool(caf::actor_system& system, SimulationPoolArgs args) {
  return caf::actor_cast<caf::actor>(system.spawn(pool_actor, std::move(args)));
}

}  // namespace tessera
