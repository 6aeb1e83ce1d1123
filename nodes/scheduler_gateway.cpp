#include "nodes/scheduler_gateway.hpp"

#include <iostream>
#include <sstream>
#include <unordered_map>

#include "actors/glm/solver_actor.hpp"
#include "actors/messages.hpp"
#include "messages/protocol_codec.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/remote_worker_proxy.hpp"
#include "nodes/stream_codec.hpp"
#include "nodes/wire_routes.hpp"
#include "nodes/worker_codec.hpp"
#include "storage/result_query.hpp"

namespace tessera {
namespace {

// A remote client's result table, seen from the scheduler: deliveries are sent back, not stored.
class RemoteSink final : public ResultSink {
 public:
  RemoteSink(std::uint32_t slots, std::weak_ptr<const SchedulerLink> link, std::vector<Watch> watches,
             std::weak_ptr<transport::Server> server, std::string peer)
      : ResultSink(slots, std::move(link), std::move(watches)),
        server_(std::move(server)),
        peer_(std::move(peer)) {}

  void deliver(std::vector<Delivery>& batch) override {
    auto server = server_.lock();
    if (!server) return;
    transport::Outgoing message;
    wire::encode(tag(), batch, message.envelope().initResults(), message.attachments());
    server->send(peer_, message);
  }

  // Releases a slot once (the client's release, or the grace period's end).
  void release_once(std::uint32_t slot) {
    if (released_.empty()) released_.resize(size());
    if (released_[slot]) return;
    released_[slot] = true;
    release(slot);
    unreleased -= 1;
  }
  void release_all() {
    for (std::uint32_t slot = 0; slot < size(); ++slot) release_once(slot);
  }

  std::uint32_t unreleased = 0;

 private:
  std::vector<bool> released_;
  std::weak_ptr<transport::Server> server_;
  std::string peer_;
};

// A remote client's stream, seen from the scheduler: durable results are sent back, not queued.
class RemoteStreamSink final : public StreamSink {
 public:
  RemoteStreamSink(std::weak_ptr<transport::Server> server, std::string peer)
      : StreamSink(1), server_(std::move(server)), peer_(std::move(peer)) {}
  void set_stream(std::uint64_t id) { stream_ = id; }
  void deliver(std::vector<StreamRecord>& records) override {
    auto server = server_.lock();
    if (!server || records.empty()) return;
    transport::Outgoing message;
    auto out = message.envelope().initStreamResults();
    out.setStreamId(stream_);
    auto list = wire::init_records(out, records.size());
    for (std::size_t i = 0; i < records.size(); ++i)
      wire::encode(records[i], list[static_cast<unsigned>(i)], message.attachments());
    server->send(peer_, message);
  }
  void finish(std::string error) override {
    auto server = server_.lock();
    if (!server) return;
    transport::Outgoing message;
    auto out = message.envelope().initStreamFinished();
    out.setStreamId(stream_);
    out.setError(error);
    server->send(peer_, message);
  }

 private:
  std::weak_ptr<transport::Server> server_;
  std::string peer_;
  std::uint64_t stream_ = 0;
};

}  // namespace

struct SchedulerGateway::State {
  using Clock = std::chrono::steady_clock;
  caf::actor scheduler;
  std::string name;
  GatewayOptions options;
  std::weak_ptr<const SchedulerLink> link;
  std::weak_ptr<transport::Server> server;
  transport::LogFunction log;
  struct Client {
    std::string name;
    std::unordered_map<OpId, OpId> ids;  // the client's operation ids -> this process's
    std::unordered_map<std::uint64_t, std::shared_ptr<RemoteSink>> sinks;
    Clock::time_point last_seen = Clock::now();
    std::unordered_map<std::uint64_t, caf::actor> streams;  // its open streams
  };
  struct WorkerPeer {
    std::uint32_t id = 0;
    std::string name;
    Clock::time_point last_seen = Clock::now();
  };
  // I/O thread only.
  std::unordered_map<std::string, Client> clients;
  std::unordered_map<std::string, WorkerPeer> workers;
  std::unordered_map<std::uint64_t, caf::actor> streams;  // every open stream, for workers' answers

  void answer_open(const transport::PeerInfo& peer, std::uint64_t request, std::uint64_t stream,
                   const std::string& error, std::uint32_t arity) {
    transport::Outgoing answer;
    auto out = answer.envelope().initStreamOpened();
    out.setRequestId(request);
    out.setStreamId(stream);
    out.setError(error);
    out.setArity(arity);
    if (auto target = server.lock()) target->send(peer.id, answer);
  }

  void open_stream(const transport::PeerInfo& peer, Client& client, wire::StreamOpen::Reader open,
                   std::span<const std::span<const std::byte>> frames) {
    const std::string simulation = open.getSimulation();
    if (!options.open_stream)
      return answer_open(peer, open.getRequestId(), 0, "this node runs no streams", 0);
    const SimulationType* type = SimulationRegistry::global().find(simulation);
    if (!type) {
      std::string known;
      for (const auto& n : SimulationRegistry::global().names()) known += (known.empty() ? "" : ", ") + n;
      return answer_open(peer, open.getRequestId(), 0,
                         "unknown simulation '" + simulation +
                             "' (registered on the scheduler: " + (known.empty() ? "none" : known) + ")",
                         0);
    }
    StreamSettings settings;
    settings.simulation = simulation;
    settings.config = wire::decode(open.getConfig(), frames);
    settings.pool_size = open.getPoolSize();
    auto sink = std::make_shared<RemoteStreamSink>(server, peer.id);
    try {
      auto [id, actor] = options.open_stream(settings, sink);
      sink->set_stream(id);
      client.streams[id] = actor;
      streams[id] = actor;
      answer_open(peer, open.getRequestId(), id, "", static_cast<std::uint32_t>(type->arity.value_or(0)));
    } catch (const std::exception& e) {
      answer_open(peer, open.getRequestId(), 0, e.what(), 0);
    }
  }

  // Typed answers (summary, records) for the client library; text for the CLI and exports.
  void answer_query(wire::ResultsQuery::Reader query, wire::ResultsAnswer::Builder out,
                    wire::Attachments& attachments) {
    const std::string format = query.getFormat();
    if (format == "records") {
      if (!options.store) throw std::runtime_error("this node stores no results");
      auto store = options.store();
      const auto filter = ResultFilter::parse(std::string(query.getFilter()));
      std::vector<StreamResult> found;
      store->scan(query.getStreamId(), query.getFirst(), query.getLast(), [&](const StreamResult& r) {
        if (filter.matches(r)) found.push_back(r);
        return found.size() < (1u << 20);  // one answer carries at most 2^20 results
      });
      auto list = out.initRecords(static_cast<unsigned>(found.size()));
      for (std::size_t i = 0; i < found.size(); ++i) {
        const auto& r = found[i];
        auto b = list[static_cast<unsigned>(i)];
        wire::encode(StreamRecord{r.id, r.value, r.failed, r.error, r.node}, b, attachments);
        wire::encode(r.parameters, b.initParameters(), attachments);
      }
      return;
    }
    if (format == "summary") {
      auto store = options.store ? options.store() : nullptr;
      if (!store) throw std::runtime_error("this node stores no results");
      const std::string field = summary_field(query);
      const auto s = summary_of(*store, query, ResultFilter::parse(std::string(query.getFilter())));
      auto b = out.initSummary();
      b.setCount(s.count);
      b.setFailed(s.failed);
      b.setNumeric(s.numeric);
      b.setMean(s.mean);
      b.setMin(s.min);
      b.setMax(s.max);
      auto h = b.initHistogram(static_cast<unsigned>(s.histogram.size()));
      for (std::size_t i = 0; i < s.histogram.size(); ++i) h.set(static_cast<unsigned>(i), s.histogram[i]);
      out.setText(summary_json(*store, query.getStreamId(), field, s));
      return;
    }
    out.setText(query_text(query));
  }

  static std::string summary_field(wire::ResultsQuery::Reader query) {
    return query.getField().size() ? std::string(query.getField()) : "result";
  }

  // The one summary of a query's field, for the typed answer and the text one alike.
  static ResultSummary summary_of(const ResultStore& store, wire::ResultsQuery::Reader query,
                                  const ResultFilter& filter) {
    return summarize(store, query.getStreamId(), filter, ResultField::parse(summary_field(query)),
                     query.getBins());
  }

  // The summary line the CLI prints, written by the store's exporter (the in-process path writes it too).
  static std::string summary_json(const ResultStore& store, std::uint64_t stream, const std::string& field,
                                  const ResultSummary& s) {
    std::ostringstream out;
    export_summary_json(store, stream, field, s, out);
    return out.str();
  }

  std::string query_text(wire::ResultsQuery::Reader query) {
    if (!options.store) throw std::runtime_error("this node stores no results");
    auto store = options.store();
    const auto filter = ResultFilter::parse(std::string(query.getFilter()));
    const std::string format = query.getFormat();
    std::ostringstream out;
    if (!store->stream(query.getStreamId()))
      throw std::runtime_error("no stream " + std::to_string(query.getStreamId()) + " in this node's store");
    if (format == "csv") {
      export_csv(*store, query.getStreamId(), filter, out);
    } else if (format == "json") {
      export_json(*store, query.getStreamId(), filter, out);
    } else if (format == "count") {
      out << summarize(*store, query.getStreamId(), filter, {}, 0).count << "\n";
    } else if (format == "summary") {
      out << summary_json(*store, query.getStreamId(), summary_field(query),
                          summary_of(*store, query, filter));
    } else {
      throw std::runtime_error("unknown format '" + format + "' (summary, count, csv or json)");
    }
    return out.str();
  }

  // A client that left closes its streams: what it pushed still runs and is stored, then they finish.
  void close_streams(Client& client) {
    for (auto& [id, actor] : client.streams) caf::anon_send(actor, stream_close_atom::value);
    client.streams.clear();
  }

  // A worker process said hello: a proxy stands for it, and the scheduler gives it an id.
  void worker_joined(const transport::PeerInfo& peer) {
    auto& system = scheduler->home_system();
    auto proxy = spawn_remote_worker_proxy(system, server, peer.id);
    caf::scoped_actor self{system};
    std::uint32_t id = 0;
    bool registered = false;
    self->request(scheduler, std::chrono::seconds(10), register_atom::value,
                  WorkerRegistration{proxy, std::max<std::uint32_t>(1, peer.threads), peer.name, peer.listen,
                                     peer.public_key, peer.memory_limit})
        .receive(
            [&](std::uint32_t assigned) {
              id = assigned;
              registered = true;
            },
            [&](const caf::error&) {});
    if (!registered) {
      log("worker '" + peer.name + "' could not be registered: the scheduler did not answer");
      caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
      return;
    }
    workers[peer.id] = WorkerPeer{id, peer.name};
    log("worker '" + peer.name + "' joined as worker " + std::to_string(id) + " (" +
        std::to_string(peer.threads) + " threads, peers reach it at " + peer.listen + ")");
  }

  // Heartbeat timeouts, on the I/O thread.
  void tick(transport::Server& target) {
    const auto now = Clock::now();
    for (auto it = workers.begin(); it != workers.end();) {
      if (now - it->second.last_seen <= options.worker_timeout) {
        ++it;
        continue;
      }
      log("worker '" + it->second.name + "' (worker " + std::to_string(it->second.id) +
          ") sent nothing for " + std::to_string(options.worker_timeout.count()) +
          " ms: declared lost; its running tasks and held results are recomputed elsewhere");
      caf::anon_send(scheduler, lost_atom::value, it->second.id);
      target.forget(it->first);
      it = workers.erase(it);
    }
    for (auto it = clients.begin(); it != clients.end();) {
      if (now - it->second.last_seen <= options.client_grace) {
        ++it;
        continue;
      }
      log("client '" + it->second.name + "' sent nothing for " +
          std::to_string(options.client_grace.count()) + " ms: its " +
          std::to_string(it->second.sinks.size()) + " result tables are released");
      for (auto& [id, sink] : it->second.sinks) sink->release_all();
      close_streams(it->second);
      target.forget(it->first);
      it = clients.erase(it);
    }
  }

  // A client's GLM fit: its partitions name the client's operation ids, mapped here to the scheduler's.
  // The answer goes back on the connection with the client's request id.
  void fit_glm(Client& client, const transport::PeerInfo& peer, transport::Received& message) {
    auto request = wire::decode(message.envelope().getGlm(), message.frames());
    auto* fit = std::get_if<GlmFitRequest>(&request.body);
    if (!fit)
      throw wire::WireError("a client may only send GLM fit requests, not " +
                            std::string(glm_kind_name(request.kind())));
    auto reply = std::make_shared<GlmReply>(
        GlmReply{[server = server, peer_id = peer.id, request_id = request.session](GlmFitted result) {
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
      caf::anon_send(scheduler, glm_fit_atom::value, std::move(*fit), reply);
    } catch (const std::exception& e) {
      reply->deliver(glm_error_result(e.what()));
    }
  }

  void handle_worker(WorkerPeer& worker, transport::Received& message) {
    auto envelope = message.envelope();
    worker.last_seen = Clock::now();
    // The transport already refused what a worker may not send to the scheduler (the wire table).
    const wire::DecodeContext context{message.frames(), worker.id};
    switch (envelope.which()) {
      case wire::Envelope::SIMULATED: {
        // For the stream's actor, not the scheduler.
        auto it = streams.find(envelope.getSimulated().getStreamId());
        if (it == streams.end()) return;  // the stream ended meanwhile
        wire::deliver_to_actor<wire::kWorkerToScheduler>(envelope, context, it->second);
        return;
      }
      case wire::Envelope::GLM: {
        auto answer = wire::decode(envelope.getGlm(), message.frames());
        if (answer.kind() != GlmKind::loaded && answer.kind() != GlmKind::partials &&
            answer.kind() != GlmKind::solved)
          throw wire::WireError("a worker may not send a GLM " + std::string(glm_kind_name(answer.kind())) +
                                " message");
        caf::anon_send(scheduler, glm_atom::value, std::move(answer));
        return;
      }
      case wire::Envelope::HEARTBEAT:
        return;
      default:
        if (!wire::deliver_to_actor<wire::kWorkerToScheduler>(envelope, context, scheduler))
          throw wire::WireError("no handler here for '" + wire::kind_name(envelope.which()) + "'");
    }
  }

  // Asks the scheduler without holding up the I/O thread: a short-lived actor waits for the answer and
  // sends what `answer` makes of it to the peer (or an error naming the request, after 10 s).
  template <class Answer, class Request>
  static void ask(caf::event_based_actor* self, caf::actor scheduler, std::weak_ptr<transport::Server> server,
                  std::string peer_id, Request request, std::string what,
                  std::function<void(const Answer&, transport::Outgoing&)> answer) {
    self->request(scheduler, std::chrono::seconds(10), request)
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
  void ask_scheduler(const std::string& peer_id, Request request, const std::string& what,
                     std::function<void(const Answer&, transport::Outgoing&)> answer) {
    // The arguments travel as spawn arguments: CAF 0.17 dereferences a null argument tuple when an actor
    // function is spawned without any.
    scheduler->home_system().spawn(ask<Answer, Request>, scheduler, server, peer_id, request, what,
                                   std::move(answer));
  }

  void answer_workers(const transport::PeerInfo& peer) {
    ask_scheduler<std::vector<WorkerInfo>>(
        peer.id, workers_atom::value, "workers",
        [](const std::vector<WorkerInfo>& list, transport::Outgoing& answer) {
          auto out = answer.envelope().initWorkers(static_cast<unsigned>(list.size()));
          for (std::size_t i = 0; i < list.size(); ++i) {
            auto entry = out[static_cast<unsigned>(i)];
            entry.setWorkerId(list[i].id);
            entry.setName(list[i].name);
            entry.setAddress(list[i].address.empty() ? "(in the scheduler's process)" : list[i].address);
            entry.setThreads(list[i].threads);
            entry.setMemoryLimit(list[i].memory_limit);
            entry.setTasksAssigned(list[i].tasks_assigned);
            entry.setRetiring(list[i].retiring);
          }
        });
  }

  void answer_status(const transport::PeerInfo& peer) {
    const auto client_count = static_cast<std::uint32_t>(clients.size());
    ask_scheduler<SchedulerStatus>(
        peer.id, status_atom::value, "status",
        [node = name, client_count](const SchedulerStatus& status, transport::Outgoing& answer) {
          auto out = answer.envelope().initStatus();
          out.setName(node);
          out.setWorkers(status.workers);
          out.setRetiringWorkers(status.retiring_workers);
          out.setOperations(status.operations);
          out.setTasksPending(status.tasks_pending);
          out.setResultsHeld(status.results_held);
          out.setTasksDone(status.tasks_done);
          out.setTasksErred(status.tasks_erred);
          out.setTasksCancelled(status.tasks_cancelled);
          out.setTasksStolen(status.tasks_stolen);
          out.setClients(client_count);
          out.setWorkersLost(status.workers_lost);
          out.setTasksRecomputed(status.tasks_recomputed);
        });
  }

  void refuse_submission(const transport::PeerInfo& peer, wire::Submit::Reader submit,
                         const std::string& reason) {
    auto target = server.lock();
    const std::uint32_t slots = std::min<std::uint32_t>(submit.getSlots(), wire::DecodeLimits{}.max_tasks);
    if (!target) return;
    auto error =
        std::make_shared<const TaskFailed>("(submission)", "", "the scheduler rejected it: " + reason, false);
    std::vector<Delivery> deliveries;
    deliveries.reserve(slots);
    for (std::uint32_t slot = 0; slot < slots; ++slot)
      deliveries.push_back(Delivery{slot, TaskState::erred, Value{}, error});
    transport::Outgoing answer;
    wire::encode(submit.getSinkId(), deliveries, answer.envelope().initResults(), answer.attachments());
    target->send(peer.id, answer);
  }

  void handle(const transport::PeerInfo& peer, transport::Received& message) {
    if (peer.role == wire::Role::WORKER) {
      auto worker = workers.find(peer.id);
      if (worker == workers.end()) throw wire::WireError("a message from a worker that is not registered");
      handle_worker(worker->second, message);
      return;
    }
    auto envelope = message.envelope();
    Client& client = clients[peer.id];
    client.name = peer.name;
    client.last_seen = Clock::now();
    switch (envelope.which()) {
      case wire::Envelope::SUBMIT: {
        auto map_id = [&](OpId theirs) {
          auto [it, fresh] = client.ids.emplace(theirs, 0);
          if (fresh) it->second = next_op_id();
          return it->second;
        };
        wire::SubmitMessage submit;
        try {
          submit = wire::decode(envelope.getSubmit(), message.frames(), map_id);
        } catch (const wire::WireError& e) {
          // The client waits on these results: every slot it asked for fails with the reason.
          refuse_submission(peer, envelope.getSubmit(), e.what());
          throw;
        }
        if (client.sinks.count(submit.sink_id)) throw wire::WireError("result table id reused by the client");
        auto sink = std::make_shared<RemoteSink>(submit.slots, link, submit.watches, server, peer.id);
        sink->set_tag(submit.sink_id);
        sink->unreleased = submit.slots;
        client.sinks[submit.sink_id] = sink;
        caf::anon_send(scheduler, submit_atom::value,
                       Submission{std::move(submit.operations), std::move(submit.watches), sink});
        return;
      }
      case wire::Envelope::RELEASE: {
        auto release = envelope.getRelease();
        auto it = client.sinks.find(release.getSinkId());
        if (it == client.sinks.end()) throw wire::WireError("release of an unknown result table");
        auto sink = it->second;
        for (std::uint32_t slot : release.getSlots()) {
          if (slot >= sink->size())
            throw wire::WireError("release of slot " + std::to_string(slot) + " of " +
                                  std::to_string(sink->size()));
          sink->release_once(slot);
        }
        if (sink->unreleased == 0) client.sinks.erase(it);
        return;
      }
      case wire::Envelope::CANCEL: {
        CancelRequest request;
        for (auto t : envelope.getCancel().getTasks()) {
          auto id = client.ids.find(t.getOp());
          if (id != client.ids.end()) request.tasks.push_back(TaskRef{id->second, t.getIndex()});
        }
        caf::anon_send(scheduler, cancel_atom::value, std::move(request));
        return;
      }
      case wire::Envelope::STATUS_REQUEST:
        answer_status(peer);
        return;
      case wire::Envelope::WORKERS_REQUEST:
        answer_workers(peer);
        return;
      case wire::Envelope::STREAM_OPEN:
        open_stream(peer, client, envelope.getStreamOpen(), message.frames());
        return;
      case wire::Envelope::STREAM_PUSH: {
        auto push = envelope.getStreamPush();
        auto it = client.streams.find(push.getStreamId());
        if (it == client.streams.end())
          throw wire::WireError("push to stream " + std::to_string(push.getStreamId()) +
                                ", which this client has not open");
        StreamBatch batch{push.getFirstId(), {}};
        batch.parameters.reserve(push.getParameters().size());
        for (auto p : push.getParameters()) batch.parameters.push_back(wire::decode(p, message.frames()));
        caf::anon_send(it->second, stream_push_atom::value, std::move(batch));
        return;
      }
      case wire::Envelope::STREAM_CLOSE: {
        auto it = client.streams.find(envelope.getStreamClose());
        if (it == client.streams.end()) return;
        caf::anon_send(it->second, stream_close_atom::value);
        client.streams.erase(it);
        return;
      }
      case wire::Envelope::RESULTS_QUERY: {
        auto query = envelope.getResultsQuery();
        transport::Outgoing answer;
        auto out = answer.envelope().initResultsAnswer();
        out.setRequestId(query.getRequestId());
        try {
          answer_query(query, out, answer.attachments());
        } catch (const std::exception& e) {
          out.setError(e.what());
        }
        if (auto target = server.lock()) target->send(peer.id, answer);
        return;
      }
      case wire::Envelope::GLM:
        fit_glm(client, peer, message);
        return;
      case wire::Envelope::SHUTDOWN: {
        // The client leaves: what it still held is released now, not after the grace period.
        for (auto& [id, sink] : client.sinks) sink->release_all();
        close_streams(client);
        clients.erase(peer.id);
        if (auto target = server.lock()) target->forget(peer.id);
        return;
      }
      case wire::Envelope::HEARTBEAT:
        return;
      default:  // the transport refused what a client may not send; the rest is handled above
        throw wire::WireError("no handler here for '" + wire::kind_name(envelope.which()) + "'");
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
  if (!options.log)
    options.log = [](const std::string& line) { std::cerr << "[tessera] " << line << std::endl; };
  state_->log = options.log;
  auto state = state_;
  options.defer_start = true;  // the handler needs state_->server before the first message
  options.joined = [state](transport::Server&, const transport::PeerInfo& peer) {
    if (peer.role == wire::Role::WORKER) {
      state->worker_joined(peer);
    } else {
      auto& client = state->clients[peer.id];
      client.name = peer.name;
      client.last_seen = State::Clock::now();
    }
  };
  options.tick = [state](transport::Server& server) { state->tick(server); };
  server_ = std::make_shared<transport::Server>(
      std::move(options), [state](transport::Server&, const transport::PeerInfo& peer,
                                  transport::Received& message) { state->handle(peer, message); });
  state_->server = server_;
  server_->start();
}

SchedulerGateway::~SchedulerGateway() = default;

const std::string& SchedulerGateway::endpoint() const {
  return server_->endpoint();
}

std::uint64_t SchedulerGateway::dropped() const {
  return server_->dropped();
}

}  // namespace tessera
