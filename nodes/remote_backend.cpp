#include "nodes/remote_backend.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_set>

#include "graph/printable.hpp"
#include "messages/protocol_codec.hpp"
#include "nodes/checkpoint_codec.hpp"
#include "nodes/client_connection.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/registry_codec.hpp"
#include "nodes/remote_results.hpp"
#include "nodes/status_codec.hpp"
#include "nodes/stream_codec.hpp"

namespace tessera {
namespace {

using wire::Envelope;

// What a client keeps to carry on after a reconnect, over a ClientConnection: its submissions with results
// still to come, its open streams with their unacknowledged pushes. It asks through the connection and
// handles the events the connection hands it (results, a stream's progress).
class RemoteBackend final : public ClusterBackend {
 public:
  RemoteBackend(const std::string& address, RemoteOptions options) {
    link_ = std::make_shared<SchedulerLink>();
    link_->released = [this](const std::shared_ptr<ResultSink>& sink) { send_release(*sink); };
    request_timeout_ = options.request_timeout;
    // Last: its I/O thread may call the handlers as soon as it runs.
    connection_ = std::make_shared<ClientConnection>(
        address, std::move(options),
        ClientConnection::Handlers{
            [this](transport::Received& message) { on_event(message); },
            [this](transport::Connection& fresh, std::uint64_t epoch) { replay(fresh, epoch); },
            [this](const std::string& reason) { lose_everything(reason); }});
  }

  ~RemoteBackend() override {
    link_.reset();        // futures that outlive the connection stop reporting releases
    connection_->stop();  // no handler runs after, whoever still holds the connection (a result source)
  }

  std::shared_ptr<ResultSink> submit(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                     std::uint32_t slots, bool checkpoint = false) override {
    if (checkpoint) may_hold_checkpoints_ = true;
    auto sink = std::make_shared<ResultSink>(slots, link_, watches);
    sink->set_fetcher(fetcher());
    const std::uint64_t id = connection_->next_id();
    sink->set_tag(id);
    transport::Outgoing message;
    wire::encode(wire::SubmitMessage{id, slots, operations, watches, checkpoint},
                 message.envelope().initSubmit(), message.attachments());
    {
      std::lock_guard lock(sinks_mutex_);
      // Kept until every result has come, to be sent again to a scheduler that restarted meanwhile.
      sinks_[id] = Submitted{sink, std::move(operations), std::move(watches), slots, {}, 0, checkpoint};
      prune_sinks();
    }
    const bool up = connection_->with_connection([&](transport::Connection& connection, std::uint64_t epoch) {
      std::lock_guard lock(sinks_mutex_);
      auto& entry = sinks_[id];
      if (entry.sent_epoch != epoch) {  // a reconnect in between sent it already
        entry.sent_epoch = epoch;
        connection.post(message);
      }
    });
    if (!up) sink->lose(connection_->lost_reason().value_or("the connection is lost"));
    return sink;
  }

  OpenedStream open_stream(const StreamSettings& settings, std::shared_ptr<StreamSink> sink) override {
    const std::uint64_t request = connection_->next_id();
    auto fill = [&](transport::Outgoing& message) {
      auto open = message.envelope().initStreamOpen();
      open.setRequestId(request);
      wire::encode(settings, open, message.attachments());
      // The scheduler refuses a stream whose simulation this client defines differently.
      if (const SimulationType* own = SimulationRegistry::global().find(settings.simulation))
        open.setSimulationIdentity(own->identity);
    };
    // Registered on the I/O thread, before any result of the stream is read: an ensemble's generator sends
    // results without waiting for the client.
    auto register_stream = [this, sink](transport::Received& answer) {
      auto opened = answer.envelope().getStreamOpened();
      if (opened.getError().size() != 0) return;
      std::lock_guard lock(streams_mutex_);
      streams_.try_emplace(opened.getStreamId(), OpenStream{sink, {}, false});
    };
    auto received = connection_->ask(Envelope::STREAM_OPENED, request, fill,
                                     "opening a stream on '" + settings.simulation + "'",
                                     std::chrono::seconds(30), register_stream);
    auto opened = received.envelope().getStreamOpened();
    if (opened.getError().size()) throw SubmissionError(std::string(opened.getError()));
    return OpenedStream{opened.getStreamId(),
                        opened.getArity() ? std::optional<std::size_t>(opened.getArity()) : std::nullopt,
                        program_shape(opened.getProgramParameters())};
  }

  OpenedStream resume_stream(std::uint64_t id, const StreamInput& input,
                             std::shared_ptr<StreamSink> sink) override {
    const std::uint64_t request = connection_->next_id();
    auto fill = [&](transport::Outgoing& message) {
      auto open = message.envelope().initStreamOpen();
      open.setRequestId(request);
      open.setResume(id);
      open.setInputSets(input.sets);
      open.setInputName(input.name);
      open.setInputDigest(input.digest);
    };
    // On the I/O thread, before any result of the stream: the sink answers for the sets still out.
    auto register_stream = [this, sink](transport::Received& answer) {
      auto opened = answer.envelope().getStreamOpened();
      if (opened.getError().size() != 0) return;
      std::vector<std::uint64_t> unanswered;
      unanswered.reserve(opened.getUnanswered().size());
      for (std::uint64_t id : opened.getUnanswered()) unanswered.push_back(id);
      sink->take_over(std::move(unanswered), static_cast<std::size_t>(opened.getMaxInFlight()));
      std::lock_guard lock(streams_mutex_);
      streams_.insert_or_assign(opened.getStreamId(), OpenStream{sink, {}, false});
    };
    auto received =
        connection_->ask(Envelope::STREAM_OPENED, request, fill, "resuming stream " + std::to_string(id),
                         std::chrono::seconds(30), register_stream);
    auto opened = received.envelope().getStreamOpened();
    if (opened.getError().size()) throw SubmissionError(printable(std::string(opened.getError()), 2000));
    if (opened.getStreamId() != id)
      throw ConnectionError("the scheduler at " + connection_->address() + " answered a resume of stream " +
                            std::to_string(id) + " with stream " + std::to_string(opened.getStreamId()));
    return OpenedStream{id,
                        opened.getArity() ? std::optional<std::size_t>(opened.getArity()) : std::nullopt,
                        program_shape(opened.getProgramParameters()),
                        opened.getResumeFrom(),
                        printable(std::string(opened.getSimulation()), 200),
                        opened.getMaxInFlight()};
  }

  GlmFitted fit_glm(GlmFitRequest request) override {
    const std::uint64_t id = connection_->next_id();
    auto fill = [&](transport::Outgoing& message) {
      wire::encode(GlmMessage{id, request}, message.envelope().initGlm(), message.attachments());
    };
    // No deadline of its own: a fit takes as long as it takes; a lost scheduler ends the wait.
    auto received = connection_->ask(Envelope::GLM, id, fill, "a GLM fit", std::nullopt);
    auto answer = wire::decode(received.envelope().getGlm(), received.frames());
    auto* fitted = std::get_if<GlmFitted>(&answer.body);
    if (!fitted)
      throw ConnectionError("the scheduler at " + connection_->address() + " answered a GLM fit with a " +
                            std::string(glm_kind_name(answer.kind())) + " message");
    return std::move(*fitted);
  }

  void push(std::uint64_t stream, StreamBatch batch) override {
    transport::Outgoing message;
    encode_push(stream, batch, message);
    {
      // Kept until the stream says it has them (written ahead), to be sent again after a reconnect.
      std::lock_guard lock(streams_mutex_);
      auto it = streams_.find(stream);
      if (it != streams_.end()) it->second.unacked.push_back(std::move(batch));
    }
    connection_->post(message);
  }

  void close(std::uint64_t stream) override {
    {
      std::lock_guard lock(streams_mutex_);
      auto it = streams_.find(stream);
      if (it != streams_.end()) it->second.closed = true;
    }
    transport::Outgoing message;
    message.envelope().setStreamClose(stream);
    connection_->post(message);
  }

  std::shared_ptr<ResultSource> results() override { return remote_results(connection_); }

  std::vector<CheckpointInfo> checkpoints(const std::string& function, std::size_t limit) override {
    std::vector<CheckpointInfo> out;
    wire::CheckpointsQuery query;
    query.function = function;
    for (;;) {
      query.limit = limit - out.size();
      auto received = ask_checkpoints(query);
      auto answer = received.envelope().getCheckpointsAnswer();
      auto page = wire::decode_entries(answer);
      out.insert(out.end(), page.begin(), page.end());
      if (!answer.getMore() || page.empty() || out.size() >= limit) return out;
      query.after = out.back().key;
    }
  }
  // Asked once, at the first graph submitted (a scheduler restarted from its data_dir may hold some);
  // checkpoints this client asks for count from then on. Ones another client stores later are not seen:
  // its graphs are still fused, and compute what those checkpoints hold again.
  bool may_hold_checkpoints() override {
    std::call_once(checkpoints_asked_, [this] {
      try {
        if (!checkpoints({}, 1).empty()) may_hold_checkpoints_ = true;
      } catch (const std::exception&) {
        // A scheduler that keeps no checkpoints says so: nothing to read then.
      }
    });
    return may_hold_checkpoints_;
  }
  std::uint64_t drop_checkpoints(const CheckpointSelection& selection) override {
    wire::CheckpointsQuery query;
    query.drop = true;
    query.selection = selection;
    auto received = ask_checkpoints(query);
    return received.envelope().getCheckpointsAnswer().getDropped();
  }

  CancelledSets cancel_sets(std::uint64_t stream, std::vector<IdRange> ranges, std::string where,
                            bool whole) override {
    const std::uint64_t request = connection_->next_id();
    auto fill = [&](transport::Outgoing& message) {
      auto out = message.envelope().initStreamCancel();
      out.setRequestId(request);
      out.setStreamId(stream);
      out.setWhere(where);
      out.setWhole(whole);
      auto list = out.initRanges(static_cast<unsigned>(ranges.size()));
      for (std::size_t i = 0; i < ranges.size(); ++i) {
        list[static_cast<unsigned>(i)].setFirst(ranges[i].first);
        list[static_cast<unsigned>(i)].setLast(ranges[i].last);
      }
    };
    auto received =
        connection_->ask(Envelope::STREAM_CANCELLED, request, fill, "a cancellation", kCancelDeadline);
    auto a = received.envelope().getStreamCancelled();
    if (a.getError().size()) throw std::invalid_argument(printable(std::string(a.getError()), 400));
    return CancelledSets{a.getQueued(), a.getRunning()};
  }

  void cancel(std::vector<TaskRef> tasks) override {
    transport::Outgoing message;
    auto list = message.envelope().initCancel().initTasks(static_cast<unsigned>(tasks.size()));
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      list[static_cast<unsigned>(i)].setOp(tasks[i].op);
      list[static_cast<unsigned>(i)].setIndex(tasks[i].index);
    }
    connection_->post(message);
  }

  std::vector<FunctionInfo> functions() override {
    return wire::decode(question(Envelope::FUNCTIONS, "a list of functions",
                                 [](transport::Outgoing& m) { m.envelope().setFunctionsRequest(); })
                            .envelope()
                            .getFunctions());
  }
  std::vector<SimulationInfo> simulations() override {
    return wire::decode(question(Envelope::SIMULATIONS, "a list of simulations",
                                 [](transport::Outgoing& m) { m.envelope().setSimulationsRequest(); })
                            .envelope()
                            .getSimulations());
  }
  ClusterStatus status() override {
    return wire::decode(question(Envelope::STATUS, "a status",
                                 [](transport::Outgoing& m) { m.envelope().setStatusRequest(); })
                            .envelope()
                            .getStatus());
  }
  std::vector<WorkerInfo> workers() override {
    return wire::decode(question(Envelope::WORKERS, "a list of workers",
                                 [](transport::Outgoing& m) { m.envelope().setWorkersRequest(); })
                            .envelope()
                            .getWorkers());
  }

 private:
  // A submission, kept while results of it may still come: a scheduler that restarted gets it again.
  struct Submitted {
    std::weak_ptr<ResultSink> sink;
    std::vector<OperationPtr> operations;  // kept while its sink lives: later submissions may read them
    std::vector<Watch> watches;
    std::uint32_t slots = 0;
    std::vector<std::uint32_t> released;  // slots released so far, sent again with it
    std::uint64_t sent_epoch = 0;         // the connection it was sent on
    bool checkpoint = false;
    // Deliveries that came in this session (one per slot result, as the scheduler counts what it sent):
    // equal counts on a resumed session mean nothing was lost with the old connection.
    std::uint64_t received = 0;
  };
  struct OpenStream {
    std::shared_ptr<StreamSink> sink;
    std::deque<StreamBatch> unacked;  // pushed, not yet written ahead by the stream
    bool closed = false;
  };

  // A question whose answer carries no request id (the oldest of its kind answers it).
  transport::Received question(Envelope::Which answer, const std::string& what,
                               const ClientConnection::Fill& fill) {
    return connection_->ask(answer, 0, fill, what, request_timeout_);
  }

  // Sends a checkpoints request and waits for its answer; an error in it is thrown as std::invalid_argument
  // (what the scheduler refused, e.g. a key too short).
  transport::Received ask_checkpoints(wire::CheckpointsQuery query) {
    query.request_id = connection_->next_id();
    auto received = connection_->ask(
        Envelope::CHECKPOINTS_ANSWER, query.request_id,
        [&](transport::Outgoing& message) {
          wire::encode(query, message.envelope().initCheckpointsRequest());
        },
        "a checkpoints request", std::chrono::seconds(60));
    auto a = received.envelope().getCheckpointsAnswer();
    if (a.getError().size()) throw std::invalid_argument(std::string(a.getError()));
    return received;
  }

  // What a client needs of a program's declaration to check its pushes: the parameter names the scheduler
  // sent (a peer's text: bounded and made printable); null when it sent none.
  static std::shared_ptr<const ProgramSpec> program_shape(capnp::List<capnp::Text>::Reader names) {
    if (names.size() == 0 || names.size() > ProgramSpec::kMaxParameters) return nullptr;
    auto shape = std::make_shared<ProgramSpec>();
    for (auto name : names)
      shape->parameters.push_back(printable(std::string_view(name.cStr(), name.size()), 64));
    return shape;
  }

  void send_release(ResultSink& sink) {
    auto slots = sink.take_released();
    if (slots.empty()) return;
    transport::Outgoing message;
    auto release = message.envelope().initRelease();
    release.setSinkId(sink.tag());
    auto list = release.initSlots(static_cast<unsigned>(slots.size()));
    for (std::size_t i = 0; i < slots.size(); ++i) list.set(static_cast<unsigned>(i), slots[i]);
    connection_->with_connection([&](transport::Connection& connection, std::uint64_t epoch) {
      std::lock_guard lock(sinks_mutex_);
      auto it = sinks_.find(sink.tag());
      if (it == sinks_.end()) return;
      auto& entry = it->second;
      if (!entry.operations.empty()) entry.released.insert(entry.released.end(), slots.begin(), slots.end());
      // A table this scheduler never got (it restarted, and the table had all its results) is not its.
      if (entry.sent_epoch == epoch) connection.post(message);
    });
  }

  static void encode_push(std::uint64_t stream, const StreamBatch& batch, transport::Outgoing& message) {
    auto push = message.envelope().initStreamPush();
    push.setStreamId(stream);
    push.setFirstId(batch.first_id);
    auto sets = push.initParameters(static_cast<unsigned>(batch.parameters.size()));
    for (std::size_t i = 0; i < batch.parameters.size(); ++i)
      wire::encode(batch.parameters[i], sets[static_cast<unsigned>(i)], message.attachments());
    if (!batch.priorities.empty()) {
      auto priorities = push.initPriorities(static_cast<unsigned>(batch.priorities.size()));
      for (std::size_t i = 0; i < batch.priorities.size(); ++i)
        priorities.set(static_cast<unsigned>(i), batch.priorities[i]);
    }
    if (!batch.timeouts.empty()) {
      auto timeouts = push.initTimeouts(static_cast<unsigned>(batch.timeouts.size()));
      for (std::size_t i = 0; i < batch.timeouts.size(); ++i)
        timeouts.set(static_cast<unsigned>(i), batch.timeouts[i]);
    }
  }

  // Entries of sinks nobody holds any more, dropped each time the table doubles.
  void prune_sinks() {
    if (sinks_.size() < 2 * pruned_size_ + 64) return;
    std::erase_if(sinks_, [](const auto& entry) { return entry.second.sink.expired(); });
    pruned_size_ = sinks_.size();
  }

  // Under the connection's lock, on a new connection: what the scheduler must know again, in the order it
  // needs it. Submissions first (later ones and GLM fits may name their operations), then each open stream:
  // attach, the pushes not acknowledged, its close.
  void replay(transport::Connection& fresh, std::uint64_t epoch) {
    if (fresh.resumed())
      resume_tables(fresh, epoch);
    else
      resubmit_tables(fresh, epoch);
    reattach_streams(fresh);
  }

  // A submission sent again; `again`: on a resumed session, replacing the table the scheduler holds.
  static void post_submission(transport::Connection& fresh, std::uint64_t id, const Submitted& entry,
                              bool again) {
    transport::Outgoing message;
    wire::encode(wire::SubmitMessage{id, entry.slots, entry.operations, entry.watches, entry.checkpoint},
                 message.envelope().initSubmit(), message.attachments());
    message.envelope().getSubmit().setAgain(again);
    fresh.post(message);
  }

  static void post_releases(transport::Connection& fresh, std::uint64_t id, const Submitted& entry) {
    if (entry.released.empty()) return;
    transport::Outgoing release;
    auto out = release.envelope().initRelease();
    out.setSinkId(id);
    auto list = out.initSlots(static_cast<unsigned>(entry.released.size()));
    for (std::size_t i = 0; i < entry.released.size(); ++i)
      list.set(static_cast<unsigned>(i), entry.released[i]);
    fresh.post(release);
  }

  // The same scheduler still holds this client's session (its tables, its operations): only a table whose
  // results were lost with the old connection (the scheduler sent more than came), or whose submission
  // never reached it, goes again, replacing what the scheduler held of it.
  void resume_tables(transport::Connection& fresh, std::uint64_t epoch) {
    std::lock_guard lock(sinks_mutex_);
    const auto& sent = fresh.delivered();
    for (auto it = sinks_.begin(); it != sinks_.end();) {
      auto sink = it->second.sink.lock();
      auto& entry = it->second;
      if (!sink) {
        it = sinks_.erase(it);
        continue;
      }
      const auto there = sent.find(it->first);
      const bool held = there != sent.end();
      if (held && (there->second == entry.received || sink->settled())) {
        entry.sent_epoch = epoch;
        post_releases(fresh, it->first, entry);  // a release lost with the old connection: idempotent
      } else if (!sink->settled()) {
        post_submission(fresh, it->first, entry, true);
        post_releases(fresh, it->first, entry);
        entry.sent_epoch = epoch;
        entry.received = 0;
      }
      ++it;
    }
  }

  // A scheduler that does not know this client (it restarted): every table with results to come, and
  // what they read, goes again.
  void resubmit_tables(transport::Connection& fresh, std::uint64_t epoch) {
    {
      std::lock_guard lock(sinks_mutex_);
      // What goes again: every submission with results to come, and, newest first, every settled one whose
      // operations those read (the restarted scheduler has none of them; a checkpointed one is read back
      // from its checkpoints rather than computed).
      std::unordered_set<OpId> needed;
      std::unordered_set<std::uint64_t> again;
      for (auto it = sinks_.rbegin(); it != sinks_.rend(); ++it) {
        auto sink = it->second.sink.lock();
        if (!sink) continue;
        const auto& ops = it->second.operations;
        const bool feeds_later = std::any_of(
            ops.begin(), ops.end(), [&](const OperationPtr& op) { return needed.count(op->id()) > 0; });
        if (sink->settled() && !feeds_later) continue;
        again.insert(it->first);
        for (const auto& op : ops) {
          if (!op->has_references()) continue;
          for (const auto& column : op->columns())
            for (std::uint32_t t = 0; t < op->size(); ++t)
              if (const TaskRef* ref = column.reference(t)) needed.insert(ref->op);
        }
      }
      for (auto it = sinks_.begin(); it != sinks_.end();) {
        auto sink = it->second.sink.lock();
        auto& entry = it->second;
        if (!sink) {
          it = sinks_.erase(it);
          continue;
        }
        if (!again.count(it->first)) {
          ++it;
          continue;
        }
        sink->reopen_held();
        post_submission(fresh, it->first, entry, false);
        post_releases(fresh, it->first, entry);
        entry.sent_epoch = epoch;
        entry.received = 0;
        ++it;
      }
    }
  }

  // Each open stream, on a new connection: attach, the pushes not acknowledged, its close. The stream
  // sends again what the client waits for (ids answer once, however often they are sent).
  void reattach_streams(transport::Connection& fresh) {
    std::lock_guard lock(streams_mutex_);
    for (auto& [id, open] : streams_) {
      const std::uint64_t request = connection_->next_id();
      // The scheduler restarted without this stream (another data_dir): it cannot go on.
      connection_->expect(request, [this, stream = id](transport::Received& answer) {
        auto opened = answer.envelope().getStreamOpened();
        if (opened.getError().size() == 0) return;
        std::shared_ptr<StreamSink> failed;
        {
          std::lock_guard lock(streams_mutex_);
          if (auto it = streams_.find(stream); it != streams_.end()) {
            failed = it->second.sink;
            streams_.erase(it);
          }
        }
        if (failed)
          failed->finish("the scheduler at " + connection_->address() +
                         " could not resume the stream: " + printable(std::string(opened.getError()), 300));
      });
      transport::Outgoing attach;
      auto out = attach.envelope().initStreamAttach();
      out.setRequestId(request);
      out.setStreamId(id);
      const auto unanswered = open.sink->unanswered();
      auto list = out.initUnanswered(static_cast<unsigned>(unanswered.size()));
      for (std::size_t i = 0; i < unanswered.size(); ++i) list.set(static_cast<unsigned>(i), unanswered[i]);
      if (auto from = open.sink->resend_from()) out.setResendFrom(*from + 1);
      fresh.post(attach);
      for (const auto& batch : open.unacked) {
        transport::Outgoing message;
        encode_push(id, batch, message);
        fresh.post(message);
      }
      if (open.closed) {
        transport::Outgoing close;
        close.envelope().setStreamClose(id);
        fresh.post(close);
      }
    }
  }

  // The scheduler is gone for good: every result table and stream fails with `reason`.
  void lose_everything(const std::string& reason) {
    std::vector<std::shared_ptr<ResultSink>> sinks;
    {
      std::lock_guard lock(sinks_mutex_);
      for (auto& [id, entry] : sinks_)
        if (auto sink = entry.sink.lock()) sinks.push_back(std::move(sink));
    }
    for (auto& sink : sinks) sink->lose(reason);
    std::vector<std::shared_ptr<StreamSink>> streams;
    {
      std::lock_guard lock(streams_mutex_);
      for (auto& [id, open] : streams_) streams.push_back(open.sink);
    }
    for (auto& stream : streams) stream->lose(reason);
  }

  // What the scheduler sends unasked (ClientConnection's Match::event rows), on the I/O thread.
  void on_event(transport::Received& message) {
    auto envelope = message.envelope();
    switch (envelope.which()) {
      case Envelope::RESULTS:
        return on_results(message);
      case Envelope::STREAM_ACCEPTED:
        return on_accepted(envelope.getStreamAccepted());
      case Envelope::STREAM_RESULTS: {
        auto in = envelope.getStreamResults();
        auto records = wire::decode(in.getRecords(), message.frames(), in.getNodes());
        if (auto sink = stream_sink(in.getStreamId())) sink->deliver(records);
        return;
      }
      case Envelope::STREAM_FINISHED: {
        auto in = envelope.getStreamFinished();
        if (auto sink = stream_sink(in.getStreamId())) sink->finish(in.getError());
        std::lock_guard lock(streams_mutex_);
        streams_.erase(in.getStreamId());
        return;
      }
      case Envelope::ERROR:
        std::cerr << "[tessera client] the scheduler reports: "
                  << std::string(envelope.getError().getReason()) << std::endl;
        return;
      default:
        return;
    }
  }

  void on_results(transport::Received& message) {
    auto results = message.envelope().getResults();
    std::shared_ptr<ResultSink> sink;
    {
      std::lock_guard lock(sinks_mutex_);
      auto it = sinks_.find(results.getSinkId());
      if (it != sinks_.end()) {
        sink = it->second.sink.lock();
        it->second.received += results.getDeliveries().size();
      }
    }
    if (!sink) return;
    std::vector<Delivery> deliveries;
    if (results.getRefused().size()) {
      // The whole submission was refused: each of its slots fails with the one reason.
      auto error = std::make_shared<const TaskFailed>(kRefusedSubmissionFunction, "",
                                                      std::string(results.getRefused()), false);
      deliveries.reserve(sink->size());
      for (std::uint32_t slot = 0; slot < sink->size(); ++slot)
        deliveries.push_back(Delivery{slot, TaskState::erred, Value{}, error});
    } else {
      deliveries = wire::decode(results, message.frames());
    }
    sink->deliver(deliveries);
  }

  void on_accepted(wire::StreamAccepted::Reader in) {
    const std::uint64_t up_to = in.getUpTo();
    std::shared_ptr<StreamSink> sink;
    {
      std::lock_guard lock(streams_mutex_);
      auto it = streams_.find(in.getStreamId());
      if (it == streams_.end()) return;
      auto& unacked = it->second.unacked;
      while (!unacked.empty() && unacked.front().first_id + unacked.front().parameters.size() <= up_to)
        unacked.pop_front();
      if (!unacked.empty() && unacked.front().first_id < up_to) {
        auto& front = unacked.front();
        const auto taken = static_cast<std::ptrdiff_t>(up_to - front.first_id);
        front.parameters.erase(front.parameters.begin(), front.parameters.begin() + taken);
        if (!front.priorities.empty())
          front.priorities.erase(front.priorities.begin(), front.priorities.begin() + taken);
        if (!front.timeouts.empty())
          front.timeouts.erase(front.timeouts.begin(), front.timeouts.begin() + taken);
        front.first_id = up_to;
      }
      sink = it->second.sink;
    }
    sink->accept(up_to);
  }

  std::shared_ptr<StreamSink> stream_sink(std::uint64_t id) {
    std::lock_guard lock(streams_mutex_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.sink;
  }

  std::shared_ptr<SchedulerLink> link_;
  std::chrono::milliseconds request_timeout_{30000};
  std::once_flag checkpoints_asked_;
  std::atomic<bool> may_hold_checkpoints_{false};
  // Lock order: the connection's, then sinks_mutex_ or streams_mutex_.
  std::mutex sinks_mutex_;
  std::map<std::uint64_t, Submitted> sinks_;  // in submission order, as they are sent again
  std::size_t pruned_size_ = 0;
  std::mutex streams_mutex_;
  std::map<std::uint64_t, OpenStream> streams_;
  std::shared_ptr<ClientConnection> connection_;  // last: its thread calls into the members above
};

}  // namespace

std::shared_ptr<ClusterBackend> connect_remote(const std::string& address, RemoteOptions options) {
  return std::make_shared<RemoteBackend>(address, std::move(options));
}

}  // namespace tessera
