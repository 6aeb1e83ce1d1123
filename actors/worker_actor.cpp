#include "actors/worker_actor.hpp"

#include <unordered_map>
#include <unordered_set>

#include "actors/glm/messages.hpp"
#include "actors/glm/partition_actor.hpp"
#include "actors/gpu_device_actor.hpp"
#include "actors/messages.hpp"
#include "actors/operation_actor.hpp"
#include "actors/simulation_pool.hpp"
#include "backends/device_queue.hpp"

namespace tessera {
namespace {

struct WorkerState {
  std::uint32_t id = 0;
  caf::actor scheduler;
  std::shared_ptr<ComputePool> pool;
  caf::actor gpu;  // the GPU device actor, when this process has a GPU
  std::shared_ptr<const WorkerDirectory> directory;
  std::unordered_map<OpId, protocols::operation_actor_type> operations;
  // Inputs that arrived before this worker heard of their operation (they travel worker to worker,
  // the assignment travels from the scheduler: either may come first).
  std::unordered_map<OpId, std::vector<InputDelivery>> early_inputs;
  std::unordered_set<OpId> forgotten;
  std::string name;
  // Simulation pools by simulation, pool size and config: streams with the same settings share one.
  std::unordered_map<std::string, caf::actor> simulations;
  // GLM fits with partitions here, by session; and sessions released before their partitions loaded.
  std::unordered_map<std::uint64_t, caf::actor> glm_sessions;
  std::unordered_set<std::uint64_t> glm_released;
};

std::string pool_key(const SimulationJob& job) {
  std::string key = job.simulation + "/" + std::to_string(job.pool_size);
  if (job.config)
    for (const auto& [name, value] : job.config->entries())
      key += "/" + name + "=" + std::to_string(value.content_hash());
  return key;
}

using WorkerActor = caf::stateful_actor<WorkerState>;

protocols::operation_actor_type* find_operation(WorkerActor* self, OpId op) {
  auto it = self->state.operations.find(op);
  return it == self->state.operations.end() ? nullptr : &it->second;
}

void glm_load_failed(WorkerActor* self, const caf::actor& reply_to, std::uint64_t session,
                     const std::string& error) {
  self->send(reply_to, glm_atom::value, GlmMessage{session, GlmLoaded{self->state.id, error}});
}

// Collects the held results a GLM fit names (a request per operation) and spawns the fit's partition
// actor over them; it checks the data and answers `loaded`.
void glm_load(WorkerActor* self, std::uint64_t session, GlmLoad load) {
  GlmPartitionArgs args;
  // Answers go straight to the solver when it is an actor of this process (it sent the load); from a
  // worker process, through the scheduler's connection, which forwards them to it.
  if (auto sender = caf::actor_cast<caf::actor>(self->current_sender()))
    args.reply_to = std::move(sender);
  else
    args.reply_to = self->state.scheduler;
  std::unordered_map<OpId, std::vector<std::size_t>> by_op;  // positions in args.partitions
  std::unordered_map<OpId, std::vector<std::uint32_t>> slots;
  args.spec = std::move(load.spec);
  for (const auto& held : load.partitions) {
    by_op[held.op].push_back(args.partitions.size());
    slots[held.op].push_back(held.slot);
    args.partitions.push_back(GlmPartition{held.index, held.first_row, nullptr, nullptr});
  }
  args.session = session;
  args.worker_id = self->state.id;
  args.pool = self->state.pool;
  struct Gathering {
    GlmPartitionArgs args;
    std::size_t pending = 0;
    std::string error;
  };
  auto gathering = std::make_shared<Gathering>(Gathering{std::move(args), by_op.size(), {}});
  auto complete = [self, session, gathering] {
    if (--gathering->pending > 0) return;
    auto& st = self->state;
    const bool released = st.glm_released.erase(session) > 0;
    if (!gathering->error.empty())
      return glm_load_failed(self, gathering->args.reply_to, session, gathering->error);
    if (released) return;
    st.glm_sessions[session] = spawn_glm_partitions(self->home_system(), std::move(gathering->args));
  };
  for (auto& [op, positions] : by_op) {
    auto* target = find_operation(self, op);
    if (!target) {
      gathering->error = "glm: worker " + std::to_string(self->state.id) + " holds no result of operation " +
                         std::to_string(op) + " (was the data released?)";
      complete();
      continue;
    }
    self->request(*target, caf::infinite, fetch_atom::value, slots[op])
        .then(
            [gathering, complete, positions = positions](std::vector<Value>& values) {
              for (std::size_t k = 0; k < positions.size() && k < values.size(); ++k) {
                auto& part = gathering->args.partitions[positions[k]];
                try {
                  const auto& pair = values[k].as_list();
                  part.x = pair.at(0).as_chunk();
                  part.y = pair.at(1).as_chunk();
                } catch (const std::exception&) {
                  if (gathering->error.empty())
                    gathering->error = "glm: partition " + std::to_string(part.index) +
                                       " is not a finished (X, y) pair on this worker";
                }
              }
              complete();
            },
            [gathering, complete](caf::error& err) {
              if (gathering->error.empty())
                gathering->error = "glm: could not read the partitions: " + to_string(err);
              complete();
            });
  }
}

caf::behavior worker_actor(WorkerActor* self, caf::actor scheduler, WorkerOptions options) {
  self->state.scheduler = std::move(scheduler);
  self->state.pool = std::make_shared<ComputePool>(options.threads);
  // Workers share the process's GPUs: worker i uses device i mod count.
  if (const int devices = backends::device_count(); devices > 0)
    self->state.gpu = spawn_gpu_device_actor(
        self->home_system(), static_cast<int>(options.gpu_index % static_cast<std::uint32_t>(devices)));
  self->state.directory = options.directory;
  self->state.name = options.name;
  self->set_down_handler([](const caf::down_msg&) {});
  return {
      [=](welcome_atom, std::uint32_t id) {
        self->state.id = id;
        if (self->state.name.empty()) self->state.name = "worker-" + std::to_string(id);
      },
      [=](simulate_atom, SimulationJob& job) {
        auto& st = self->state;
        auto key = pool_key(job);
        auto it = st.simulations.find(key);
        if (it == st.simulations.end()) {
          const SimulationType* type = SimulationRegistry::global().find(job.simulation);
          if (!type) {
            // The stream checked the name where it was opened; this worker lacks the plugin.
            SimulationOutcome outcome{st.id, job.stream_id, {}, 0};
            for (auto id : job.ids)
              outcome.records.push_back(StreamRecord{
                  id, Value{}, true, "simulation '" + job.simulation + "' is not registered on " + st.name,
                  st.name});
            self->send(job.stream, simulated_atom::value, std::move(outcome));
            return;
          }
          const std::uint32_t size = job.pool_size ? job.pool_size : st.pool->threads();
          auto pool = spawn_simulation_pool(
              self->home_system(), SimulationPoolArgs{type, job.config, size, st.id, st.name, st.pool});
          it = st.simulations.emplace(std::move(key), pool).first;
        }
        self->send(it->second, simulate_atom::value, std::move(job));
      },
      // Peers of this process are found through the shared directory; a worker process's transport
      // handles notices about peers in other processes.
      [=](peer_atom, const PeerNotice&) {},
      [=](assign_atom, AssignBatch& batch) {
        auto& st = self->state;
        for (auto& run : batch.runs) {
          const OpId op = run.op->id();
          auto* target = find_operation(self, op);
          if (!target) {
            auto actor = spawn_operation_actor(
                self->home_system(), OperationActorArgs{run.op, st.id, caf::actor_cast<protocols::input_target_type>(self),
                                   caf::actor_cast<protocols::scheduler_actor_type>(st.scheduler), st.pool,
                                   st.directory, caf::actor_cast<protocols::gpu_device_type>(st.gpu)});
            target = &st.operations.emplace(op, std::move(actor)).first->second;
            if (auto early = st.early_inputs.find(op); early != st.early_inputs.end()) {
              self->send(*target, input_atom::value, InputBatch{std::move(early->second)});
              st.early_inputs.erase(early);
            }
          }
          self->send(*target, assign_atom::value, std::move(run));
        }
      },
      [=](subscribe_atom, SubscribeBatch& batch) {
        std::unordered_map<OpId, SubscribeBatch> by_op;
        for (auto& sub : batch.subscriptions) by_op[sub.op].subscriptions.push_back(std::move(sub));
        for (auto& [op, part] : by_op)
          if (auto* target = find_operation(self, op))
            self->send(*target, subscribe_atom::value, std::move(part));
      },
      [=](input_atom, InputBatch& batch) {
        auto& st = self->state;
        std::unordered_map<OpId, InputBatch> by_op;
        for (auto& input : batch.inputs) by_op[input.op].inputs.push_back(std::move(input));
        for (auto& [op, part] : by_op) {
          if (auto* target = find_operation(self, op)) {
            self->send(*target, input_atom::value, std::move(part));
          } else if (!st.forgotten.count(op)) {
            auto& early = st.early_inputs[op];
            for (auto& input : part.inputs) early.push_back(std::move(input));
          }
        }
      },
      [=](drop_atom, SlotBatch& batch) {
        if (auto* target = find_operation(self, batch.op))
          self->send(*target, drop_atom::value, std::move(batch));
      },
      [=](cancel_slots_atom, SlotBatch& batch) {
        if (auto* target = find_operation(self, batch.op))
          self->send(*target, cancel_slots_atom::value, std::move(batch));
      },
      [=](steal_atom, const StealRequest& request) {
        if (auto* target = find_operation(self, request.op)) {
          self->send(*target, steal_atom::value, request);
        } else {
          self->send(self->state.scheduler, stolen_atom::value, StolenBatch{self->state.id, request.op, {}});
        }
      },
      [=](forget_atom, OpId op) {
        auto& st = self->state;
        if (auto* target = find_operation(self, op)) {
          self->send(*target, shutdown_atom::value);
          st.operations.erase(op);
        }
        st.early_inputs.erase(op);
        st.forgotten.insert(op);
      },
      [=](glm_atom, GlmMessage& message) {
        auto& st = self->state;
        const auto it = st.glm_sessions.find(message.session);
        switch (message.kind()) {
          case GlmKind::load:
            glm_load(self, message.session, std::get<GlmLoad>(std::move(message.body)));
            break;
          case GlmKind::evaluate:
          case GlmKind::solve:
            if (it != st.glm_sessions.end()) self->send(it->second, glm_atom::value, std::move(message));
            break;
          case GlmKind::release:
            if (it == st.glm_sessions.end()) {
              st.glm_released.insert(message.session);
            } else {
              self->send(it->second, shutdown_atom::value);
              st.glm_sessions.erase(it);
            }
            break;
          default:
            break;
        }
      },
      [=](shutdown_atom) {
        // Messages already forwarded to operation actors are handled before their shutdown (FIFO).
        for (auto& [op, actor] : self->state.operations) self->send(actor, shutdown_atom::value);
        self->state.operations.clear();
        for (auto& [key, pool] : self->state.simulations) self->send(pool, shutdown_atom::value);
        self->state.simulations.clear();
        for (auto& [session, actor] : self->state.glm_sessions) self->send(actor, shutdown_atom::value);
        self->state.glm_sessions.clear();
        if (self->state.gpu) self->send_exit(self->state.gpu, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace

caf::actor spawn_worker(caf::actor_system& system, caf::actor scheduler, WorkerOptions options) {
  return system.spawn(worker_actor, std::move(scheduler), options);
}

}  // namespace tessera
