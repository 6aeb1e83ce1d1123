#include "actors/services/glm_service.hpp"

#include <unordered_map>
#include <unordered_set>

#include "actors/glm/partition_actor.hpp"
#include "actors/stray_errors.hpp"

namespace tessera {
namespace {

struct GlmServiceState {
  std::uint32_t worker_id = 0;
  caf::actor worker, scheduler;
  std::shared_ptr<ComputePool> pool;
  // Fits with partitions here, by session; and sessions released before their partitions loaded.
  std::unordered_map<std::uint64_t, caf::actor> sessions;
  std::unordered_set<std::uint64_t> released;
};

using GlmService = protocols::glm_service_type::stateful_base<GlmServiceState>;

void load_failed(const caf::actor& reply_to, std::uint32_t worker, std::uint64_t session,
                 const std::string& error) {
  caf::anon_send(reply_to, glm_atom::value, GlmMessage{session, GlmLoaded{worker, error}});
}

// Collects the held results a fit names (a request per operation) and spawns the fit's partition actor
// over them; it checks the data and answers `loaded`.
void load(GlmService* self, std::uint64_t session, GlmLoad load) {
  auto& st = self->state;
  GlmPartitionArgs args;
  // Answers go straight to the solver when it is an actor of this process (it sent the load); from a
  // worker process, through the scheduler's connection, which forwards them to it.
  if (auto sender = caf::actor_cast<caf::actor>(self->current_sender()))
    args.reply_to = std::move(sender);
  else
    args.reply_to = st.scheduler;
  std::unordered_map<OpId, std::vector<std::size_t>> by_op;  // positions in args.partitions
  std::unordered_map<OpId, std::vector<std::uint32_t>> slots;
  args.spec = std::move(load.spec);
  for (const auto& held : load.partitions) {
    by_op[held.op].push_back(args.partitions.size());
    slots[held.op].push_back(held.slot);
    args.partitions.push_back(GlmPartition{held.index, held.first_row, nullptr, nullptr});
  }
  args.session = session;
  args.worker_id = st.worker_id;
  args.pool = st.pool;
  struct Gathering {
    GlmPartitionArgs args;
    std::size_t pending = 0;
    std::string error;
  };
  auto gathering = std::make_shared<Gathering>(Gathering{std::move(args), by_op.size(), {}});
  auto complete = [self, session, gathering] {
    if (--gathering->pending > 0) return;
    auto& st = self->state;
    const bool released = st.released.erase(session) > 0;
    if (!gathering->error.empty())
      return load_failed(gathering->args.reply_to, st.worker_id, session, gathering->error);
    if (released) return;
    st.sessions[session] = spawn_glm_partitions(self->home_system(), std::move(gathering->args));
  };
  for (auto& [op, positions] : by_op) {
    self->request(st.worker, caf::infinite, fetch_atom::value, op, slots[op])
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
            [self, gathering, complete, op = op](caf::error&) {
              if (gathering->error.empty())
                gathering->error = "glm: worker " + std::to_string(self->state.worker_id) +
                                   " holds no result of operation " + std::to_string(op) +
                                   " (was the data released?)";
              complete();
            });
  }
}

protocols::glm_service_type::behavior_type glm_service(GlmService* self, caf::actor worker,
                                                       caf::actor scheduler,
                                                       std::shared_ptr<ComputePool> pool) {
  survive_stray_errors(self, "GLM service");
  self->state.worker = std::move(worker);
  self->state.scheduler = std::move(scheduler);
  self->state.pool = std::move(pool);
  return {
      [=](welcome_atom, std::uint32_t id) { self->state.worker_id = id; },
      [=](glm_atom, GlmMessage& message) {
        auto& st = self->state;
        const auto it = st.sessions.find(message.session);
        switch (message.kind()) {
          case GlmKind::load:
            load(self, message.session, std::get<GlmLoad>(std::move(message.body)));
            break;
          case GlmKind::evaluate:
          case GlmKind::solve:
            if (it != st.sessions.end()) caf::anon_send(it->second, glm_atom::value, std::move(message));
            break;
          case GlmKind::release:
            if (it == st.sessions.end()) {
              st.released.insert(message.session);
            } else {
              caf::anon_send(it->second, shutdown_atom::value);
              st.sessions.erase(it);
            }
            break;
          default:
            break;
        }
      },
      [=](shutdown_atom) {
        for (auto& [session, actor] : self->state.sessions) caf::anon_send(actor, shutdown_atom::value);
        self->state.sessions.clear();
        self->quit();
      },
  };
}

}  // namespace

protocols::glm_service_type spawn_glm_service(caf::actor_system& system, caf::actor worker,
                                              caf::actor scheduler, std::shared_ptr<ComputePool> pool) {
  return system.spawn(glm_service, std::move(worker), std::move(scheduler), std::move(pool));
}

}  // namespace tessera
