#include "nodes/remote_backend.hpp"

#include <zmq_addon.hpp>

#include <iostream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "messages/protocol_codec.hpp"

namespace tessera {
namespace {

class RemoteBackend final : public ClusterBackend, public std::enable_shared_from_this<RemoteBackend> {
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

  std::uint64_t open_stream(const StreamSettings& settings, std::shared_ptr<StreamSink>) override {
    throw SubmissionError("stream on '" + settings.simulation +
                          "': streams through a remote scheduler are not served by this build yet");
  }
  void push(std::uint64_t, StreamBatch) override {}
  void close(std::uint64_t) override {}
  std::shared_ptr<const ResultStore> store() override {
    throw SubmissionError("result queries through a remote scheduler are not served by this build yet");
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
      auto deliveries = wire::decode(results, message.frames());
      std::shared_ptr<ResultSink> sink;
      {
        std::lock_guard lock(sinks_mutex_);
        auto it = sinks_.find(results.getSinkId());
        if (it != sinks_.end()) sink = it->second.lock();
        if (!sink && it != sinks_.end()) sinks_.erase(it);
      }
      if (sink) sink->deliver(deliveries);
    } else if (envelope.isError()) {
      std::cerr << "[tessera client] the scheduler reports: " << std::string(envelope.getError().getReason())
                << std::endl;
    }
  }

  transport::Connection connection_;
  std::shared_ptr<SchedulerLink> link_;
  std::mutex sinks_mutex_;
  std::unordered_map<std::uint64_t, std::weak_ptr<ResultSink>> sinks_;
  std::atomic<std::uint64_t> next_sink_id_{1};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace

std::shared_ptr<ClusterBackend> connect_remote(const std::string& address, RemoteOptions options) {
  return std::make_shared<RemoteBackend>(address, std::move(options));
}

}  // namespace tessera
