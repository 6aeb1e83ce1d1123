#include "nodes/scheduler_gateway.hpp"

#include <atomic>
#include <cmath>
#include <iostream>
#include <sstream>
#include <unordered_map>

#include "actors/glm/solver_actor.hpp"
#include "actors/messages.hpp"
#include "graph/definition_identity.hpp"
#include "graph/printable.hpp"
#include "graph/registry.hpp"
#include "messages/protocol_codec.hpp"
#include "nodes/checkpoint_codec.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/memory_codec.hpp"
#include "nodes/query_executor.hpp"
#include "nodes/registry_codec.hpp"
#include "nodes/remote_worker_proxy.hpp"
#include "nodes/status_codec.hpp"
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

  // Releases a slot once (the client's release, or the grace period's end); true when it was held.
  bool release_once(std::uint32_t slot) {
    if (released_.empty()) released_.resize(size());
    if (released_[slot]) return false;
    released_[slot] = true;
    release(slot);
    unreleased -= 1;
    return true;
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
  // The client has been told the stream is open (set_stream first): what the stream said until now goes
  // out, in order. An ensemble's generator can deliver results, or its stream finish, before the gateway
  // answers the open, and the client must read that answer first.
  void opened() {
    for (;;) {
      std::vector<std::function<void()>> held;
      {
        std::lock_guard lock(hold_mutex_);
        if (held_.empty()) {
          open_.store(true, std::memory_order_release);
          return;
        }
        held = std::move(held_);
        held_.clear();
      }
      for (auto& later : held) later();  // what comes meanwhile is held, and goes next round
    }
  }
  void deliver(std::vector<StreamRecord>& records) override {
    // Once open, no copy and no lock: the flag never goes back.
    if (!open_.load(std::memory_order_acquire) &&
        hold([this, copy = records]() mutable { send_results(copy); }))
      return;
    send_results(records);
  }
  void accept(std::uint64_t up_to) override {
    if (!open_.load(std::memory_order_acquire) && hold([this, up_to] { send_accepted(up_to); })) return;
    send_accepted(up_to);
  }
  void finish(std::string error) override {
    if (!open_.load(std::memory_order_acquire) && hold([this, error] { send_finished(error); })) return;
    send_finished(error);
  }
  void refuse(const std::string& reason) override {
    auto server = server_.lock();
    if (!server) return;
    transport::Outgoing message;
    message.envelope().initError().setReason(reason);
    server->send(peer_, message);
  }
  // Results sent back so far (any thread), against the sets the client pushed.
  std::uint64_t delivered() const { return delivered_.load(); }

 private:
  void send_results(std::vector<StreamRecord>& records) {
    delivered_ += records.size();
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
  void send_accepted(std::uint64_t up_to) {
    auto server = server_.lock();
    if (!server) return;
    transport::Outgoing message;
    auto out = message.envelope().initStreamAccepted();
    out.setStreamId(stream_);
    out.setUpTo(up_to);
    server->send(peer_, message);
  }
  void send_finished(const std::string& error) {
    auto server = server_.lock();
    if (!server) return;
    transport::Outgoing message;
    auto out = message.envelope().initStreamFinished();
    out.setStreamId(stream_);
    out.setError(error);
    server->send(peer_, message);
  }

  std::weak_ptr<transport::Server> server_;
  std::string peer_;
  std::uint64_t stream_ = 0;
  std::atomic<std::uint64_t> delivered_{0};
  // Keeps `later` while the client has not been told the stream is open.
  bool hold(std::function<void()> later) {
    std::lock_guard lock(hold_mutex_);
    if (open_.load(std::memory_order_relaxed)) return false;
    held_.push_back(std::move(later));
    return true;
  }
  std::mutex hold_mutex_;
  std::atomic<bool> open_{false};  // set under hold_mutex_
  std::vector<std::function<void()>> held_;
};

// A results query copied out of its message, to be answered off the I/O thread.
struct QueryRequest {
  std::uint64_t request_id = 0, stream_id = 0, first = 0, last = 0;
  std::string filter, format, field;
  std::uint32_t bins = 0;

  explicit QueryRequest(wire::ResultsQuery::Reader in)
      : request_id(in.getRequestId()),
        stream_id(in.getStreamId()),
        first(in.getFirst()),
        last(in.getLast()),
        filter(in.getFilter()),
        format(in.getFormat()),
        field(in.getField().size() ? std::string(in.getField()) : "result"),
        bins(in.getBins()) {}
};

// About how many bytes a record takes in an answer, to cut answers at the node's limit.
std::size_t record_bytes(const StreamResult& r) {
  return 64 + r.error.size() + r.node.size() + r.value.payload_bytes() + r.parameters.payload_bytes() +
         (r.program ? r.program->stdout_tail.size() + r.program->stderr_tail.size() : 0);
}

// Answers one query from the store: typed answers (summary, records) for the client library, text for the
// CLI and exports; records and exports are cut at `max_answer_bytes`, and the answer says where to go on.
void answer_query(const QueryRequest& q, const ResultStore& store, std::uint64_t max_answer_bytes,
                  wire::ResultsAnswer::Builder out, wire::Attachments& attachments) {
  const auto names =
      q.filter.empty() && q.format != "summary" ? FieldNames{} : field_names(store, q.stream_id);
  const auto filter = ResultFilter::parse(q.filter, names);
  if (q.format == "records") {
    std::vector<StreamResult> found;
    std::size_t bytes = 0;
    store.scan(q.stream_id, q.first, q.last, [&](const StreamResult& r) {
      if (!filter.matches(r)) return true;
      const std::size_t size = record_bytes(r);
      if (!found.empty() && (bytes + size > max_answer_bytes || found.size() >= (1u << 20))) {
        out.setMore(true);
        out.setNextId(r.id);
        return false;
      }
      bytes += size;
      found.push_back(r);
      return true;
    });
    auto list = out.initRecords(static_cast<unsigned>(found.size()));
    for (std::size_t i = 0; i < found.size(); ++i) {
      const auto& r = found[i];
      auto b = list[static_cast<unsigned>(i)];
      wire::encode(r.record(), b, attachments);
      wire::encode(r.parameters, b.initParameters(), attachments);
    }
    return;
  }
  if (!store.stream(q.stream_id))
    throw QueryError("no stream " + std::to_string(q.stream_id) + " in this node's store");
  std::ostringstream text;
  if (q.format == "summary") {
    const auto s = summarize(store, q.stream_id, filter, ResultField::parse(q.field, names), q.bins);
    auto b = out.initSummary();
    b.setCount(s.count);
    b.setFailed(s.failed);
    b.setNumeric(s.numeric);
    b.setMean(s.mean);
    b.setMin(s.min);
    b.setMax(s.max);
    auto h = b.initHistogram(static_cast<unsigned>(s.histogram.size()));
    for (std::size_t i = 0; i < s.histogram.size(); ++i) h.set(static_cast<unsigned>(i), s.histogram[i]);
    export_summary_json(store, q.stream_id, q.field, s, text);
  } else if (q.format == "count") {
    text << summarize(store, q.stream_id, filter, {}, 0).count << "\n";
  } else if (q.format == "timeline") {
    export_timeline_json(store, q.stream_id, filter, text);
  } else if (q.format == "names") {
    export_names_json(store, q.stream_id, text);
  } else if (q.format == "csv" || q.format == "json") {
    const ExportPage page{q.first, static_cast<std::size_t>(max_answer_bytes)};
    const auto progress = q.format == "csv" ? export_csv(store, q.stream_id, filter, text, page)
                                            : export_json(store, q.stream_id, filter, text, page);
    out.setMore(progress.more);
    out.setNextId(progress.next_id);
  } else {
    throw QueryError("unknown format " + in_quotes(q.format) +
                     " (summary, count, csv, json, timeline or names)");
  }
  out.setText(text.str());
}

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
    struct Pushed {
      std::shared_ptr<RemoteStreamSink> sink;
      std::uint64_t sets = 0;
    };
    std::unordered_map<std::uint64_t, Pushed> pushed;  // per open stream, against limits.max_slots_per_client
    std::uint64_t slots_held = 0;                      // against limits.max_slots_per_client
    // Its queries waiting or being answered (the executor's threads count them down).
    std::shared_ptr<std::atomic<std::uint32_t>> queries = std::make_shared<std::atomic<std::uint32_t>>(0);
  };
  struct WorkerPeer {
    std::uint32_t id = 0;
    std::string name;
    Clock::time_point last_seen = Clock::now();
  };
  // I/O thread only.
  std::unordered_map<std::string, Client> clients;
  std::atomic<std::uint32_t> client_count{0};  // clients.size(), for other threads (the dashboard)
  std::unordered_map<std::string, WorkerPeer> workers;
  std::unordered_map<std::uint64_t, caf::actor> streams;  // every open stream, for workers' answers
  // Streams resumed after a restart that no client has attached yet, since when: closed after
  // client_grace, as a silent client's are.
  std::unordered_map<std::uint64_t, std::pair<caf::actor, Clock::time_point>> orphans;
  std::unique_ptr<QueryExecutor> queries;

  void answer_open(const transport::PeerInfo& peer, std::uint64_t request, std::uint64_t stream,
                   const std::string& error, std::uint32_t arity, const ProgramSpec* program = nullptr) {
    transport::Outgoing answer;
    auto out = answer.envelope().initStreamOpened();
    out.setRequestId(request);
    out.setStreamId(stream);
    out.setError(error);
    out.setArity(arity);
    if (program) {
      auto names = out.initProgramParameters(static_cast<unsigned>(program->parameters.size()));
      for (std::size_t i = 0; i < program->parameters.size(); ++i)
        names.set(static_cast<unsigned>(i), program->parameters[i]);
    }
    if (auto target = server.lock()) target->send(peer.id, answer);
  }

  void open_stream(const transport::PeerInfo& peer, Client& client, wire::StreamOpen::Reader open,
                   const wire::Frames& frames) {
    const std::string simulation = open.getSimulation();
    if (!options.open_stream)
      return answer_open(peer, open.getRequestId(), 0, "this node runs no streams", 0);
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
    if (open.getPoolSize() > StreamSettings::kMaxPoolSize)
      return answer_open(peer, open.getRequestId(), 0,
                         "pool size " + std::to_string(open.getPoolSize()) + " exceeds the limit of " +
                             std::to_string(StreamSettings::kMaxPoolSize) + " simulation actors per worker",
                         0);
    if (open.getIsolation() > 2)
      return answer_open(peer, open.getRequestId(), 0,
                         "isolation " + std::to_string(open.getIsolation()) +
                             " is unknown (0: the node's default, 1: thread, 2: process)",
                         0);
    StreamSettings settings;
    settings.simulation = simulation;
    settings.config = wire::decode(open.getConfig(), frames);
    settings.pool_size = open.getPoolSize();
    if (open.getIsolation() > 0) settings.isolation = static_cast<Isolation>(open.getIsolation() - 1);
    settings.timeout_seconds = open.getTimeoutSeconds();
    settings.retries = open.getRetries();
    if (open.getParameterNames().size() > StreamSettings::kMaxParameterNames)
      return answer_open(peer, open.getRequestId(), 0,
                         std::to_string(open.getParameterNames().size()) +
                             " parameter names exceed the limit of " +
                             std::to_string(StreamSettings::kMaxParameterNames),
                         0);
    for (auto name : open.getParameterNames()) settings.parameter_names.emplace_back(name);
    settings.generator = open.getGenerator();
    settings.budget = open.getBudget();
    if (!settings.generator.empty())
      settings.generator_config = wire::decode(open.getGeneratorConfig(), frames);
    if (auto wrong = settings.check(); !wrong.empty())
      return answer_open(peer, open.getRequestId(), 0, wrong, 0);
    // The client's own bound, never past what the node lets a client push ahead.
    settings.max_in_flight = std::min<std::uint64_t>(
        open.getMaxInFlight() ? open.getMaxInFlight() : StreamSettings::kDefaultMaxInFlight,
        options.limits.max_slots_per_client);
    if (client.streams.size() >= options.limits.max_streams_per_client)
      return answer_open(peer, open.getRequestId(), 0,
                         "this client has " + std::to_string(client.streams.size()) +
                             " streams open, the most one client may have (limits.max_streams_per_client)",
                         0);
    auto sink = std::make_shared<RemoteStreamSink>(server, peer.id);
    try {
      auto [id, actor] = options.open_stream(settings, sink);
      sink->set_stream(id);
      client.streams[id] = actor;
      client.pushed[id] = Client::Pushed{sink, 0};
      streams[id] = actor;
      answer_open(peer, open.getRequestId(), id, "", static_cast<std::uint32_t>(type->arity.value_or(0)),
                  type->program.get());
      sink->opened();
    } catch (const std::exception& e) {
      answer_open(peer, open.getRequestId(), 0, e.what(), 0);
    }
  }

  // A client that reconnected takes its stream back: the stream's results go to this connection now, and
  // what it waits for and the store has is sent again. A stream that finished meanwhile is answered from
  // the store.
  void attach_stream(const transport::PeerInfo& peer, Client& client, wire::StreamAttach::Reader in) {
    const std::uint64_t id = in.getStreamId(), request = in.getRequestId();
    if (in.getUnanswered().size() > options.limits.max_slots_per_client) {
      answer_open(peer, request, 0,
                  "stream " + std::to_string(id) + ": " + std::to_string(in.getUnanswered().size()) +
                      " unanswered ids exceed the limit of " +
                      std::to_string(options.limits.max_slots_per_client) + " (limits.max_slots_per_client)",
                  0);
      return;
    }
    if (!client.streams.count(id) && client.streams.size() >= options.limits.max_streams_per_client)
      return answer_open(peer, request, 0,
                         "this client has " + std::to_string(client.streams.size()) +
                             " streams open, the most one client may have (limits.max_streams_per_client)",
                         0);
    std::shared_ptr<const ResultStore> store = options.store ? options.store() : nullptr;
    std::optional<StreamInfo> info;
    if (store) info = store->stream(id);
    if (!info) return answer_open(peer, request, 0, "no stream " + std::to_string(id) + " on this node", 0);
    std::vector<std::uint64_t> unanswered;
    unanswered.reserve(in.getUnanswered().size());
    for (std::uint64_t wanted : in.getUnanswered()) unanswered.push_back(wanted);
    const std::uint64_t resend_from = in.getResendFrom() == 0 ? ~std::uint64_t{0} : in.getResendFrom() - 1;
    for (auto& [other_id, other] : clients)
      if (&other != &client) {
        other.streams.erase(id);
        other.pushed.erase(id);
      }
    orphans.erase(id);
    auto sink = std::make_shared<RemoteStreamSink>(server, peer.id);
    sink->set_stream(id);
    answer_open(peer, request, id, "", 0);
    sink->opened();
    caf::actor actor = options.stream_actor ? options.stream_actor(id) : caf::actor();
    if (actor) {
      // Asked here, on the I/O thread, so that the pushes this client sends again reach the stream after
      // it has attached. The stream answers at once; a stream that ended meanwhile answers with an error.
      caf::scoped_actor self{scheduler->home_system()};
      bool attached = false;
      self->request(actor, std::chrono::seconds(5), stream_attach_atom::value,
                    StreamAttach{sink, unanswered, resend_from})
          .receive([&](bool ok) { attached = ok; }, [&](const caf::error&) {});
      if (attached) {
        client.streams[id] = actor;
        client.pushed[id] = Client::Pushed{sink, 0};
        streams[id] = actor;
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
    if (!queries->post(std::move(job)))
      sink->finish("this node is answering as many queries as it queues; attach again later");
  }

  // Checks a query's cost on the I/O thread (cheap), then answers it on the query executor.
  void query_results(const transport::PeerInfo& peer, Client& client, wire::ResultsQuery::Reader in) {
    QueryRequest query(in);
    const auto refuse = [&](const std::string& reason) {
      transport::Outgoing answer;
      auto out = answer.envelope().initResultsAnswer();
      out.setRequestId(query.request_id);
      out.setError(reason);
      if (auto target = server.lock()) target->send(peer.id, answer);
    };
    if (query.bins > options.limits.max_histogram_bins)
      return refuse("bins = " + std::to_string(query.bins) + " exceeds the limit of " +
                    std::to_string(options.limits.max_histogram_bins) + " (limits.max_histogram_bins)");
    if (!options.store) return refuse("this node stores no results");
    if (client.queries->load() >= options.limits.max_queries_per_client)
      return refuse("this client already has " + std::to_string(client.queries->load()) +
                    " queries waiting, the most one client may have");
    client.queries->fetch_add(1);
    auto job = [query = std::move(query), store = options.store, limit = options.limits.max_answer_bytes,
                target = server, peer_id = peer.id, count = client.queries] {
      transport::Outgoing answer;
      auto out = answer.envelope().initResultsAnswer();
      out.setRequestId(query.request_id);
      try {
        answer_query(query, *store(), limit, out, answer.attachments());
      } catch (const std::exception& e) {
        // An error after a partial answer: start again with just the reason.
        transport::Outgoing failed;
        auto error = failed.envelope().initResultsAnswer();
        error.setRequestId(query.request_id);
        error.setError(printable(e.what(), 400));
        if (auto server = target.lock()) server->send(peer_id, failed);
        count->fetch_sub(1);
        return;
      }
      if (auto server = target.lock()) server->send(peer_id, answer);
      count->fetch_sub(1);
    };
    if (!queries->post(std::move(job))) {
      client.queries->fetch_sub(1);
      refuse("this node is answering as many queries as it queues; ask again later");
    }
  }

  // Lists or drops checkpoints on the query executor; the request's bounds were checked in decode.
  void query_checkpoints(const transport::PeerInfo& peer, Client& client,
                         wire::CheckpointsRequest::Reader in) {
    const auto refuse = [&, id = in.getRequestId()](const std::string& reason) {
      transport::Outgoing answer;
      auto out = answer.envelope().initCheckpointsAnswer();
      out.setRequestId(id);
      out.setError(reason);
      if (auto target = server.lock()) target->send(peer.id, answer);
    };
    wire::CheckpointsQuery query;
    try {
      query = wire::decode(in);
    } catch (const wire::WireError& e) {
      refuse(e.what());  // the client hears why; the transport logs and counts the drop
      throw;
    }
    if (!options.checkpoints) return refuse("this node keeps no checkpoints");
    if (client.queries->load() >= options.limits.max_queries_per_client)
      return refuse("this client already has " + std::to_string(client.queries->load()) +
                    " queries waiting, the most one client may have");
    client.queries->fetch_add(1);
    auto job = [query = std::move(query), store = options.checkpoints,
                limit = options.limits.max_answer_bytes, target = server, peer_id = peer.id,
                count = client.queries] {
      std::string failure;
      {
        transport::Outgoing answer;
        try {
          wire::answer(query, *store(), limit, answer.envelope().initCheckpointsAnswer());
          if (auto server = target.lock()) server->send(peer_id, answer);
        } catch (const std::exception& e) {
          failure = printable(e.what(), 400);
        }
      }
      if (!failure.empty()) {  // an error after a partial answer: start again with just the reason
        transport::Outgoing error;
        auto out = error.envelope().initCheckpointsAnswer();
        out.setRequestId(query.request_id);
        out.setError(failure);
        if (auto server = target.lock()) server->send(peer_id, error);
      }
      count->fetch_sub(1);
    };
    if (!queries->post(std::move(job))) {
      client.queries->fetch_sub(1);
      refuse("this node is answering as many queries as it queues; ask again later");
    }
  }

  // Any client may cancel sets of a running stream (the CLI does, for a stream another client pushes).
  // The stream actor answers the connection itself, so the I/O thread never waits for it.
  void cancel_sets(const transport::PeerInfo& peer, wire::StreamCancel::Reader in) {
    const std::uint64_t request = in.getRequestId();
    const std::uint64_t id = in.getStreamId();
    auto answer = [target = server, peer_id = peer.id, request](CancelledSets counts, std::string error) {
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
    if (options.stream_actor)
      actor = options.stream_actor(id);
    else if (auto it = streams.find(id); it != streams.end())
      actor = it->second;
    if (!actor)
      return answer({}, "stream " + std::to_string(id) +
                            " is not running on this node (it finished, or there is no such stream): "
                            "nothing to cancel");
    StreamCancel cancel{{}, in.getWhere(), std::make_shared<CancelReply>(std::move(answer))};
    cancel.ranges.reserve(in.getRanges().size());
    for (auto r : in.getRanges()) cancel.ranges.push_back(IdRange{r.getFirst(), r.getLast()});
    caf::anon_send(actor, stream_cancel_atom::value, std::move(cancel));
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
      log("worker " + in_quotes(peer.name) + " could not be registered: the scheduler did not answer");
      caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
      return;
    }
    workers[peer.id] = WorkerPeer{id, peer.name};
    log("worker " + in_quotes(peer.name) + " joined as worker " + std::to_string(id) + " (" +
        std::to_string(peer.threads) + " threads, peers reach it at " + printable(peer.listen) + ")");
  }

  // Heartbeat timeouts, on the I/O thread.
  void tick(transport::Server& target) {
    const auto now = Clock::now();
    for (auto it = workers.begin(); it != workers.end();) {
      if (now - it->second.last_seen <= options.worker_timeout) {
        ++it;
        continue;
      }
      log("worker " + in_quotes(it->second.name) + " (worker " + std::to_string(it->second.id) +
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
      log("client " + in_quotes(it->second.name) + " sent nothing for " +
          std::to_string(options.client_grace.count()) + " ms: its " +
          std::to_string(it->second.sinks.size()) + " result tables are released");
      for (auto& [id, sink] : it->second.sinks) sink->release_all();
      close_streams(it->second);
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
      caf::anon_send(it->second.first, stream_close_atom::value);
      it = orphans.erase(it);
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
      case wire::Envelope::MEMORY: {
        // A worker speaks for itself only: the id is the connection's, whatever the report says.
        auto memory = wire::decode_memory(envelope.getMemory());
        memory.worker = worker.id;
        caf::anon_send(scheduler, memory_atom::value, std::move(memory));
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
          wire::encode(list, answer.envelope().initWorkers(static_cast<unsigned>(list.size())));
        });
  }

  // What streams may name here: compiled simulations (plugins) and declared programs, from the registry
  // that opens streams (the scheduler's own).
  void answer_simulations(const transport::PeerInfo& peer) {
    transport::Outgoing answer;
    const auto& registry = SimulationRegistry::global();
    const auto names = registry.names();
    auto list = answer.envelope().initSimulations(static_cast<unsigned>(names.size()));
    for (std::size_t i = 0; i < names.size(); ++i)
      wire::encode(describe(registry.get(names[i])), list[static_cast<unsigned>(i)]);
    if (auto target = server.lock()) target->send(peer.id, answer);
  }

  // What a client may call by name here: the scheduler's registry, which checks every submission.
  void answer_functions(const transport::PeerInfo& peer) {
    transport::Outgoing answer;
    const auto functions = Registry::global().functions();
    auto list = answer.envelope().initFunctions(static_cast<unsigned>(functions.size()));
    for (std::size_t i = 0; i < functions.size(); ++i)
      wire::encode(functions[i], list[static_cast<unsigned>(i)]);
    if (auto target = server.lock()) target->send(peer.id, answer);
  }

  void answer_status(const transport::PeerInfo& peer) {
    const auto client_count = static_cast<std::uint32_t>(clients.size());
    ask_scheduler<SchedulerStatus>(
        peer.id, status_atom::value, "status",
        [node = name, client_count](const SchedulerStatus& status, transport::Outgoing& answer) {
          wire::encode(ClusterStatus{node, client_count, status}, answer.envelope().initStatus());
        });
  }

  // The client waits on a refused submission's results: one message says why, and every slot fails
  // with it (the client expands it; nothing here grows with the slots claimed).
  void refuse_submission(const transport::PeerInfo& peer, std::uint64_t sink_id, const std::string& reason) {
    transport::Outgoing answer;
    auto out = answer.envelope().initResults();
    out.setSinkId(sink_id);
    out.setRefused("the scheduler refused the submission: " + reason);
    if (auto target = server.lock()) target->send(peer.id, answer);
  }

  // Why a submission of `slots` exceeds this client's budget, before anything is allocated for it.
  std::optional<std::string> over_budget(const Client& client, std::uint32_t slots) const {
    const auto& limits = options.limits;
    if (slots > limits.max_slots_per_submission)
      return std::to_string(slots) + " slots exceed the limit of " +
             std::to_string(limits.max_slots_per_submission) +
             " per submission (limits.max_slots_per_submission)";
    if (client.slots_held + slots > limits.max_slots_per_client)
      return "this client holds " + std::to_string(client.slots_held) + " result slots; " +
             std::to_string(slots) + " more exceed the limit of " +
             std::to_string(limits.max_slots_per_client) +
             " per client (limits.max_slots_per_client); release futures first";
    return std::nullopt;
  }

  void submit(const transport::PeerInfo& peer, Client& client, transport::Received& message) {
    auto in = message.envelope().getSubmit();
    const std::uint64_t sink_id = in.getSinkId();
    if (auto reason = over_budget(client, in.getSlots())) {
      refuse_submission(peer, sink_id, *reason);
      throw wire::WireError("submission refused: " + *reason);
    }
    if (client.sinks.count(sink_id)) {
      refuse_submission(peer, sink_id, "result table id reused by the client");
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
      limits.max_tasks = options.limits.max_slots_per_submission;
      submit = wire::decode(in, message.frames(), map_id, limits);
    } catch (const std::exception& e) {
      refuse_submission(peer, sink_id, printable(e.what(), 400));
      throw;
    }
    auto sink = std::make_shared<RemoteSink>(submit.slots, link, submit.watches, server, peer.id);
    sink->set_tag(submit.sink_id);
    sink->unreleased = submit.slots;
    client.sinks[submit.sink_id] = sink;
    client.slots_held += submit.slots;
    caf::anon_send(
        scheduler, submit_atom::value,
        Submission{std::move(submit.operations), std::move(submit.watches), sink, submit.checkpoint});
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
      case wire::Envelope::SUBMIT:
        submit(peer, client, message);
        return;
      case wire::Envelope::RELEASE: {
        auto release = envelope.getRelease();
        auto it = client.sinks.find(release.getSinkId());
        if (it == client.sinks.end()) throw wire::WireError("release of an unknown result table");
        auto sink = it->second;
        for (std::uint32_t slot : release.getSlots()) {
          if (slot >= sink->size())
            throw wire::WireError("release of slot " + std::to_string(slot) + " of " +
                                  std::to_string(sink->size()));
          if (sink->release_once(slot)) client.slots_held -= 1;
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
      case wire::Envelope::SIMULATIONS_REQUEST:
        answer_simulations(peer);
        return;
      case wire::Envelope::FUNCTIONS_REQUEST:
        answer_functions(peer);
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
        auto& pushed = client.pushed[push.getStreamId()];
        // Sets sent again after a reconnect, and results sent again, make these counts approximate: the
        // stream actor enforces the stream's own max_in_flight exactly.
        const std::uint64_t sent = pushed.sets + push.getParameters().size();
        const std::uint64_t answered = pushed.sink ? pushed.sink->delivered() : 0;
        const std::uint64_t ahead = sent > answered ? sent - answered : 0;
        if (ahead > options.limits.max_slots_per_client) {
          const std::string reason = "stream " + std::to_string(push.getStreamId()) + ": " +
                                     std::to_string(ahead) +
                                     " parameter sets pushed ahead of their results exceed the limit of " +
                                     std::to_string(options.limits.max_slots_per_client) +
                                     " (limits.max_slots_per_client); the push was refused";
          transport::Outgoing error;
          error.envelope().initError().setReason(reason);
          if (auto target = server.lock()) target->send(peer.id, error);
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
        return;
      }
      case wire::Envelope::STREAM_CLOSE: {
        auto it = client.streams.find(envelope.getStreamClose());
        if (it == client.streams.end()) return;
        caf::anon_send(it->second, stream_close_atom::value);
        client.streams.erase(it);
        client.pushed.erase(envelope.getStreamClose());
        return;
      }
      case wire::Envelope::STREAM_ATTACH:
        attach_stream(peer, client, envelope.getStreamAttach());
        return;
      case wire::Envelope::STREAM_CANCEL:
        cancel_sets(peer, envelope.getStreamCancel());
        return;
      case wire::Envelope::CHECKPOINTS_REQUEST:
        query_checkpoints(peer, client, envelope.getCheckpointsRequest());
        return;
      case wire::Envelope::RESULTS_QUERY:
        query_results(peer, client, envelope.getResultsQuery());
        return;
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
      case wire::Envelope::HEARTBEAT: {
        // Answered, so that a client notices a scheduler that is gone.
        transport::Outgoing beat;
        beat.envelope().initHeartbeat();
        if (auto target = server.lock()) target->send(peer.id, beat);
        return;
      }
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
  // Two threads: one long export does not hold up every other query; 64 queued at most.
  state_->queries = std::make_unique<QueryExecutor>(2, 64);
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
      state->client_count.store(static_cast<std::uint32_t>(state->clients.size()));
    }
  };
  options.tick = [state](transport::Server& server) {
    state->tick(server);
    state->client_count.store(static_cast<std::uint32_t>(state->clients.size()));
  };
  // A worker's hello claims its threads and memory: what the node's limits allow, or it is refused.
  for (auto& [id, actor] : gateway.resumed) {
    state_->streams[id] = actor;
    state_->orphans[id] = {actor, State::Clock::now()};
  }
  options.admit = [limits = gateway.limits,
                   raw = state_.get()](const transport::PeerInfo& peer) -> std::optional<std::string> {
    if (peer.role == wire::Role::CLIENT && raw->clients.size() >= limits.max_clients)
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
