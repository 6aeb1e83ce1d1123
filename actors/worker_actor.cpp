#include "actors/worker_actor.hpp"

#include <unordered_map>
#include <unordered_set>

#include "actors/chunk_store_actor.hpp"
#include "actors/gpu_device_actor.hpp"
#include "actors/messages.hpp"
#include "actors/operation_actor.hpp"
#include "actors/protocols/worker.hpp"
#include "actors/services/glm_service.hpp"
#include "actors/services/simulation_service.hpp"
#include "actors/stray_errors.hpp"
#include "backends/device_queue.hpp"
#include "graph/printable.hpp"

namespace tessera {
namespace {

struct WorkerState {
  std::uint32_t id = 0;
  protocols::scheduler_actor_type scheduler;
  std::shared_ptr<ComputePool> pool;
  std::shared_ptr<ChunkStore> store;
  protocols::chunk_store_type store_actor;
  std::string name;
  protocols::gpu_device_type gpu;  // the GPU device actor, when this process has a GPU
  std::shared_ptr<const WorkerDirectory> directory;
  std::unordered_map<OpId, protocols::operation_actor_type> operations;
  // Inputs that arrived before this worker heard of their operation (they travel worker to worker,
  // the assignment travels from the scheduler: either may come first).
  std::unordered_map<OpId, std::vector<InputDelivery>> early_inputs;
  std::unordered_set<OpId> forgotten;
  // The services it hosts beside its operations.
  protocols::simulation_service_type simulations;
  protocols::glm_service_type glm;

  // Its operation actors leave with it. They are monitored, not linked: a link is an entry in this
  // actor's own list, which each finished operation's unlink scanned (quadratic in live operations:
  // 64,000 single-task submissions took 154 s).
  WorkerState() = default;
  WorkerState(const WorkerState&) = delete;
  WorkerState& operator=(const WorkerState&) = delete;
  ~WorkerState() {
    for (auto& entry : operations) caf::anon_send_exit(entry.second, caf::exit_reason::user_shutdown);
  }
};

using WorkerActor = protocols::local_worker_type::stateful_base<WorkerState>;

protocols::operation_actor_type* find_operation(WorkerActor* self, OpId op) {
  auto it = self->state.operations.find(op);
  return it == self->state.operations.end() ? nullptr : &it->second;
}

protocols::local_worker_type::behavior_type worker_actor(WorkerActor* self, caf::actor scheduler,
                                                         WorkerOptions options) {
  auto& st = self->state;
  st.scheduler = caf::actor_cast<protocols::scheduler_actor_type>(scheduler);
  st.pool = std::make_shared<ComputePool>(options.threads);
  st.store = std::make_shared<ChunkStore>(options.memory, st.pool);
  st.store_actor = spawn_chunk_store_actor(self->home_system(), st.store, st.pool, st.scheduler);
  st.name = options.name;
  survive_stray_errors(self, "worker " + options.name);
  // Workers share the process's GPUs: worker i uses device i mod count.
  if (const int devices = backends::device_count(); devices > 0)
    st.gpu = caf::actor_cast<protocols::gpu_device_type>(spawn_gpu_device_actor(
        self->home_system(), static_cast<int>(options.gpu_index % static_cast<std::uint32_t>(devices))));
  st.directory = options.directory;
  st.simulations = spawn_simulation_service(self->home_system(), st.pool, options.name,
                                            options.simulation_gpus, options.runs_dir);
  st.glm = spawn_glm_service(self->home_system(), caf::actor_cast<caf::actor>(self), scheduler, st.pool);
  // An operation actor that failed takes its worker with it, as a link did (its tasks are then recomputed
  // elsewhere); one that finished is nothing to do.
  self->set_down_handler([self](const caf::down_msg& down) {
    if (!down.reason || down.reason == caf::exit_reason::normal) return;
    for (const auto& entry : self->state.operations)
      if (entry.second.address() == down.source) return self->quit(down.reason);
  });
  return {
      [=](welcome_atom, std::uint32_t id) {
        auto& st = self->state;
        st.id = id;
        std::string name = "worker ";
        name += std::to_string(id);
        name += " (";
        name += in_quotes(st.name.empty() ? "worker-" + std::to_string(id) : st.name);
        name += ")";
        st.store->set_name(std::move(name));
        self->send(st.store_actor, welcome_atom::value, id);
        self->send(self->state.simulations, welcome_atom::value, id);
        self->send(self->state.glm, welcome_atom::value, id);
      },
      // Services: delegated, so that what they answer goes to whoever asked.
      [=](simulation_setup_atom, SimulationSetup& setup) {
        return self->delegate(self->state.simulations, simulation_setup_atom::value, std::move(setup));
      },
      [=](simulation_end_atom, std::uint64_t stream) {
        return self->delegate(self->state.simulations, simulation_end_atom::value, stream);
      },
      [=](simulate_atom, SimulationJob& job) {
        return self->delegate(self->state.simulations, simulate_atom::value, std::move(job));
      },
      [=](simulation_cancel_atom, SimulationCancel& cancel) {
        return self->delegate(self->state.simulations, simulation_cancel_atom::value, std::move(cancel));
      },
      [=](glm_atom, GlmMessage& message) {
        return self->delegate(self->state.glm, glm_atom::value, std::move(message));
      },
      // A service asks for held results of one operation: that operation actor answers.
      [=](fetch_atom, OpId op, std::vector<std::uint32_t>& slots) -> caf::result<std::vector<Value>> {
        if (auto* target = find_operation(self, op))
          return self->delegate(*target, fetch_atom::value, std::move(slots));
        return caf::make_error(caf::sec::invalid_argument);
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
                self->home_system(),
                OperationActorArgs{run.op, st.id, caf::actor_cast<protocols::input_target_type>(self),
                                   st.scheduler, st.pool, st.directory, st.gpu, st.store, st.store_actor});
            self->monitor(actor);
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
      [=](shutdown_atom) {
        // Messages already forwarded to operation actors are handled before their shutdown (FIFO).
        for (auto& [op, actor] : self->state.operations) self->send(actor, shutdown_atom::value);
        self->state.operations.clear();
        self->send(self->state.simulations, shutdown_atom::value);
        self->send(self->state.glm, shutdown_atom::value);
        self->send(self->state.store_actor, shutdown_atom::value);
        if (self->state.gpu) self->send_exit(self->state.gpu, caf::exit_reason::user_shutdown);
        self->quit();
      },
  };
}

}  // namespace

std::vector<int> devices_found() {
  std::vector<int> devices;
  for (int d = 0; d < backends::device_count(); ++d) devices.push_back(d);
  return devices;
}

std::vector<int> share_of_gpus(const std::vector<int>& devices, std::uint32_t index, std::uint32_t workers) {
  std::vector<int> mine;
  for (std::size_t k = index; k < devices.size(); k += std::max<std::uint32_t>(1, workers))
    mine.push_back(devices[k]);
  if (mine.empty() && !devices.empty()) mine.push_back(devices[index % devices.size()]);
  return mine;
}

caf::actor spawn_worker(caf::actor_system& system, caf::actor scheduler, WorkerOptions options) {
  return caf::actor_cast<caf::actor>(system.spawn(worker_actor, std::move(scheduler), options));
}

}  // namespace tessera
