#include "nodes/remote_worker_proxy.hpp"

#include <unordered_set>

#include "actors/messages.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/stream_codec.hpp"
#include "nodes/worker_codec.hpp"

namespace tessera {
namespace {

struct ProxyState {
  std::weak_ptr<transport::Server> server;
  std::string peer_id;
  std::unordered_set<OpId> defined;  // operations whose definition the worker has

  void send(transport::Outgoing& message) {
    if (auto target = server.lock()) target->send(peer_id, message);
  }
};

using ProxyActor = caf::stateful_actor<ProxyState>;

caf::behavior remote_worker_proxy(ProxyActor* self, std::weak_ptr<transport::Server> server,
                                  std::string peer_id) {
  self->state.server = std::move(server);
  self->state.peer_id = std::move(peer_id);
  return {
      [=](welcome_atom, std::uint32_t id) {
        transport::Outgoing message;
        message.envelope().initWorkerWelcome().setWorkerId(id);
        self->state.send(message);
      },
      [=](peer_atom, const PeerNotice& notice) {
        transport::Outgoing message;
        auto peer = message.envelope().initPeer();
        peer.setWorkerId(notice.id);
        peer.setAddress(notice.address);
        peer.setPublicKey(notice.public_key);
        self->state.send(message);
      },
      [=](assign_atom, const AssignBatch& batch) {
        transport::Outgoing message;
        auto& defined = self->state.defined;
        wire::encode(
            batch, [&](OpId op) { return defined.insert(op).second; }, message.envelope().initAssign(),
            message.attachments());
        self->state.send(message);
      },
      [=](subscribe_atom, const SubscribeBatch& batch) {
        transport::Outgoing message;
        wire::encode(batch, message.envelope().initSubscribe());
        self->state.send(message);
      },
      [=](drop_atom, const SlotBatch& batch) {
        transport::Outgoing message;
        wire::encode(batch, message.envelope().initDrop());
        self->state.send(message);
      },
      [=](cancel_atom, const SlotBatch& batch) {
        transport::Outgoing message;
        wire::encode(batch, message.envelope().initCancelSlots());
        self->state.send(message);
      },
      [=](steal_atom, OpId op, std::uint32_t most) {
        transport::Outgoing message;
        auto steal = message.envelope().initSteal();
        steal.setOp(op);
        steal.setMost(most);
        self->state.send(message);
      },
      [=](simulate_atom, const SimulationJob& job) {
        transport::Outgoing message;
        wire::encode(job, message.envelope().initSimulate(), message.attachments());
        self->state.send(message);
      },
      [=](glm_atom, const GlmMessage& glm) {
        transport::Outgoing message;
        wire::encode(glm, message.envelope().initGlm(), message.attachments());
        self->state.send(message);
      },
      [=](forget_atom, OpId op) {
        self->state.defined.erase(op);
        transport::Outgoing message;
        message.envelope().setForget(op);
        self->state.send(message);
      },
      [=](shutdown_atom) {
        transport::Outgoing message;
        message.envelope().setShutdown();
        self->state.send(message);
        self->quit();
      },
  };
}

}  // namespace

caf::actor spawn_remote_worker_proxy(caf::actor_system& system, std::weak_ptr<transport::Server> server,
                                     std::string peer_id) {
  return system.spawn(remote_worker_proxy, std::move(server), std::move(peer_id));
}

}  // namespace tessera
