#include "nodes/worker_session.hpp"

#include "actors/messages.hpp"
#include "graph/printable.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/memory_codec.hpp"
#include "nodes/remote_worker_proxy.hpp"
#include "nodes/wire_routes.hpp"

namespace tessera {

// A worker process said hello: a proxy stands for it, and the scheduler gives it an id. Asked without
// waiting: the id appears in the peer's `assigned` before the scheduler sends the worker anything, and
// tick() logs it (or gives up on a scheduler that does not answer).
void WorkerSession::joined(const transport::PeerInfo& peer) {
  auto& system = g_.scheduler->home_system();
  WorkerPeer worker;
  worker.name = peer.name;
  worker.proxy = spawn_remote_worker_proxy(system, g_.server, peer.id,
                                           [ended = g_.ended_workers](const std::string& peer_id) {
                                             std::lock_guard lock(ended->mutex);
                                             ended->peer_ids.push_back(peer_id);
                                           });
  caf::anon_send(g_.scheduler, register_atom::value,
                 WorkerRegistration{worker.proxy, std::max<std::uint32_t>(1, peer.threads), peer.name,
                                    peer.listen, peer.public_key, peer.memory_limit, peer.local_listen,
                                    peer.host, peer.origin, worker.assigned});
  worker.joining =
      " (" + std::to_string(peer.threads) + " threads, peers reach it at " + printable(peer.listen) +
      (peer.local_listen.empty() ? std::string() : ", those on its host at " + printable(peer.local_listen)) +
      ")";
  g_.workers[peer.id] = std::move(worker);
}

void WorkerSession::handle(WorkerPeer& worker, transport::Received& message) {
  auto envelope = message.envelope();
  worker.last_seen = GatewayClock::now();
  // The transport already refused what a worker may not send to the scheduler (the wire table).
  // Nothing was sent to a worker before its id was stored: until then it can only heartbeat or report.
  if (!worker.registered()) return;
  const wire::DecodeContext context{message.frames(), worker.id()};
  switch (envelope.which()) {
    case wire::Envelope::SIMULATED: {
      // For the stream's actor, not the scheduler.
      auto it = g_.streams.find(envelope.getSimulated().getStreamId());
      if (it == g_.streams.end()) return;  // the stream ended meanwhile
      wire::deliver_to_actor<wire::kWorkerToScheduler>(envelope, context, it->second);
      return;
    }
    case wire::Envelope::GLM: {
      auto answer = wire::decode(envelope.getGlm(), message.frames());
      if (answer.kind() != GlmKind::loaded && answer.kind() != GlmKind::partials &&
          answer.kind() != GlmKind::solved)
        throw wire::WireError("a worker may not send a GLM " + std::string(glm_kind_name(answer.kind())) +
                              " message");
      caf::anon_send(g_.scheduler, glm_atom::value, std::move(answer));
      return;
    }
    case wire::Envelope::MEMORY: {
      // A worker speaks for itself only: the id is the connection's, whatever the report says.
      auto memory = wire::decode_memory(envelope.getMemory());
      memory.worker = worker.id();
      caf::anon_send(g_.scheduler, memory_atom::value, std::move(memory));
      return;
    }
    case wire::Envelope::HEARTBEAT:
      return;
    default:
      if (!wire::deliver_to_actor<wire::kWorkerToScheduler>(envelope, context, g_.scheduler))
        throw wire::WireError("no handler here for '" + wire::kind_name(envelope.which()) + "'");
  }
}

void WorkerSession::tick(transport::Server& target) {
  std::vector<std::string> ended;
  {
    std::lock_guard lock(g_.ended_workers->mutex);
    ended.swap(g_.ended_workers->peer_ids);
  }
  for (const auto& peer_id : ended) {
    auto it = g_.workers.find(peer_id);
    if (it == g_.workers.end()) continue;  // gone already
    g_.log("worker " + in_quotes(it->second.name) + " (worker " + std::to_string(it->second.id()) +
           ") was sent SHUTDOWN: its connection is forgotten (it says hello again to rejoin)");
    target.forget(it->first);
    g_.workers.erase(it);
  }
  // Registered after all, once the scheduler got to it: it must hear the worker is gone.
  std::erase_if(abandoned_, [&](const std::shared_ptr<std::atomic<std::uint32_t>>& assigned) {
    const std::uint32_t id = assigned->load(std::memory_order_acquire);
    if (id == WorkerPeer::kUnassigned) return false;
    caf::anon_send(g_.scheduler, lost_atom::value, id);
    return true;
  });
  const auto now = GatewayClock::now();
  for (auto it = g_.workers.begin(); it != g_.workers.end();) {
    WorkerPeer& peer = it->second;
    if (!peer.joining.empty() && peer.registered()) {
      g_.log("worker " + in_quotes(peer.name) + " joined as worker " + std::to_string(peer.id()) +
             peer.joining);
      peer.joining.clear();
    }
    const bool silent = now - peer.last_seen > g_.options.worker_timeout;
    const bool unanswered = !peer.registered() && now - peer.joined_at > kRegistrationTimeout;
    if (!silent && !unanswered) {
      ++it;
      continue;
    }
    if (unanswered)
      g_.log("worker " + in_quotes(peer.name) +
             " could not be registered: the scheduler did not answer within " +
             std::to_string(kRegistrationTimeout.count()) + " ms; its connection is forgotten");
    else
      g_.log("worker " + in_quotes(peer.name) +
             (peer.registered() ? " (worker " + std::to_string(peer.id()) + ")"
                                : std::string(" (not registered)")) +
             " sent nothing for " + std::to_string(g_.options.worker_timeout.count()) +
             " ms: declared lost; its running tasks and held results are recomputed elsewhere");
    if (peer.registered()) {
      caf::anon_send(g_.scheduler, lost_atom::value, peer.id());
    } else {
      // A registration still on its way is answered later; lost then is what the scheduler must hear.
      caf::anon_send_exit(peer.proxy, caf::exit_reason::user_shutdown);
      abandoned_.push_back(peer.assigned);
    }
    target.forget(it->first);
    it = g_.workers.erase(it);
  }
}

}  // namespace tessera
