#include "nodes/remote_backend.hpp"

#include <zmq_addon.hpp>

#include <future>
#include <iostream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "messages/protocol_codec.hpp"
#include "nodes/glm_codec.hpp"
#include "nodes/stream_codec.hpp"

namespace tessera {
namespace {

class RemoteBackend final : public ClusterBackend {
 public:
  RemoteBackend(const std::string& address, RemoteOptions options)
      : connection_(transport::ConnectionOptions{.address = address,
                                                 .role = wire::Role::CLIENT,
                                                 .name = options.name,
                                                 .curve = options.curve,
                                                 .server_public_key = options.server_public_key,
                                                 .handshake_timeout = options.handshake_timeout}) {
    link_ = std::make_shared<SchedulerLink>();
    link_->released = [this](const std::shared_ptr<ResultSink>& sink) { send_release(*sink); };
    thread_ = std::thread([this] { run(); });
  }

  ~RemoteBackend() override {
    link_.reset();  // futures that outlive the connection stop reporting releases
    stopping_ = true;
    thread_.join();
    // Goodbye: the scheduler releases what this client held now instead of after its grace period.
    transport::Outgoing goodbye;
    goodbye.envelope().setShutdown();
    connection_.set_linger(std::chrono::milliseconds(200));
    connection_.send(goodbye);
  }

  std::shared_ptr<ResultSink> submit(std::vector<OperationPtr> operations, std::vector<Watch> watches,
                                     std::uint32_t slots) override {
    auto sink = std::make_shared<ResultSink>(slots, link_, watches);
    sink->set_fetcher(fetcher());
    const std::uint64_t id = next_sink_id_++;
    sink->set_tag(id);
    {
      std::lock_guard lock(sinks_mutex_);
      sinks_[id] = sink;
    }
    transport::Outgoing message;
    wire::encode(wire::SubmitMessage{id, slots, std::move(operations), std::move(watches)},
                 message.envelope().initSubmit(), message.attachments());
    send(message);
    return sink;
  }

  OpenedStream open_stream(const StreamSettings& settings, std::shared_ptr<StreamSink> sink) override {
    const std::uint64_t request = next_request_++;
    std::future<OpenAnswer> answer;
    {
      std::lock_guard lock(streams_mutex_);
      answer = opening_[request].get_future();
    }
    transport::Outgoing message;
    auto open = message.envelope().initStreamOpen();
    open.setRequestId(request);
    open.setSimulation(settings.simulation);
    open.setPoolSize(settings.pool_size);
    if (settings.config)
      wire::encode(*settings.config,
                   open.initConfig(static_cast<unsigned>(settings.config->entries().size())),
                   message.attachments());
    send(message);
    if (answer.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      std::lock_guard lock(streams_mutex_);
      opening_.erase(request);
      throw ConnectionError("the scheduler did not answer opening a stream on '" + settings.simulation + "'");
    }
    auto opened = answer.get();
    if (!opened.error.empty()) throw SubmissionError(opened.error);
    std::lock_guard lock(streams_mutex_);
    streams_[opened.id] = std::move(sink);
    return OpenedStream{opened.id, opened.arity ? std::optional<std::size_t>(opened.arity) : std::nullopt};
  }
  GlmFitted fit_glm(GlmFitRequest request) override {
    const std::uint64_t id = next_request_++;
    std::future<GlmFitted> answer;
    {
      std::lock_guard lock(streams_mutex_);
      answer = fitting_[id].get_future();
    }
    transport::Outgoing message;
    wire::encode(GlmMessage{id, std::move(request)}, message.envelope().initGlm(), message.attachments());
    send(message);
    return answer.get();  // the scheduler always answers, with an error if the fit failed
  }
  void push(std::uint64_t stream, StreamBatch batch) override {
    transport::Outgoing message;
    auto push = message.envelope().initStreamPush();
    push.setStreamId(stream);
    push.setFirstId(batch.first_id);
    auto list = push.initParameters(static_cast<unsigned>(batch.parameters.size()));
    for (std::size_t i = 0; i < batch.parameters.size(); ++i)
      wire::encode(batch.parameters[i], list[static_cast<unsigned>(i)], message.attachments());
    send(message);
  }
  void close(std::uint64_t stream) override {
    transport::Outgoing message;
    message.envelope().setStreamClose(stream);
    send(message);
  }
  std::shared_ptr<ResultSource> results() override;

  // Sends a results query and waits for its answer (on the I/O thread's behalf).
  transport::Received ask(std::uint64_t stream, const std::string& filter, const std::string& format,
                          const std::string& field, std::uint32_t bins, std::uint64_t first,
                          std::uint64_t last) {
    const std::uint64_t request = next_request_++;
    std::future<transport::Received> answer;
    {
      std::lock_guard lock(streams_mutex_);
      answer = asking_[request].get_future();
    }
    transport::Outgoing message;
    auto q = message.envelope().initResultsQuery();
    q.setRequestId(request);
    q.setStreamId(stream);
    q.setFilter(filter);
    q.setFormat(format);
    q.setField(field);
    q.setBins(bins);
    q.setFirst(first);
    q.setLast(last);
    send(message);
    if (answer.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      std::lock_guard lock(streams_mutex_);
      asking_.erase(request);
      throw ConnectionError("the scheduler did not answer a results query");
    }
    auto received = answer.get();
    auto a = received.envelope().getResultsAnswer();
    if (a.getError().size()) throw QueryError(std::string(a.getError()));
    return received;
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
  void send_release(ResultSink& sink) {
    auto slots = sink.take_released();
    if (slots.empty()) return;
    transport::Outgoing message;
    auto release = message.envelope().initRelease();
    release.setSinkId(sink.tag());
    auto list = release.initSlots(static_cast<unsigned>(slots.size()));
    for (std::size_t i = 0; i < slots.size(); ++i) list.set(static_cast<unsigned>(i), slots[i]);
    send(message);
  }

  // Any thread: the I/O thread sends it (ZeroMQ sockets are not thread-safe).
  void send(transport::Outgoing& message) { connection_.post(message); }

  void run() {
    auto next_heartbeat = std::chrono::steady_clock::now();
    while (!stopping_) {
      // Heartbeats tell the scheduler this client is still there while it only waits.
      if (std::chrono::steady_clock::now() >= next_heartbeat) {
        transport::Outgoing heartbeat;
        heartbeat.envelope().initHeartbeat();
        connection_.post(heartbeat);
        next_heartbeat = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      }
      std::optional<transport::Received> message;
      try {
        message = connection_.pump(std::chrono::milliseconds(20));
      } catch (const std::exception& e) {
        std::cerr << "[tessera client] dropped a malformed message from the scheduler: " << e.what()
                  << std::endl;
        continue;
      }
      if (!message) continue;
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

  void handle(transport::Received& message) {
    auto envelope = message.envelope();
    if (envelope.isResults()) {
      auto results = envelope.getResults();
      std::shared_ptr<ResultSink> sink;
      {
        std::lock_guard lock(sinks_mutex_);
        auto it = sinks_.find(results.getSinkId());
        if (it != sinks_.end()) sink = it->second.lock();
        if (!sink && it != sinks_.end()) sinks_.erase(it);
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
      std::lock_guard lock(streams_mutex_);
      auto it = opening_.find(opened.getRequestId());
      if (it == opening_.end()) return;
      it->second.set_value(OpenAnswer{opened.getStreamId(), opened.getArity(), opened.getError()});
      opening_.erase(it);
    } else if (envelope.isResultsAnswer()) {
      std::promise<transport::Received> waiting;
      {
        std::lock_guard lock(streams_mutex_);
        auto it = asking_.find(envelope.getResultsAnswer().getRequestId());
        if (it == asking_.end()) return;
        waiting = std::move(it->second);
        asking_.erase(it);
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

  struct OpenAnswer {
    std::uint64_t id = 0;
    std::uint32_t arity = 0;
    std::string error;
  };
  std::shared_ptr<StreamSink> stream_sink(std::uint64_t id) {
    std::lock_guard lock(streams_mutex_);
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }

  transport::Connection connection_;
  std::mutex streams_mutex_;
  std::unordered_map<std::uint64_t, std::promise<OpenAnswer>> opening_;
  std::unordered_map<std::uint64_t, std::promise<transport::Received>> asking_;
  std::unordered_map<std::uint64_t, std::shared_ptr<StreamSink>> streams_;
  std::unordered_map<std::uint64_t, std::promise<GlmFitted>> fitting_;  // GLM fits waiting, by request id
  std::atomic<std::uint64_t> next_request_{1};
  std::shared_ptr<SchedulerLink> link_;
  std::mutex sinks_mutex_;
  std::unordered_map<std::uint64_t, std::weak_ptr<ResultSink>> sinks_;
  std::atomic<std::uint64_t> next_sink_id_{1};
  std::atomic<bool> stopping_{false};
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
      for (auto r : answer.getRecords()) {
        StreamResult result{r.getId(), {}, {}, r.getFailed(), r.getError(), r.getNode()};
        if (!result.failed) result.value = wire::decode(r.getValue(), received.frames());
        if (r.hasParameters()) result.parameters = wire::decode(r.getParameters(), received.frames());
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
