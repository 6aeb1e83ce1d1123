#include "nodes/remote_worker_proxy.hpp"

#include <unordered_set>

#include "actors/protocols/worker.hpp"
#include "actors/stray_errors.hpp"
#include "nodes/wire_routes.hpp"

namespace tessera {
namespace {

struct ProxyState {
  std::weak_ptr<transport::Server> server;
  std::string peer_id;
  std::unordered_set<OpId> definitions;  // operations whose definition the worker has
};

using ProxyActor = caf::stateful_actor<ProxyState>;

// The proxy stands in for a worker actor: what the scheduler tells a worker and the wire table's
// scheduler -> worker rows must be the same messages.
static_assert(wire::routes_implement<protocols::worker_actor_type, wire::kSchedulerToWorker>,
              "the wire table's scheduler -> worker rows and protocols::worker_actor_type differ");

// Every message the scheduler sends a worker goes out as its envelope (the wire table's routes from the
// scheduler to workers); after the shutdown, the proxy is done.
caf::behavior remote_worker_proxy(ProxyActor* self, std::weak_ptr<transport::Server> server,
                                  std::string peer_id, std::function<void(const std::string&)> ended) {
  self->state.server = std::move(server);
  self->state.peer_id = std::move(peer_id);
  survive_stray_errors(self, "worker proxy");
  return wire::forwarding_behavior<wire::kSchedulerToWorker>(
      [self, ended](wire::Envelope::Which kind, auto&& fill) {
        auto& st = self->state;
        transport::Outgoing message;
        wire::EncodeContext context{message.attachments(), &st.definitions};
        fill(message.envelope(), context);
        if (auto target = st.server.lock()) target->send(st.peer_id, message);
        if (kind == wire::Envelope::SHUTDOWN) {
          if (ended) ended(st.peer_id);
          self->quit();
        }
      });
}

}  // namespace

caf::actor spawn_remote_worker_proxy(caf::actor_system& system, std::weak_ptr<transport::Server> server,
                                     std::string peer_id, std::function<void(const std::string&)> ended) {
  return system.spawn(remote_worker_proxy, std::move(server), std::move(peer_id), std::move(ended));
}

}  // namespace tessera
