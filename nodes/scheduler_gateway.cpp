#include "nodes/scheduler_gateway.hpp"

#include <malloc.h>

#include <iostream>

#include "graph/printable.hpp"
#include "nodes/client_session.hpp"
#include "nodes/gateway_state.hpp"
#include "nodes/query_session.hpp"
#include "nodes/stream_session.hpp"
#include "nodes/worker_session.hpp"

namespace tessera {

void GatewayState::let_go(GatewayClient& client) {
  for (auto& [id, sink] : client.sinks) sink->release_all();
  client.sinks.clear();
  const bool had_slots = client.slots_held > 0;
  slots_held -= std::min(slots_held, client.slots_held);
  client.slots_held = 0;
  // What the scheduler held for it is freed as it handles the releases; the allocator gives the pages
  // back to the system a moment later, rather than keep them for ever.
  if (had_slots) trim_soon();
  // Not the client's own close: a stream whose input had not ended is kept as incomplete.
  for (auto& [id, actor] : client.streams)
    caf::anon_send(actor, stream_abandon_atom::value, std::string("its client was lost"));
  client.streams.clear();
}

// The gateway's sessions, one per part of the protocol; every message arrives on the I/O thread.
struct SchedulerGateway::State : GatewayState {
  ClientSession client{*this};
  StreamSession stream{*this};
  QuerySession query{*this};
  WorkerSession worker{*this};

  void handle(const transport::PeerInfo& peer, transport::Received& message) {
    if (peer.role == wire::Role::WORKER) {
      auto it = workers.find(peer.id);
      if (it == workers.end()) throw wire::WireError("a message from a worker that is not registered");
      worker.handle(it->second, message);
      return;
    }
    GatewayClient& from = clients[peer.id];
    from.name = peer.name;
    from.last_seen = GatewayClock::now();
    // The transport refused what a client may not send (the wire table); the client protocol's rows name
    // the session that handles the rest (nodes/client_protocol.hpp).
    if (!wire::dispatch_client_request(message.envelope().which(), *this, peer, from, message))
      throw wire::WireError("no handler here for '" + wire::kind_name(message.envelope().which()) + "'");
  }

  // Silent clients and orphaned streams, on the I/O thread (workers: WorkerSession::tick).
  void tick(transport::Server& target) {
    worker.tick(target);
    const auto now = GatewayClock::now();
    for (auto it = clients.begin(); it != clients.end();) {
      if (now - it->second.last_seen <= options.client_grace) {
        ++it;
        continue;
      }
      log("client " + in_quotes(it->second.name) + " sent nothing for " +
          std::to_string(options.client_grace.count()) + " ms: its " +
          std::to_string(it->second.sinks.size()) + " result tables are released");
      let_go(it->second);
      target.forget(it->first);
      it = clients.erase(it);
    }
    for (auto it = orphans.begin(); it != orphans.end();) {
      if (now - it->second.second <= options.client_grace) {
        ++it;
        continue;
      }
      log("stream " + std::to_string(it->first) + " was resumed but no client attached within " +
          std::to_string(options.client_grace.count()) +
          " ms: it is closed; what it accepted still runs and is stored");
      caf::anon_send(it->second.first, stream_abandon_atom::value,
                     std::string("no client attached after the node restarted"));
      it = orphans.erase(it);
    }
    // Off the I/O thread: trimming a large heap takes a while. A full executor tries again later; later
    // trims (1, 4 and 10 s after) catch what the scheduler and workers freed after the first, which a
    // loaded node takes seconds to.
    if (now >= trim_at) {
      if (!queries->post([] { ::malloc_trim(0); })) {
        trim_at = now + kTrimDelay;
      } else if (trims_left > 1) {
        trims_left -= 1;
        trim_at = now + (trims_left == 2 ? 3 : 6) * kTrimDelay;
      } else {
        trims_left = 0;
        trim_at = GatewayClock::time_point::max();
      }
    }
  }
};

SchedulerGateway::SchedulerGateway(caf::actor scheduler, std::weak_ptr<const SchedulerLink> link,
                                   transport::ServerOptions options, GatewayOptions gateway)
    : state_(std::make_shared<State>()) {
  state_->scheduler = std::move(scheduler);
  state_->link = std::move(link);
  state_->name = options.name;
  state_->options = gateway;
  // Two threads: one long export does not hold up every other query; 64 queued at most.
  state_->queries = std::make_unique<QueryExecutor>(2, 64);
  if (!options.log)
    options.log = [](const std::string& line) { std::cerr << "[tessera] " << line << std::endl; };
  state_->log = options.log;
  auto state = state_;
  options.defer_start = true;  // the handler needs state_->server before the first message
  options.joined = [state](transport::Server&, const transport::PeerInfo& peer) {
    if (peer.role == wire::Role::WORKER) {
      state->worker.joined(peer);
    } else {
      auto& client = state->clients[peer.id];
      client.name = peer.name;
      client.last_seen = GatewayClock::now();
      state->client_count.store(static_cast<std::uint32_t>(state->clients.size()));
    }
  };
  options.welcome = [state](transport::Server& server, const transport::PeerInfo& peer,
                            wire::Welcome::Builder out) {
    if (peer.role == wire::Role::CLIENT) state->client.welcome(server, peer, out);
  };
  options.tick = [state](transport::Server& server) {
    state->tick(server);
    state->client_count.store(static_cast<std::uint32_t>(state->clients.size()));
  };
  // A worker's hello claims its threads and memory: what the node's limits allow, or it is refused.
  for (auto& [id, actor] : gateway.resumed) {
    state_->streams[id] = actor;
    state_->orphans[id] = {actor, GatewayClock::now()};
  }
  options.admit = [limits = gateway.limits,
                   raw = state_.get()](const transport::PeerInfo& peer) -> std::optional<std::string> {
    // A client resuming its session takes its own place.
    if (peer.role == wire::Role::CLIENT && raw->clients.size() >= limits.max_clients &&
        !raw->client.holds_session(peer.resume))
      return "this node serves " + std::to_string(raw->clients.size()) +
             " clients, the most it takes (limits.max_clients)";
    if (peer.role != wire::Role::WORKER) return std::nullopt;
    if (peer.threads == 0 || peer.threads > limits.max_worker_threads)
      return "a worker claiming " + std::to_string(peer.threads) + " threads (this node accepts 1 to " +
             std::to_string(limits.max_worker_threads) + ", limits.max_worker_threads)";
    if (peer.memory_limit > limits.max_worker_memory)
      return "a worker claiming " + std::to_string(peer.memory_limit) +
             " bytes of memory (this node accepts at most " + std::to_string(limits.max_worker_memory) +
             ", limits.max_worker_memory)";
    return std::nullopt;
  };
  server_ = std::make_shared<transport::Server>(
      std::move(options),
      [state](transport::Server&, const transport::PeerInfo& peer, transport::Received& message) {
        state->handle(peer, message);
        state->client_count.store(static_cast<std::uint32_t>(state->clients.size()));
      });
  state_->server = server_;
  server_->start();
}

SchedulerGateway::~SchedulerGateway() = default;

const std::string& SchedulerGateway::endpoint() const {
  return server_->endpoint();
}

std::uint32_t SchedulerGateway::clients() const {
  return state_->client_count.load();
}

std::uint64_t SchedulerGateway::dropped() const {
  return server_->dropped();
}

}  // namespace tessera
