#include "nodes/stream_session.hpp"

#include <cmath>

#include "actors/messages.hpp"
#include "actors/python_modules.hpp"
#include "graph/definition_identity.hpp"
#include "graph/printable.hpp"
#include "nodes/stream_codec.hpp"

namespace tessera {

using wire::Envelope;

void StreamSession::answer_open(const Peer& peer, std::uint64_t request, std::uint64_t stream,
                                const std::string& error, std::uint32_t arity, const ProgramSpec* program,
                                const ReopenedStream* resumed) {
  transport::Outgoing answer;
  auto out = answer.envelope().initStreamOpened();
  out.setRequestId(request);
  out.setStreamId(stream);
  out.setError(error);
  out.setArity(arity);
  if (resumed) {
    out.setResumeFrom(resumed->resume_from);
    out.setSimulation(resumed->simulation);
    out.setMaxInFlight(resumed->max_in_flight);
    auto ids = out.initUnanswered(static_cast<unsigned>(resumed->unanswered.size()));
    for (std::size_t i = 0; i < resumed->unanswered.size(); ++i)
      ids.set(static_cast<unsigned>(i), resumed->unanswered[i]);
  }
  if (program) {
    auto names = out.initProgramParameters(static_cast<unsigned>(program->parameters.size()));
    for (std::size_t i = 0; i < program->parameters.size(); ++i)
      names.set(static_cast<unsigned>(i), program->parameters[i]);
  }
  g_.send(peer.id, answer);
}

void StreamSession::on(Request<Envelope::STREAM_OPEN>, const Peer& peer, GatewayClient& client,
                       Received& message) {
  const auto open = message.envelope().getStreamOpen();
  const auto& frames = message.frames();
  const std::string simulation = open.getSimulation();
  if (!g_.options.open_stream)
    return answer_open(peer, open.getRequestId(), 0, "this node runs no streams", 0);
  if (open.getResume() != 0) return resume(peer, client, open);
  // First: a node that runs no client code has not even registered what would run it.
  if (!g_.options.limits.client_code_refused.empty() &&
      (simulation == kClientClassSimulation ||
       std::string_view(open.getGenerator().cStr()) == kClientGenerator))
    return answer_open(peer, open.getRequestId(), 0,
                       "a stream of Python code this client sent: " + g_.options.limits.client_code_refused,
                       0);
  const SimulationType* type = SimulationRegistry::global().find(simulation);
  if (!type) {
    std::string known;
    for (const auto& n : SimulationRegistry::global().names()) known += (known.empty() ? "" : ", ") + n;
    return answer_open(peer, open.getRequestId(), 0,
                       "unknown simulation " + in_quotes(simulation) +
                           " (registered on the scheduler: " + (known.empty() ? "none" : known) + ")",
                       0);
  }
  // A client that defines the simulation itself must define the one the cluster runs.
  if (const auto theirs = open.getSimulationIdentity();
      theirs.size() != 0 && std::string_view(theirs.cStr(), theirs.size()) != type->identity)
    return answer_open(peer, open.getRequestId(), 0,
                       definitions_differ("simulation", printable(simulation, 200), "this client",
                                          printable(std::string_view(theirs.cStr(), theirs.size()), 300),
                                          "the scheduler", type->identity),
                       0);
  StreamSettings settings;
  try {
    settings = wire::decode(open, frames);
  } catch (const wire::WireError& e) {
    return answer_open(peer, open.getRequestId(), 0, e.what(), 0);
  }
  if (auto wrong = settings.check(); !wrong.empty())
    return answer_open(peer, open.getRequestId(), 0, wrong, 0);
  // Where program sets write their files is the node's to say (a worker's data_dir), never a client's.
  if (settings.config && settings.config->has("tessera.runs_dir"))
    return answer_open(
        peer, open.getRequestId(), 0,
        "config key 'tessera.runs_dir' is the node's (where program sets write their files); a "
        "client may not set it",
        0);
  // The client's own bound, never past what the node lets a client push ahead.
  settings.max_in_flight = std::min<std::uint64_t>(
      settings.max_in_flight ? settings.max_in_flight : StreamSettings::kDefaultMaxInFlight,
      g_.options.limits.max_slots_per_client);
  if (client.streams.size() >= g_.options.limits.max_streams_per_client)
    return answer_open(peer, open.getRequestId(), 0,
                       "this client has " + std::to_string(client.streams.size()) +
                           " streams open, the most one client may have (limits.max_streams_per_client)",
                       0);
  auto sink = std::make_shared<RemoteStreamSink>(g_.server, peer.id);
  try {
    auto [id, actor] = g_.options.open_stream(settings, sink);
    sink->set_stream(id);
    client.streams[id] = actor;
    client.pushed[id] = GatewayClient::Pushed{sink, 0};
    g_.streams[id] = actor;
    answer_open(peer, open.getRequestId(), id, "", static_cast<std::uint32_t>(type->arity.value_or(0)),
                type->program.get());
    sink->opened();
  } catch (const std::exception& e) {
    answer_open(peer, open.getRequestId(), 0, e.what(), 0);
  }
}

void StreamSession::resume(const Peer& peer, GatewayClient& client, wire::StreamOpen::Reader open) {
  const std::uint64_t id = open.getResume(), request = open.getRequestId();
  if (!g_.options.reopen_stream) return answer_open(peer, request, 0, "this node resumes no streams", 0);
  if (open.getInputName().size() > StreamInput::kMaxNameBytes ||
      open.getInputDigest().size() > StreamInput::kMaxDigestBytes)
    return answer_open(peer, request, 0,
                       "a resume of stream " + std::to_string(id) + " names an input over the limit of " +
                           std::to_string(StreamInput::kMaxNameBytes) + " bytes, or a digest over " +
                           std::to_string(StreamInput::kMaxDigestBytes),
                       0);
  if (!client.streams.count(id) && client.streams.size() >= g_.options.limits.max_streams_per_client)
    return answer_open(peer, request, 0,
                       "this client has " + std::to_string(client.streams.size()) +
                           " streams open, the most one client may have (limits.max_streams_per_client)",
                       0);
  // A stream of Python code a client sent is not run again once the node runs none (as at a restart).
  if (!g_.options.limits.client_code_refused.empty() && g_.options.store)
    if (const auto stored = g_.options.store()->stream(id);
        stored && (stored->settings.simulation == kClientClassSimulation ||
                   stored->settings.generator == kClientGenerator))
      return answer_open(peer, request, 0,
                         "stream " + std::to_string(id) +
                             " runs Python code a client sent: " + g_.options.limits.client_code_refused,
                         0);
  const StreamInput input{open.getInputSets(), open.getInputName(), open.getInputDigest()};
  auto sink = std::make_shared<RemoteStreamSink>(g_.server, peer.id);
  sink->set_stream(id);
  ReopenedStream reopened;
  try {
    reopened = g_.options.reopen_stream(id, input, sink);
  } catch (const std::exception& e) {
    return answer_open(peer, request, 0, printable(e.what(), 2000), 0);
  }
  // A client that pushed it before (gone, or about to be found gone) has no say in it any more.
  for (auto& [other_id, other] : g_.clients)
    if (&other != &client) {
      other.streams.erase(id);
      other.pushed.erase(id);
    }
  g_.orphans.erase(id);
  client.streams[id] = reopened.actor;
  client.pushed[id] = GatewayClient::Pushed{sink, 0};
  g_.streams[id] = reopened.actor;
  const SimulationType* type = SimulationRegistry::global().find(reopened.simulation);
  answer_open(peer, request, id, "", type ? static_cast<std::uint32_t>(type->arity.value_or(0)) : 0,
              type ? type->program.get() : nullptr, &reopened);
  sink->opened();
}

// A client that reconnected takes its stream back: the stream's results go to this connection now, and
// what it waits for and the store has is sent again. A stream that finished meanwhile is answered from the
// store.
void StreamSession::on(Request<Envelope::STREAM_ATTACH>, const Peer& peer, GatewayClient& client,
                       Received& message) {
  const auto in = message.envelope().getStreamAttach();
  const std::uint64_t id = in.getStreamId(), request = in.getRequestId();
  if (in.getUnanswered().size() > g_.options.limits.max_slots_per_client) {
    answer_open(peer, request, 0,
                "stream " + std::to_string(id) + ": " + std::to_string(in.getUnanswered().size()) +
                    " unanswered ids exceed the limit of " +
                    std::to_string(g_.options.limits.max_slots_per_client) + " (limits.max_slots_per_client)",
                0);
    return;
  }
  if (!client.streams.count(id) && client.streams.size() >= g_.options.limits.max_streams_per_client)
    return answer_open(peer, request, 0,
                       "this client has " + std::to_string(client.streams.size()) +
                           " streams open, the most one client may have (limits.max_streams_per_client)",
                       0);
  std::shared_ptr<const ResultStore> store = g_.options.store ? g_.options.store() : nullptr;
  std::optional<StreamInfo> info;
  if (store) info = store->stream(id);
  if (!info) return answer_open(peer, request, 0, "no stream " + std::to_string(id) + " on this node", 0);
  std::vector<std::uint64_t> unanswered;
  unanswered.reserve(in.getUnanswered().size());
  for (std::uint64_t wanted : in.getUnanswered()) unanswered.push_back(wanted);
  const std::uint64_t resend_from = in.getResendFrom() == 0 ? ~std::uint64_t{0} : in.getResendFrom() - 1;
  for (auto& [other_id, other] : g_.clients)
    if (&other != &client) {
      other.streams.erase(id);
      other.pushed.erase(id);
    }
  g_.orphans.erase(id);
  auto sink = std::make_shared<RemoteStreamSink>(g_.server, peer.id);
  sink->set_stream(id);
  answer_open(peer, request, id, "", 0);
  sink->opened();
  caf::actor actor = g_.options.stream_actor ? g_.options.stream_actor(id) : caf::actor();
  if (actor) {
    // Asked here, on the I/O thread, so that the pushes this client sends again reach the stream after
    // it has attached. The stream answers at once; a stream that ended meanwhile answers with an error.
    caf::scoped_actor self{g_.scheduler->home_system()};
    bool attached = false;
    self->request(actor, std::chrono::seconds(5), stream_attach_atom::value,
                  StreamAttach{sink, unanswered, resend_from})
        .receive([&](bool ok) { attached = ok; }, [&](const caf::error&) {});
    if (attached) {
      client.streams[id] = actor;
      client.pushed[id] = GatewayClient::Pushed{sink, 0};
      g_.streams[id] = actor;
      return;
    }
  }
  // Finished (or no longer running): what the client waits for comes from the store, off this thread.
  auto job = [store, sink, id, unanswered = std::move(unanswered), resend_from] {
    try {
      std::vector<StreamRecord> batch;
      for (std::uint64_t wanted : unanswered) {
        if (auto r = store->get(id, wanted)) batch.push_back(r->record());
        if (batch.size() >= 4096) {
          sink->deliver(batch);
          batch.clear();
        }
      }
      if (resend_from != ~std::uint64_t{0})
        store->scan(id, resend_from, ~std::uint64_t{0}, [&](const StreamResult& r) {
          batch.push_back(r.record());
          if (batch.size() >= 4096) {
            sink->deliver(batch);
            batch.clear();
          }
          return true;
        });
      sink->deliver(batch);
      const auto now = store->stream(id);
      sink->accept(now ? now->pushed : 0);
      sink->finish(now && now->closed
                       ? std::string()
                       : "stream " + std::to_string(id) + " is no longer running on this node (it failed)");
    } catch (const std::exception& e) {
      sink->finish(printable(e.what(), 400));
    }
  };
  if (!g_.queries->post(std::move(job)))
    sink->finish("this node is answering as many queries as it queues; attach again later");
}

// Any client may cancel sets of a running stream (the CLI does, for a stream another client pushes). The
// stream actor answers the connection itself, so the I/O thread never waits for it.
void StreamSession::on(Request<Envelope::STREAM_CANCEL>, const Peer& peer, GatewayClient&,
                       Received& message) {
  const auto in = message.envelope().getStreamCancel();
  const std::uint64_t request = in.getRequestId();
  const std::uint64_t id = in.getStreamId();
  auto answer = [target = g_.server, peer_id = peer.id, request](CancelledSets counts, std::string error) {
    transport::Outgoing message;
    auto out = message.envelope().initStreamCancelled();
    out.setRequestId(request);
    out.setError(error);
    out.setQueued(counts.queued);
    out.setRunning(counts.running);
    if (auto server = target.lock()) server->send(peer_id, message);
  };
  // The cluster's own map forgets a stream when it finishes; this gateway's keeps its last actor.
  caf::actor actor;
  if (g_.options.stream_actor)
    actor = g_.options.stream_actor(id);
  else if (auto it = g_.streams.find(id); it != g_.streams.end())
    actor = it->second;
  if (!actor)
    return answer({}, "stream " + std::to_string(id) +
                          " is not running on this node (it finished, or there is no such stream): "
                          "nothing to cancel");
  StreamCancel cancel{{}, in.getWhere(), std::make_shared<CancelReply>(std::move(answer)), in.getWhole()};
  if (cancel.whole && (in.getRanges().size() != 0 || in.getWhere().size() != 0))
    return (*cancel.reply)({}, "stream " + std::to_string(id) +
                                   ": a cancellation of the whole stream selects no sets by ids or filter");
  cancel.ranges.reserve(in.getRanges().size());
  for (auto r : in.getRanges()) cancel.ranges.push_back(IdRange{r.getFirst(), r.getLast()});
  caf::anon_send(actor, stream_cancel_atom::value, std::move(cancel));
}

void StreamSession::on(Request<Envelope::STREAM_PUSH>, const Peer& peer, GatewayClient& client,
                       Received& message) {
  auto envelope = message.envelope();
  auto push = envelope.getStreamPush();
  auto it = client.streams.find(push.getStreamId());
  if (it == client.streams.end())
    throw wire::WireError("push to stream " + std::to_string(push.getStreamId()) +
                          ", which this client has not open");
  auto& pushed = client.pushed[push.getStreamId()];
  // Sets sent again after a reconnect, and results sent again, make these counts approximate: the
  // stream actor enforces the stream's own max_in_flight exactly.
  const std::uint64_t sent = pushed.sets + push.getParameters().size();
  const std::uint64_t answered = pushed.sink ? pushed.sink->delivered() : 0;
  const std::uint64_t ahead = sent > answered ? sent - answered : 0;
  if (ahead > g_.options.limits.max_slots_per_client) {
    const std::string reason = "stream " + std::to_string(push.getStreamId()) + ": " + std::to_string(ahead) +
                               " parameter sets pushed ahead of their results exceed the limit of " +
                               std::to_string(g_.options.limits.max_slots_per_client) +
                               " (limits.max_slots_per_client); the push was refused";
    transport::Outgoing error;
    error.envelope().initError().setReason(reason);
    g_.send(peer.id, error);
    throw wire::WireError(reason);
  }
  const auto priorities = push.getPriorities();
  if (priorities.size() != 0 && priorities.size() != push.getParameters().size())
    throw wire::WireError("push to stream " + std::to_string(push.getStreamId()) + " has " +
                          std::to_string(priorities.size()) + " priorities for " +
                          std::to_string(push.getParameters().size()) + " parameter sets");
  for (unsigned i = 0; i < priorities.size(); ++i)
    if (!std::isfinite(priorities[i]))
      throw wire::WireError("push to stream " + std::to_string(push.getStreamId()) +
                            ": the priority of parameter set " + std::to_string(push.getFirstId() + i) +
                            " is not a finite number");
  auto timeouts = wire::decode_timeouts(push.getTimeouts(), push.getParameters().size(),
                                        "push to stream " + std::to_string(push.getStreamId()));
  pushed.sets += push.getParameters().size();
  StreamBatch batch{push.getFirstId(), {}, {}, std::move(timeouts)};
  batch.parameters.reserve(push.getParameters().size());
  for (auto p : push.getParameters()) batch.parameters.push_back(wire::decode(p, message.frames()));
  batch.priorities.reserve(priorities.size());
  for (double priority : priorities) batch.priorities.push_back(priority);
  caf::anon_send(it->second, stream_push_atom::value, std::move(batch));
}

void StreamSession::on(Request<Envelope::STREAM_CLOSE>, const Peer&, GatewayClient& client,
                       Received& message) {
  auto envelope = message.envelope();
  auto it = client.streams.find(envelope.getStreamClose());
  if (it == client.streams.end()) return;
  caf::anon_send(it->second, stream_close_atom::value);
  client.streams.erase(it);
  client.pushed.erase(envelope.getStreamClose());
}

}  // namespace tessera
