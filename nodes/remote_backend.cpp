#include "nodes/remote_backend.hpp"

#include <pthread.h>

#include <zmq_addon.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "graph/printable.hpp"
#include "messages/protocol_codec.hpp"
#include "nodes/checkpoint_codec.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/registry_codec.hpp"
#include "nodes/status_codec.hpp"
#include "nodes/stream_codec.hpp"

namespace tessera {
namespace {

class RemoteBackend final : public ClusterBackend {
 public:
  RemoteBackend(const std::string& address, RemoteOptions options)
      : address_(address),
        options_(std::move(options)),
        connection_(std::make_shared<transport::Connection>(connection_options(options_.handshake_timeout))) {
    link_ = std::make_shared<SchedulerLink>();
    link_->released = [this](const std::shared_ptr<ResultSink>& sink) { send_release(*sink); };
    thread_ = std::thread([this] {
      ::pthread_setname_np(::pthread_self(), "tessera-client");
      run();
    });
  }

  ~RemoteBackend() override {
    link_.reset();  // futures that outlive the connection stop reporting releases
    {
      std::lock_guard lock(link_mutex_);
      stopping_ = true;
    }
    link_changed_.notify_all();
    thread_.join();
    std::lock_guard lock(link_mutex_);
    if (phase_ != Phase::up) return;
    // Goodbye: the scheduler releases what this client held now instead of after its grace period.
    transport::Outgoing goodbye;
    goodbye.envelope().setShutdown();
    connection_->set_linger(std::chrono::milliseconds(200));
    connection_->send(goodbye);
  }

  std::shared_ptr<ResultSink> submit(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                     std::uint32_t slots, bool checkpoint = false) override {
    if (checkpoint) may_hold_checkpoints_ = true;
    auto sink = std::make_shared<ResultSink>(slots, link_, watches);
    sink->set_fetcher(fetcher());
    const std::uint64_t id = next_sink_id_++;
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
    std::lock_guard lock(link_mutex_);
    if (phase_ == Phase::lost) {
      sink->lose(lost_reason_);
      return sink;
    }
    std::lock_guard sinks(sinks_mutex_);
    auto& entry = sinks_[id];
    if (entry.sent_epoch != epoch_) {  // a reconnect in between sent it already
      entry.sent_epoch = epoch_;
      connection_->post(message);
    }
    return sink;
  }

  OpenedStream open_stream(const StreamSettings& settings, std::shared_ptr<StreamSink> sink) override {
    const std::uint64_t request = next_request_++;
    std::future<OpenAnswer> answer;
    {
      std::lock_guard lock(streams_mutex_);
      auto& opening = opening_[request];
      opening.sink = sink;
      answer = opening.answer.get_future();
    }
    auto fill = [&](transport::Outgoing& message) {
      auto open = message.envelope().initStreamOpen();
      open.setRequestId(request);
      open.setSimulation(settings.simulation);
      open.setPoolSize(settings.pool_size);
      open.setMaxInFlight(settings.max_in_flight);
      open.setIsolation(settings.isolation ? static_cast<std::uint8_t>(*settings.isolation) + 1 : 0);
      open.setTimeoutSeconds(settings.timeout_seconds);
      open.setRetries(settings.retries);
      // The scheduler refuses a stream whose simulation this client defines differently.
      if (const SimulationType* own = SimulationRegistry::global().find(settings.simulation))
        open.setSimulationIdentity(own->identity);
      auto names = open.initParameterNames(static_cast<unsigned>(settings.parameter_names.size()));
      for (std::size_t i = 0; i < settings.parameter_names.size(); ++i)
        names.set(static_cast<unsigned>(i), settings.parameter_names[i]);
      if (settings.config)
        wire::encode(*settings.config,
                     open.initConfig(static_cast<unsigned>(settings.config->entries().size())),
                     message.attachments());
      if (!settings.generator.empty()) {
        open.setGenerator(settings.generator);
        open.setBudget(settings.budget);
        if (settings.generator_config)
          wire::encode(
              *settings.generator_config,
              open.initGeneratorConfig(static_cast<unsigned>(settings.generator_config->entries().size())),
              message.attachments());
      }
    };
    OpenAnswer opened;
    try {
      opened =
          await(answer, fill, "opening a stream on '" + settings.simulation + "'", std::chrono::seconds(30));
    } catch (...) {
      std::lock_guard lock(streams_mutex_);
      opening_.erase(request);
      throw;
    }
    if (!opened.error.empty()) throw SubmissionError(opened.error);
    std::lock_guard lock(streams_mutex_);
    streams_.try_emplace(opened.id, OpenStream{std::move(sink), {}, false});
    return OpenedStream{opened.id, opened.arity ? std::optional<std::size_t>(opened.arity) : std::nullopt,
                        opened.program};
  }

  GlmFitted fit_glm(GlmFitRequest request) override {
    const std::uint64_t id = next_request_++;
    std::future<GlmFitted> answer;
    {
      std::lock_guard lock(streams_mutex_);
      answer = fitting_[id].get_future();
    }
    auto fill = [&](transport::Outgoing& message) {
      wire::encode(GlmMessage{id, request}, message.envelope().initGlm(), message.attachments());
    };
    try {
      // No deadline of its own: a fit takes as long as it takes; a lost scheduler ends the wait.
      return await(answer, fill, "a GLM fit", std::nullopt);
    } catch (...) {
      std::lock_guard lock(streams_mutex_);
      fitting_.erase(id);
      throw;
    }
  }

  std::vector<FunctionInfo> functions() override {
    auto received = ask_in_order(
        wire::Envelope::FUNCTIONS, [](transport::Outgoing& m) { m.envelope().setFunctionsRequest(); },
        "a list of functions");
    return wire::decode(received.envelope().getFunctions());
  }
  ClusterStatus status() override {
    auto received = ask_in_order(
        wire::Envelope::STATUS, [](transport::Outgoing& m) { m.envelope().setStatusRequest(); }, "a status");
    return wire::decode(received.envelope().getStatus());
  }
  std::vector<WorkerInfo> workers() override {
    auto received = ask_in_order(
        wire::Envelope::WORKERS, [](transport::Outgoing& m) { m.envelope().setWorkersRequest(); },
        "a list of workers");
    return wire::decode(received.envelope().getWorkers());
  }
  std::vector<SimulationInfo> simulations() override {
    auto received = ask_in_order(
        wire::Envelope::SIMULATIONS, [](transport::Outgoing& m) { m.envelope().setSimulationsRequest(); },
        "a list of simulations");
    return wire::decode(received.envelope().getSimulations());
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
    send(message);
  }
  void close(std::uint64_t stream) override {
    {
      std::lock_guard lock(streams_mutex_);
      auto it = streams_.find(stream);
      if (it != streams_.end()) it->second.closed = true;
    }
    transport::Outgoing message;
    message.envelope().setStreamClose(stream);
    send(message);
  }
  std::shared_ptr<ResultSource> results() override;

  // Sends a request that `fill` writes with id `request`, and waits for the answer with that id (the
  // I/O thread hands it over through asking_); a request given up is forgotten.
  transport::Received request_answer(std::uint64_t request,
                                     const std::function<void(transport::Outgoing&)>& fill,
                                     const std::string& what, std::chrono::milliseconds timeout) {
    std::future<transport::Received> answer;
    {
      std::lock_guard lock(streams_mutex_);
      answer = asking_[request].get_future();
    }
    try {
      return await(answer, fill, what, timeout);
    } catch (...) {
      std::lock_guard lock(streams_mutex_);
      asking_.erase(request);
      throw;
    }
  }

  // For answers that carry no request id (FUNCTIONS, SIMULATIONS, STATUS, WORKERS): each goes to the
  // oldest waiter for its kind. Two of one kind may cross (the scheduler answers STATUS and WORKERS from
  // actors of their own), which is harmless: each waiter gets an answer as fresh as it asked for.
  transport::Received ask_in_order(wire::Envelope::Which answer_kind,
                                   const std::function<void(transport::Outgoing&)>& fill,
                                   const std::string& what) {
    const std::uint64_t token = next_request_++;
    std::future<transport::Received> answer;
    {
      std::lock_guard lock(streams_mutex_);
      answer =
          in_order_[answer_kind].emplace_back(token, std::promise<transport::Received>()).second.get_future();
    }
    try {
      return await(answer, fill, what, options_.request_timeout);
    } catch (...) {
      std::lock_guard lock(streams_mutex_);
      std::erase_if(in_order_[answer_kind], [token](const auto& waiter) { return waiter.first == token; });
      throw;
    }
  }

  // Sends a checkpoints request and waits for its answer; an error in it is thrown as
  // std::invalid_argument (what the scheduler refused, e.g. a key too short).
  transport::Received ask_checkpoints(wire::CheckpointsQuery query) {
    query.request_id = next_request_++;
    auto received = request_answer(
        query.request_id,
        [&](transport::Outgoing& message) {
          wire::encode(query, message.envelope().initCheckpointsRequest());
        },
        "a checkpoints request", std::chrono::seconds(60));
    auto a = received.envelope().getCheckpointsAnswer();
    if (a.getError().size()) throw std::invalid_argument(std::string(a.getError()));
    return received;
  }

  // Sends a results query and waits for its answer (on the I/O thread's behalf).
  transport::Received ask(std::uint64_t stream, const std::string& filter, const std::string& format,
                          const std::string& field, std::uint32_t bins, std::uint64_t first,
                          std::uint64_t last) {
    const std::uint64_t request = next_request_++;
    auto fill = [&](transport::Outgoing& message) {
      auto q = message.envelope().initResultsQuery();
      q.setRequestId(request);
      q.setStreamId(stream);
      q.setFilter(filter);
      q.setFormat(format);
      q.setField(field);
      q.setBins(bins);
      q.setFirst(first);
      q.setLast(last);
    };
    auto received = request_answer(request, fill, "a results query", std::chrono::seconds(60));
    auto a = received.envelope().getResultsAnswer();
    if (a.getError().size()) throw QueryError(std::string(a.getError()));
    return received;
  }

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
  // checkpoints this client asks for count from then on. Ones another client stores later are not
  // seen: its graphs are still fused, and compute what those checkpoints hold again.
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

  CancelledSets cancel_sets(std::uint64_t stream, std::vector<IdRange> ranges, std::string where) override {
    const std::uint64_t request = next_request_++;
    auto fill = [&](transport::Outgoing& message) {
      auto out = message.envelope().initStreamCancel();
      out.setRequestId(request);
      out.setStreamId(stream);
      out.setWhere(where);
      auto list = out.initRanges(static_cast<unsigned>(ranges.size()));
      for (std::size_t i = 0; i < ranges.size(); ++i) {
        list[static_cast<unsigned>(i)].setFirst(ranges[i].first);
        list[static_cast<unsigned>(i)].setLast(ranges[i].last);
      }
    };
    auto received = request_answer(request, fill, "a cancellation", kCancelDeadline);
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
    send(message);
  }

 private:
  enum class Phase { up, reconnecting, lost };

  // A submission, kept while results of it may still come: a scheduler that restarted gets it again.
  struct Submitted {
    std::weak_ptr<ResultSink> sink;
    std::vector<OperationPtr> operations;  // kept while its sink lives: later submissions may read them
    std::vector<Watch> watches;
    std::uint32_t slots = 0;
    std::vector<std::uint32_t> released;  // slots released so far, sent again with it
    std::uint64_t sent_epoch = 0;         // the connection it was sent on
    bool checkpoint = false;
  };
  struct OpenStream {
    std::shared_ptr<StreamSink> sink;
    std::deque<StreamBatch> unacked;  // pushed, not yet written ahead by the stream
    bool closed = false;
  };
  // What a client needs of a program's declaration to check its pushes: the parameter names the scheduler
  // sent (a peer's text: bounded and made printable); null when it sent none.
  static std::shared_ptr<const ProgramSpec> program_shape(capnp::List<capnp::Text>::Reader names) {
    if (names.size() == 0 || names.size() > ProgramSpec::kMaxParameters) return nullptr;
    auto shape = std::make_shared<ProgramSpec>();
    for (auto name : names)
      shape->parameters.push_back(printable(std::string_view(name.cStr(), name.size()), 64));
    return shape;
  }

  struct OpenAnswer {
    std::uint64_t id = 0;
    std::uint32_t arity = 0;
    std::string error;
    // A program's parameter names (its pushes are checked here: arity, finite numbers); null otherwise.
    std::shared_ptr<const ProgramSpec> program{};
  };

  transport::ConnectionOptions connection_options(std::chrono::milliseconds handshake) const {
    return transport::ConnectionOptions{.address = address_,
                                        .role = wire::Role::CLIENT,
                                        .name = options_.name,
                                        .curve = options_.curve,
                                        .server_public_key = options_.server_public_key,
                                        .handshake_timeout = handshake};
  }

  void send_release(ResultSink& sink) {
    auto slots = sink.take_released();
    if (slots.empty()) return;
    transport::Outgoing message;
    auto release = message.envelope().initRelease();
    release.setSinkId(sink.tag());
    auto list = release.initSlots(static_cast<unsigned>(slots.size()));
    for (std::size_t i = 0; i < slots.size(); ++i) list.set(static_cast<unsigned>(i), slots[i]);
    std::lock_guard lock(link_mutex_);
    if (phase_ == Phase::lost) return;
    std::lock_guard sinks(sinks_mutex_);
    auto it = sinks_.find(sink.tag());
    if (it == sinks_.end()) return;
    auto& entry = it->second;
    if (!entry.operations.empty()) entry.released.insert(entry.released.end(), slots.begin(), slots.end());
    // A table this scheduler never got (it restarted, and the table had all its results) is not its.
    if (entry.sent_epoch == epoch_) connection_->post(message);
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

  // Any thread: the I/O thread sends it (ZeroMQ sockets are not thread-safe). While reconnecting it goes
  // to the old connection, and is lost with it: what matters is sent again once connected (restore).
  void send(transport::Outgoing& message) {
    std::lock_guard lock(link_mutex_);
    if (phase_ == Phase::lost) throw ConnectionLost(lost_reason_);
    connection_->post(message);
  }

  // Sends a request and waits for its answer; asks again after a reconnect, fails with ConnectionLost
  // when the scheduler is gone for good, and with ConnectionError when it is there but does not answer
  // within `timeout` (counted while connected).
  template <class T>
  T await(std::future<T>& answer, const std::function<void(transport::Outgoing&)>& fill,
          const std::string& what, std::optional<std::chrono::milliseconds> timeout) {
    std::uint64_t sent_epoch = 0;
    auto deadline = std::chrono::steady_clock::time_point::max();
    for (;;) {
      {
        std::unique_lock lock(link_mutex_);
        if (phase_ == Phase::lost) throw ConnectionLost(lost_reason_);
        if (phase_ == Phase::up && sent_epoch != epoch_) {
          transport::Outgoing message;
          fill(message);
          connection_->post(message);
          sent_epoch = epoch_;
          if (timeout) deadline = std::chrono::steady_clock::now() + *timeout;
        } else if (phase_ != Phase::up && timeout) {
          deadline = std::chrono::steady_clock::now() + *timeout;  // reconnect_timeout bounds this wait
        }
      }
      if (answer.wait_for(std::chrono::milliseconds(20)) == std::future_status::ready) return answer.get();
      if (std::chrono::steady_clock::now() >= deadline)
        throw ConnectionError("the scheduler at " + address_ + " did not answer " + what + " within " +
                              std::to_string(timeout->count() / 1000) + " s");
    }
  }

  void run() {
    auto last_heard = std::chrono::steady_clock::now();
    auto next_heartbeat = last_heard;
    for (;;) {
      std::shared_ptr<transport::Connection> connection;
      {
        std::unique_lock lock(link_mutex_);
        if (stopping_) return;
        if (phase_ == Phase::lost) {
          link_changed_.wait(lock, [&] { return stopping_; });
          return;
        }
        connection = connection_;
      }
      const auto now = std::chrono::steady_clock::now();
      // Heartbeats tell the scheduler this client is still there while it only waits; its answers tell
      // the client the scheduler is.
      if (now >= next_heartbeat) {
        transport::Outgoing heartbeat;
        heartbeat.envelope().initHeartbeat();
        connection->post(heartbeat);
        next_heartbeat = now + options_.heartbeat_interval;
      }
      std::optional<transport::Received> message;
      try {
        message = connection->pump(std::chrono::milliseconds(20));
      } catch (const std::exception& e) {
        std::cerr << "[tessera client] dropped a malformed message from the scheduler: " << e.what()
                  << std::endl;
        continue;
      }
      if (!message) {
        if (std::chrono::steady_clock::now() - last_heard > options_.heartbeat_timeout) {
          reconnect("it sent nothing for " + std::to_string(options_.heartbeat_timeout.count()) + " ms");
          last_heard = next_heartbeat = std::chrono::steady_clock::now();
        }
        continue;
      }
      last_heard = std::chrono::steady_clock::now();
      if (message->envelope().isRefuse()) {
        // A scheduler that restarted does not know this connection.
        reconnect("it refused this connection (" +
                  printable(std::string(message->envelope().getRefuse().getReason()), 200) + ")");
        last_heard = next_heartbeat = std::chrono::steady_clock::now();
        continue;
      }
      try {
        handle(*message);
      } catch (const std::exception& e) {
        std::cerr << "[tessera client] dropped a message from the scheduler: " << e.what() << std::endl;
      } catch (const kj::Exception& e) {
        std::cerr << "[tessera client] dropped a malformed message from the scheduler: "
                  << e.getDescription().cStr() << std::endl;
      }
    }
  }

  // On the I/O thread: connects again with backoff until reconnect_timeout, then gives up for good.
  void reconnect(const std::string& cause) {
    const auto since = std::chrono::steady_clock::now();
    const auto deadline = since + options_.reconnect_timeout;
    {
      std::lock_guard lock(link_mutex_);
      phase_ = Phase::reconnecting;
    }
    std::cerr << "[tessera client] lost the scheduler at " << address_ << ": " << cause
              << "; reconnecting for up to " << options_.reconnect_timeout.count() / 1000.0 << " s"
              << std::endl;
    auto backoff = std::chrono::milliseconds(50);
    std::string last_error = cause;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      try {
        auto fresh = std::make_shared<transport::Connection>(
            connection_options(std::min<std::chrono::milliseconds>(left, std::chrono::seconds(2))));
        std::lock_guard lock(link_mutex_);
        if (stopping_) return;
        connection_ = fresh;
        epoch_ += 1;
        restore(*fresh);
        phase_ = Phase::up;
        std::cerr << "[tessera client] reconnected to the scheduler at " << address_ << " after "
                  << std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count() << " s"
                  << std::endl;
        return;
      } catch (const std::exception& e) {
        last_error = e.what();
      }
      std::unique_lock lock(link_mutex_);
      // The pause between attempts, not a test's sleep: a stop ends it.
      if (link_changed_.wait_for(lock, std::min(backoff, left), [&] { return stopping_; })) return;
      backoff = std::min<std::chrono::milliseconds>(2 * backoff, std::chrono::seconds(2));
    }
    const std::string reason = "lost the connection to the scheduler at " + address_ + " (" + cause +
                               ") and could not connect again within " +
                               std::to_string(options_.reconnect_timeout.count() / 1000.0).substr(0, 5) +
                               " s (reconnect_timeout): " + printable(last_error, 300);
    std::cerr << "[tessera client] " << reason << std::endl;
    lose_everything(reason);
  }

  // Under link_mutex_, on a new connection: what the scheduler must know again, in the order it needs it.
  // Submissions first (later ones and GLM fits may name their operations), then each open stream: attach,
  // the pushes not acknowledged, its close.
  void restore(transport::Connection& fresh) {
    {
      std::lock_guard lock(sinks_mutex_);
      // What goes again: every submission with results to come, and, newest first, every settled one
      // whose operations those read (the restarted scheduler has none of them; a checkpointed one is
      // read back from its checkpoints rather than computed).
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
        transport::Outgoing message;
        wire::encode(
            wire::SubmitMessage{it->first, entry.slots, entry.operations, entry.watches, entry.checkpoint},
            message.envelope().initSubmit(), message.attachments());
        fresh.post(message);
        if (!entry.released.empty()) {
          transport::Outgoing release;
          auto out = release.envelope().initRelease();
          out.setSinkId(it->first);
          auto list = out.initSlots(static_cast<unsigned>(entry.released.size()));
          for (std::size_t i = 0; i < entry.released.size(); ++i)
            list.set(static_cast<unsigned>(i), entry.released[i]);
          fresh.post(release);
        }
        entry.sent_epoch = epoch_;
        ++it;
      }
    }
    std::lock_guard lock(streams_mutex_);
    for (auto& [id, open] : streams_) {
      const std::uint64_t request = next_request_++;
      attaching_[request] = id;
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

  // The scheduler is gone for good: every waiting and later call fails with `reason`.
  void lose_everything(const std::string& reason) {
    {
      std::lock_guard lock(link_mutex_);
      phase_ = Phase::lost;
      lost_reason_ = reason;
    }
    link_changed_.notify_all();
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

  void handle(transport::Received& message) {
    auto envelope = message.envelope();
    if (envelope.isResults()) {
      auto results = envelope.getResults();
      std::shared_ptr<ResultSink> sink;
      {
        std::lock_guard lock(sinks_mutex_);
        auto it = sinks_.find(results.getSinkId());
        if (it != sinks_.end()) sink = it->second.sink.lock();
      }
      if (!sink) return;
      std::vector<Delivery> deliveries;
      if (results.getRefused().size()) {
        // The whole submission was refused: each of its slots fails with the one reason.
        auto error =
            std::make_shared<const TaskFailed>("(submission)", "", std::string(results.getRefused()), false);
        deliveries.reserve(sink->size());
        for (std::uint32_t slot = 0; slot < sink->size(); ++slot)
          deliveries.push_back(Delivery{slot, TaskState::erred, Value{}, error});
      } else {
        deliveries = wire::decode(results, message.frames());
      }
      sink->deliver(deliveries);
    } else if (envelope.isStreamOpened()) {
      auto opened = envelope.getStreamOpened();
      std::shared_ptr<StreamSink> failed;
      {
        std::lock_guard lock(streams_mutex_);
        if (auto attach = attaching_.find(opened.getRequestId()); attach != attaching_.end()) {
          const std::uint64_t stream = attach->second;
          attaching_.erase(attach);
          if (opened.getError().size() == 0) return;
          // The scheduler restarted without this stream (another data_dir): it cannot go on.
          if (auto it = streams_.find(stream); it != streams_.end()) {
            failed = it->second.sink;
            streams_.erase(it);
          }
        } else {
          auto it = opening_.find(opened.getRequestId());
          if (it == opening_.end()) return;
          // Registered here, on the I/O thread, before any result of the stream is read: an ensemble's
          // generator sends results without waiting for the client.
          if (opened.getError().size() == 0)
            streams_.try_emplace(opened.getStreamId(), OpenStream{it->second.sink, {}, false});
          it->second.answer.set_value(OpenAnswer{opened.getStreamId(), opened.getArity(), opened.getError(),
                                                 program_shape(opened.getProgramParameters())});
          opening_.erase(it);
          return;
        }
      }
      if (failed)
        failed->finish("the scheduler at " + address_ +
                       " could not resume the stream: " + printable(std::string(opened.getError()), 300));
    } else if (envelope.isStreamAccepted()) {
      auto in = envelope.getStreamAccepted();
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
    } else if (envelope.isResultsAnswer() || envelope.isCheckpointsAnswer() || envelope.isStreamCancelled()) {
      std::promise<transport::Received> waiting;
      {
        std::lock_guard lock(streams_mutex_);
        auto it =
            asking_.find(envelope.isResultsAnswer()       ? envelope.getResultsAnswer().getRequestId()
                         : envelope.isCheckpointsAnswer() ? envelope.getCheckpointsAnswer().getRequestId()
                                                          : envelope.getStreamCancelled().getRequestId());
        if (it == asking_.end()) return;
        waiting = std::move(it->second);
        asking_.erase(it);
      }
      waiting.set_value(std::move(message));
    } else if (envelope.isFunctions() || envelope.isSimulations() || envelope.isStatus() ||
               envelope.isWorkers()) {
      std::promise<transport::Received> waiting;
      {
        std::lock_guard lock(streams_mutex_);
        auto& waiters = in_order_[envelope.which()];
        if (waiters.empty()) return;  // its waiter gave up
        waiting = std::move(waiters.front().second);
        waiters.pop_front();
      }
      waiting.set_value(std::move(message));
    } else if (envelope.isStreamResults()) {
      auto in = envelope.getStreamResults();
      auto records = wire::decode(in.getRecords(), message.frames());
      if (auto sink = stream_sink(in.getStreamId())) sink->deliver(records);
    } else if (envelope.isStreamFinished()) {
      auto in = envelope.getStreamFinished();
      if (auto sink = stream_sink(in.getStreamId())) sink->finish(in.getError());
      std::lock_guard lock(streams_mutex_);
      streams_.erase(in.getStreamId());
    } else if (envelope.isGlm()) {
      auto answer = wire::decode(envelope.getGlm(), message.frames());
      std::lock_guard lock(streams_mutex_);
      auto it = fitting_.find(answer.session);
      auto* fitted = std::get_if<GlmFitted>(&answer.body);
      if (it == fitting_.end() || !fitted) return;
      it->second.set_value(std::move(*fitted));
      fitting_.erase(it);
    } else if (envelope.isError()) {
      std::cerr << "[tessera client] the scheduler reports: " << std::string(envelope.getError().getReason())
                << std::endl;
    }
  }

  std::shared_ptr<StreamSink> stream_sink(std::uint64_t id) {
    std::lock_guard lock(streams_mutex_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.sink;
  }

  const std::string address_;
  const RemoteOptions options_;
  // Lock order: link_mutex_, then sinks_mutex_ or streams_mutex_.
  std::mutex link_mutex_;
  std::condition_variable link_changed_;
  std::shared_ptr<transport::Connection> connection_;  // replaced on a reconnect (I/O thread)
  Phase phase_ = Phase::up;
  std::uint64_t epoch_ = 1;  // connections made so far
  std::string lost_reason_;
  bool stopping_ = false;

  std::mutex streams_mutex_;
  struct Opening {
    std::promise<OpenAnswer> answer;
    std::shared_ptr<StreamSink> sink;
  };
  std::unordered_map<std::uint64_t, Opening> opening_;
  std::unordered_map<std::uint64_t, std::uint64_t> attaching_;  // attach request -> stream
  std::unordered_map<std::uint64_t, std::promise<transport::Received>> asking_;
  std::map<wire::Envelope::Which, std::deque<std::pair<std::uint64_t, std::promise<transport::Received>>>>
      in_order_;  // waiters for answers without a request id, oldest first, with their tokens
  std::map<std::uint64_t, OpenStream> streams_;
  std::unordered_map<std::uint64_t, std::promise<GlmFitted>> fitting_;  // GLM fits waiting, by request id
  std::atomic<std::uint64_t> next_request_{1};
  std::once_flag checkpoints_asked_;
  std::atomic<bool> may_hold_checkpoints_{false};
  std::shared_ptr<SchedulerLink> link_;
  std::mutex sinks_mutex_;
  std::map<std::uint64_t, Submitted> sinks_;  // in submission order, as they are sent again
  std::size_t pruned_size_ = 0;
  std::atomic<std::uint64_t> next_sink_id_{1};
  std::thread thread_;
};

// Queries answered by the scheduler node's store, through the connection.
class RemoteResultSource final : public ResultSource {
 public:
  explicit RemoteResultSource(std::weak_ptr<RemoteBackend> backend) : backend_(std::move(backend)) {}
  ResultSummary summary(std::uint64_t stream, const std::string& filter, const std::string& field,
                        std::size_t bins) override {
    auto received = backend()->ask(stream, filter, "summary", field, static_cast<std::uint32_t>(bins), 0, 0);
    auto s = received.envelope().getResultsAnswer().getSummary();
    ResultSummary out;
    out.count = s.getCount();
    out.failed = s.getFailed();
    out.numeric = s.getNumeric();
    out.mean = s.getMean();
    out.min = s.getMin();
    out.max = s.getMax();
    for (auto h : s.getHistogram()) out.histogram.push_back(h);
    return out;
  }
  std::vector<StreamResult> records(std::uint64_t stream, const std::string& filter, std::uint64_t first,
                                    std::uint64_t last) override {
    std::vector<StreamResult> out;
    for (;;) {  // in pages of the node's answer limit
      auto received = backend()->ask(stream, filter, "records", "", 0, first, last);
      auto answer = received.envelope().getResultsAnswer();
      // The records' checked decoding (failure kinds, attempts, timelines), then each one's parameters.
      const auto list = answer.getRecords();
      auto records = wire::decode(list, received.frames());
      for (std::size_t i = 0; i < records.size(); ++i) {
        auto& r = records[i];
        StreamResult result{r.id,      std::move(r.value),    {},
                            r.failed,  std::move(r.error),    std::move(r.node),
                            r.failure, std::move(r.attempts), r.timeline};
        const auto in = list[static_cast<unsigned>(i)];
        if (in.hasParameters()) result.parameters = wire::decode(in.getParameters(), received.frames());
        out.push_back(std::move(result));
      }
      if (!answer.getMore()) return out;
      if (answer.getNextId() <= first)
        throw QueryError("the scheduler's answer did not advance past id " + std::to_string(first));
      first = answer.getNextId();
    }
  }
  // A large export comes in pages of the node's answer limit: each answer says where the next starts.
  std::string text(std::uint64_t stream, const std::string& filter, const std::string& format,
                   const std::string& field, std::size_t bins) override {
    std::string out;
    std::uint64_t first = 0;
    for (;;) {
      auto received =
          backend()->ask(stream, filter, format, field, static_cast<std::uint32_t>(bins), first, 0);
      auto answer = received.envelope().getResultsAnswer();
      out += std::string_view(answer.getText().cStr(), answer.getText().size());
      if (!answer.getMore()) return out;
      if (answer.getNextId() <= first && first != 0)
        throw QueryError("the scheduler's export did not advance past id " + std::to_string(first));
      first = answer.getNextId();
    }
  }

 private:
  std::shared_ptr<RemoteBackend> backend() {
    auto b = backend_.lock();
    if (!b) throw ConnectionError("the client's connection is gone");
    return b;
  }
  std::weak_ptr<RemoteBackend> backend_;
};

std::shared_ptr<ResultSource> RemoteBackend::results() {
  return std::make_shared<RemoteResultSource>(
      std::static_pointer_cast<RemoteBackend>(ClusterBackend::shared_from_this()));
}

}  // namespace

std::shared_ptr<ClusterBackend> connect_remote(const std::string& address, RemoteOptions options) {
  return std::make_shared<RemoteBackend>(address, std::move(options));
}

}  // namespace tessera
