#include "nodes/client_session.hpp"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

#include <algorithm>

#include "actors/glm/solver_actor.hpp"
#include "actors/messages.hpp"
#include "graph/printable.hpp"
#include "graph/registry.hpp"
#include "messages/protocol_codec.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/registry_codec.hpp"
#include "nodes/status_codec.hpp"

namespace tessera {
namespace {

using wire::Envelope;

// Asks the scheduler without holding up the I/O thread: a short-lived actor waits for the answer and
// sends what `answer` makes of it to the peer (or an error naming the request, after 10 s).
template <class Answer, class Request>
void ask(caf::event_based_actor* self, caf::actor scheduler, std::weak_ptr<transport::Server> server,
         std::string peer_id, Request request, std::string what,
         std::function<void(const Answer&, transport::Outgoing&)> answer) {
  // Urgent: a status is answered ahead of the submissions queued in the scheduler's mailbox (one client's
  // flood of work must not keep another's `tessera status` waiting).
  self->request<caf::message_priority::high>(scheduler, std::chrono::seconds(10), request)
      .then(
          [=](const Answer& reply) {
            transport::Outgoing message;
            answer(reply, message);
            if (auto target = server.lock()) target->send(peer_id, message);
          },
          [=](const caf::error& error) {
            transport::Outgoing message;
            message.envelope().initError().setReason("the scheduler did not answer a " + what +
                                                     " request: " + to_string(error));
            if (auto target = server.lock()) target->send(peer_id, message);
          });
}

template <class Answer, class Request>
void ask_scheduler(GatewayState& g, const std::string& peer_id, Request request, const std::string& what,
                   std::function<void(const Answer&, transport::Outgoing&)> answer) {
  // The arguments travel as spawn arguments: CAF 0.17 dereferences a null argument tuple when an actor
  // function is spawned without any.
  g.scheduler->home_system().spawn(ask<Answer, Request>, g.scheduler, g.server, peer_id, request, what,
                                   std::move(answer));
}

// The client waits on a refused submission's results: one message says why, and every slot fails with it
// (the client expands it; nothing here grows with the slots claimed).
void refuse_submission(GatewayState& g, const transport::PeerInfo& peer, std::uint64_t sink_id,
                       const std::string& reason) {
  transport::Outgoing answer;
  auto out = answer.envelope().initResults();
  out.setSinkId(sink_id);
  out.setRefused("the scheduler refused the submission: " + reason);
  g.send(peer.id, answer);
}

// Why a submission of `slots` exceeds this client's budget, before anything is allocated for it.
std::optional<std::string> over_budget(const GatewayLimits& limits, const GatewayState& node,
                                       const GatewayClient& client, std::uint32_t slots) {
  if (slots > limits.max_slots_per_submission)
    return std::to_string(slots) + " slots exceed the limit of " +
           std::to_string(limits.max_slots_per_submission) +
           " per submission (limits.max_slots_per_submission)";
  if (client.slots_held + slots > limits.max_slots_per_client)
    return "this client holds " + std::to_string(client.slots_held) + " result slots; " +
           std::to_string(slots) + " more exceed the limit of " +
           std::to_string(limits.max_slots_per_client) +
           " per client (limits.max_slots_per_client); release futures first";
  if (node.slots_held + slots > limits.max_slots_per_node)
    return "this node's clients hold " + std::to_string(node.slots_held) + " result slots together; " +
           std::to_string(slots) + " more exceed the limit of " + std::to_string(limits.max_slots_per_node) +
           " per node (limits.max_slots_per_node); try again once others release theirs";
  return std::nullopt;
}

// Unguessable: whoever presents it takes the session's results.
std::string new_session_token() {
  std::string token(16, '\0');
  std::size_t filled = 0;
  while (filled < token.size()) {
    const ssize_t got = ::getrandom(token.data() + filled, token.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom for a client's session token");
    }
    filled += static_cast<std::size_t>(got);
  }
  return token;
}

}  // namespace

bool ClientSession::holds_session(const std::string& token) const {
  if (token.empty()) return false;
  return std::any_of(g_.clients.begin(), g_.clients.end(),
                     [&](const auto& entry) { return entry.second.session == token; });
}

void ClientSession::welcome(transport::Server& server, const Peer& peer, wire::Welcome::Builder out) {
  auto old = g_.clients.end();
  if (!peer.resume.empty())
    old = std::find_if(g_.clients.begin(), g_.clients.end(), [&](const auto& entry) {
      return entry.first != peer.id && entry.second.session == peer.resume;
    });
  if (old == g_.clients.end()) {
    auto& client = g_.clients[peer.id];
    client.name = peer.name;
    client.session = new_session_token();
    out.setSession(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(client.session.data()), client.session.size()));
    if (!peer.resume.empty())
      g_.log("client " + in_quotes(peer.name) +
             " asked to resume a session this node does not hold (it restarted, or the session ended "
             "after client_grace): it starts a new one");
    return;
  }
  // The old connection is gone or going (the client gave up on it): its entry becomes this one's, and
  // what the scheduler sends from now on comes here.
  const std::string old_peer = old->first;
  auto moved = g_.clients.extract(old);
  moved.key() = peer.id;
  auto& client = g_.clients.insert(std::move(moved)).position->second;
  server.forget(old_peer);
  client.name = peer.name;
  client.last_seen = GatewayClock::now();
  out.setSession(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(client.session.data()), client.session.size()));
  out.setResumed(true);
  auto tables = out.initDelivered(static_cast<unsigned>(client.sinks.size()));
  unsigned i = 0;
  for (auto& [id, sink] : client.sinks) {
    tables[i].setSinkId(id);
    tables[i].setSlots(sink->retarget(peer.id));
    ++i;
  }
  g_.log("client " + in_quotes(peer.name) + " reconnected and resumed its session: " +
         std::to_string(client.sinks.size()) + " result tables, " + std::to_string(client.streams.size()) +
         " streams and " + std::to_string(client.ids.size()) + " operations kept");
}

// Answered, so that a client notices a scheduler that is gone.
void ClientSession::on(Request<Envelope::HEARTBEAT>, const Peer& peer, GatewayClient&, Received&) {
  transport::Outgoing beat;
  beat.envelope().initHeartbeat();
  g_.send(peer.id, beat);
}

void ClientSession::on(Request<Envelope::SUBMIT>, const Peer& peer, GatewayClient& client,
                       Received& message) {
  auto in = message.envelope().getSubmit();
  const std::uint64_t sink_id = in.getSinkId();
  // Sent again on a resumed session (results of it were lost with the old connection): it replaces what
  // was held, and its operations are new ones here (the old ones may still feed tables already sent). The
  // old table is released only once the new one has gone to the scheduler (on every way out of here): an
  // earlier table the client let go of, which both read, must not be dropped in between.
  struct ReleasedLast {
    std::shared_ptr<RemoteSink> sink;
    ~ReleasedLast() {
      if (sink) sink->release_all();
    }
  } replaced;
  if (auto old = client.sinks.find(sink_id); in.getAgain() && old != client.sinks.end()) {
    replaced.sink = std::move(old->second);
    const std::uint64_t held = replaced.sink->unreleased;
    client.slots_held -= std::min(client.slots_held, held);
    g_.slots_held -= std::min(g_.slots_held, held);
    client.sinks.erase(old);
    for (auto op : in.getOperations()) client.ids.erase(op.getId());
  }
  if (auto reason = over_budget(g_.options.limits, g_, client, in.getSlots())) {
    refuse_submission(g_, peer, sink_id, *reason);
    throw wire::WireError("submission refused: " + *reason);
  }
  if (client.sinks.count(sink_id)) {
    refuse_submission(g_, peer, sink_id, "result table id reused by the client");
    throw wire::WireError("result table id reused by the client");
  }
  auto map_id = [&](OpId theirs) {
    auto [it, fresh] = client.ids.emplace(theirs, 0);
    if (fresh) it->second = next_op_id();
    return it->second;
  };
  wire::SubmitMessage submit;
  try {
    wire::DecodeLimits limits;
    limits.max_tasks = g_.options.limits.max_slots_per_submission;
    limits.client_code_refused = g_.options.limits.client_code_refused;
    submit = wire::decode(in, message.frames(), map_id, limits);
  } catch (const std::exception& e) {
    refuse_submission(g_, peer, sink_id, printable(e.what(), 400));
    throw;
  }
  auto sink = std::make_shared<RemoteSink>(submit.slots, g_.link, submit.watches, g_.server, peer.id);
  sink->set_tag(submit.sink_id);
  sink->unreleased = submit.slots;
  client.sinks[submit.sink_id] = sink;
  client.slots_held += submit.slots;
  g_.slots_held += submit.slots;
  caf::anon_send(
      g_.scheduler, submit_atom::value,
      Submission{std::move(submit.operations), std::move(submit.watches), sink, submit.checkpoint});
}

void ClientSession::on(Request<Envelope::RELEASE>, const Peer&, GatewayClient& client, Received& message) {
  auto release = message.envelope().getRelease();
  auto it = client.sinks.find(release.getSinkId());
  if (it == client.sinks.end()) throw wire::WireError("release of an unknown result table");
  auto sink = it->second;
  for (std::uint32_t slot : release.getSlots()) {
    if (slot >= sink->size())
      throw wire::WireError("release of slot " + std::to_string(slot) + " of " +
                            std::to_string(sink->size()));
    if (sink->release_once(slot)) {
      client.slots_held -= 1;
      g_.slots_held -= 1;
    }
  }
  if (sink->unreleased == 0) {
    client.sinks.erase(it);
    g_.released_since_trim += sink->size();
    if (g_.released_since_trim >= GatewayState::kTrimAfterSlots) {
      g_.released_since_trim = 0;
      g_.trim_soon();
    }
  }
}

void ClientSession::on(Request<Envelope::CANCEL>, const Peer&, GatewayClient& client, Received& message) {
  CancelRequest request;
  for (auto t : message.envelope().getCancel().getTasks()) {
    auto id = client.ids.find(t.getOp());
    if (id != client.ids.end()) request.tasks.push_back(TaskRef{id->second, t.getIndex()});
  }
  caf::anon_send(g_.scheduler, cancel_atom::value, std::move(request));
}

void ClientSession::on(Request<Envelope::STATUS_REQUEST>, const Peer& peer, GatewayClient&, Received&) {
  const auto client_count = static_cast<std::uint32_t>(g_.clients.size());
  ask_scheduler<SchedulerStatus>(
      g_, peer.id, status_atom::value, "status",
      [node = g_.name, client_count](const SchedulerStatus& status, transport::Outgoing& answer) {
        wire::encode(ClusterStatus{node, client_count, status}, answer.envelope().initStatus());
      });
}

void ClientSession::on(Request<Envelope::WORKERS_REQUEST>, const Peer& peer, GatewayClient&, Received&) {
  ask_scheduler<std::vector<WorkerInfo>>(
      g_, peer.id, workers_atom::value, "workers",
      [](const std::vector<WorkerInfo>& list, transport::Outgoing& answer) {
        wire::encode(list, answer.envelope().initWorkers(static_cast<unsigned>(list.size())));
      });
}

// What streams may name here: compiled simulations (plugins) and declared programs, from the registry that
// opens streams (the scheduler's own).
void ClientSession::on(Request<Envelope::SIMULATIONS_REQUEST>, const Peer& peer, GatewayClient&, Received&) {
  transport::Outgoing answer;
  const auto& registry = SimulationRegistry::global();
  const auto names = registry.names();
  auto list = answer.envelope().initSimulations(static_cast<unsigned>(names.size()));
  for (std::size_t i = 0; i < names.size(); ++i)
    wire::encode(describe(registry.get(names[i])), list[static_cast<unsigned>(i)]);
  g_.send(peer.id, answer);
}

// What a client may call by name here: the scheduler's registry, which checks every submission.
void ClientSession::on(Request<Envelope::FUNCTIONS_REQUEST>, const Peer& peer, GatewayClient&, Received&) {
  transport::Outgoing answer;
  const auto functions = Registry::global().functions();
  auto list = answer.envelope().initFunctions(static_cast<unsigned>(functions.size()));
  for (std::size_t i = 0; i < functions.size(); ++i)
    wire::encode(functions[i], list[static_cast<unsigned>(i)]);
  g_.send(peer.id, answer);
}

// A client's GLM fit: its partitions name the client's operation ids, mapped here to the scheduler's. The
// answer goes back on the connection with the client's request id.
void ClientSession::on(Request<Envelope::GLM>, const Peer& peer, GatewayClient& client, Received& message) {
  auto request = wire::decode(message.envelope().getGlm(), message.frames());
  auto* fit = std::get_if<GlmFitRequest>(&request.body);
  if (!fit)
    throw wire::WireError("a client may only send GLM fit requests, not " +
                          std::string(glm_kind_name(request.kind())));
  auto reply = std::make_shared<GlmReply>(
      GlmReply{[server = g_.server, peer_id = peer.id, request_id = request.session](GlmFitted result) {
        transport::Outgoing answer;
        wire::encode(GlmMessage{request_id, std::move(result)}, answer.envelope().initGlm(),
                     answer.attachments());
        if (auto target = server.lock()) target->send(peer_id, answer);
      }});
  try {
    for (auto& partition : fit->partitions) {
      const auto it = client.ids.find(partition.op);
      if (it == client.ids.end())
        throw std::invalid_argument("glm: a partition names an operation this client never submitted");
      partition.op = it->second;
    }
    caf::anon_send(g_.scheduler, glm_fit_atom::value, std::move(*fit), reply);
  } catch (const std::exception& e) {
    reply->deliver(glm_error_result(e.what()));
  }
}

// The client leaves: what it still held is released now, not after the grace period.
void ClientSession::on(Request<Envelope::SHUTDOWN>, const Peer& peer, GatewayClient& client, Received&) {
  g_.let_go(client);
  g_.clients.erase(peer.id);  // `client` is gone from here on
  if (auto target = g_.server.lock()) target->forget(peer.id);
}

}  // namespace tessera
