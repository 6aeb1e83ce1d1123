#include "nodes/worker_node.hpp"

#include <pthread.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "actors/actor_threads.hpp"
#include "actors/allocator_policy.hpp"
#include "actors/messages.hpp"
#include "actors/stray_errors.hpp"
#include "actors/worker_actor.hpp"
#include "actors/worker_directory.hpp"
#include "nodes/host_address.hpp"
#include "nodes/host_identity.hpp"
#include "nodes/wire_routes.hpp"

namespace tessera {
namespace {

// In the worker process, the scheduler's stand-in: what the worker's actors tell the scheduler goes
// over the connection (the wire table's routes from workers to the scheduler).
caf::behavior scheduler_proxy(caf::event_based_actor* self,
                              std::shared_ptr<transport::Connection> connection) {
  survive_stray_errors(self, "scheduler proxy");
  return wire::forwarding_behavior<wire::kWorkerToScheduler>(
      [connection](wire::Envelope::Which, auto&& fill) {
        transport::Outgoing message;
        wire::EncodeContext context{message.attachments()};
        fill(message.envelope(), context);
        connection->post(message);
      });
}

struct PeerTarget {
  std::uint32_t id = 0;
  std::string address, public_key;
  std::string local_address;                    // set when it runs on this host: dialled first
  std::string name;                             // this worker's, for the peer's log
  std::optional<transport::CurveKeys> curve{};  // this worker's keys
  transport::LogFunction log;
};

struct PeerProxyState {
  std::unique_ptr<transport::Connection> connection;
};

// Another worker's stand-in: inputs for its tasks go straight to its process (the wire table's route
// between workers), over a connection made on first use.
caf::behavior peer_proxy(caf::stateful_actor<PeerProxyState>* self, PeerTarget target) {
  survive_stray_errors(self, "proxy of worker " + std::to_string(target.id));
  return wire::forwarding_behavior<wire::kWorkerToWorker>(
      [=](wire::Envelope::Which, auto&& fill) {
        auto& connection = self->state.connection;
        auto dial = [&](const std::string& address, std::chrono::milliseconds handshake) {
          return std::make_unique<transport::Connection>(
              transport::ConnectionOptions{.address = address,
                                           .role = wire::Role::WORKER,
                                           .name = target.name,
                                           .curve = target.curve,
                                           .server_public_key = target.public_key,
                                           .handshake_timeout = handshake,
                                           .send_timeout = std::chrono::milliseconds(5000),
                                           .server_role = wire::Role::WORKER});
        };
        if (!connection && !target.local_address.empty()) {
          // A socket file on this host: no TCP stack between the two processes. Its file may be out of
          // reach all the same (a private /tmp): then TCP, as for a worker elsewhere.
          try {
            connection = dial(target.local_address, std::chrono::milliseconds(2000));
            target.log("sends inputs to worker " + std::to_string(target.id) + " on this host at " +
                       target.local_address);
          } catch (const std::exception& e) {
            target.log("cannot reach worker " + std::to_string(target.id) + " on this host at " +
                       target.local_address + " (" + e.what() + "); using " + target.address);
          }
        }
        if (!connection) {
          try {
            connection = dial(target.address, std::chrono::milliseconds(5000));
          } catch (const std::exception& e) {
            target.log("cannot reach worker " + std::to_string(target.id) + " at " + target.address + ": " +
                       e.what() + "; the scheduler recomputes what it needed if it is gone");
            return;
          }
        }
        transport::Outgoing message;
        wire::EncodeContext context{message.attachments(), nullptr, target.id};
        fill(message.envelope(), context);
        if (!connection->send(message))
          target.log("worker " + std::to_string(target.id) + " at " + target.address +
                     " takes no inputs (gone?); they are dropped and recomputed if needed");
      },
      [=](shutdown_atom) { self->quit(); });
}

}  // namespace

struct WorkerNode::State {
  WorkerNodeOptions options;
  caf::actor_system_config config;
  std::unique_ptr<caf::actor_system> system;
  std::shared_ptr<WorkerDirectory> directory = std::make_shared<WorkerDirectory>();
  std::unique_ptr<transport::Server> peer_server;
  std::string advertised;  // the peer server's endpoint as other hosts dial it (a wildcard resolved)
  std::string host = this_host_identity();  // who may dial the socket file below
  std::string origin = process_origin();    // what tells it apart from a worker of the same name
  std::shared_ptr<transport::Connection> first_connection;

  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  caf::actor worker;                // this session's worker actor
  std::optional<std::uint32_t> id;  // its id, once the scheduler has given it
  bool stopping = false;
  std::thread thread;
  caf::actor proxy_;  // this session's scheduler stand-in (session thread only)
  // Without a node database given: its own, in a temporary directory.
  std::mutex database_mutex;
  std::shared_ptr<NodeDatabase> database;
  std::filesystem::path temporary_dir;

  void log(const std::string& line) const { options.log(line); }

  std::shared_ptr<transport::Connection> connect() const {
    return std::make_shared<transport::Connection>(
        transport::ConnectionOptions{.address = options.scheduler,
                                     .role = wire::Role::WORKER,
                                     .name = options.name,
                                     .threads = options.threads,
                                     .memory_limit = options.memory_limit,
                                     .listen = advertised,
                                     .local_listen = peer_server->local_endpoint(),
                                     .host = host,
                                     .origin = origin,
                                     .curve = options.curve,
                                     .server_public_key = options.scheduler_public_key,
                                     .max_message_bytes = options.max_message_bytes});
  }

  // Inputs from a peer, on the peer server's I/O thread.
  void on_peer_message(transport::Received& message) {
    auto envelope = message.envelope();
    if (envelope.isHeartbeat()) return;  // the transport refused any other kind a peer may not send
    auto inputs = envelope.getInputs();
    caf::actor target;
    {
      std::lock_guard lock(mutex);
      if (!id || *id != inputs.getWorker())
        throw wire::WireError("inputs for worker " + std::to_string(inputs.getWorker()) + ", but this is " +
                              (id ? "worker " + std::to_string(*id) : "a worker not yet registered"));
      target = worker;
    }
    wire::deliver_to_actor<wire::kWorkerToWorker>(envelope, wire::DecodeContext{message.frames()}, target);
  }

  void run() {
    auto connection = std::move(first_connection);
    bool failed = false;  // the last attempt to connect failed
    for (;;) {
      if (connection) session(connection);
      connection.reset();
      std::unique_lock lock(mutex);
      if (stopping) return;
      // Not a test's sleep: the pause between attempts to reach a scheduler that is away. Right after a
      // session ends (a scheduler that restarted refuses the old one) the next attempt goes at once.
      if (failed) changed.wait_for(lock, std::chrono::seconds(1), [&] { return stopping; });
      if (stopping) return;
      lock.unlock();
      try {
        connection = connect();
        failed = false;
        log("reconnected to the scheduler at " + options.scheduler);
      } catch (const std::exception& e) {
        failed = true;
        log("cannot reach the scheduler at " + options.scheduler + ": " + e.what());
      }
    }
  }

  void session(const std::shared_ptr<transport::Connection>& connection) {
    auto proxy = system->spawn(scheduler_proxy, connection);
    proxy_ = proxy;
    WorkerOptions worker_options{options.threads, directory};
    worker_options.simulation_gpus = options.gpus;
    worker_options.name = options.name;
    worker_options.runs_dir = options.runs_dir;
    worker_options.memory = MemoryOptions{options.memory_limit, options.memory_target_fraction,
                                          options.memory_pause_fraction, options.open_database};
    auto local = spawn_worker(*system, proxy, std::move(worker_options));
    {
      std::lock_guard lock(mutex);
      worker = local;
      id.reset();
    }
    wire::OperationTable operations;
    std::unordered_map<std::uint32_t, caf::actor> peers;
    std::vector<std::uint32_t> known_ids;
    auto next_heartbeat = std::chrono::steady_clock::now();
    for (;;) {
      {
        std::lock_guard lock(mutex);
        if (stopping) break;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_heartbeat) {
        transport::Outgoing heartbeat;
        heartbeat.envelope().initHeartbeat();
        connection->post(heartbeat);
        next_heartbeat = now + options.heartbeat_interval;
      }
      std::optional<transport::Received> message;
      try {
        message = connection->pump(std::chrono::milliseconds(20));
      } catch (const std::exception& e) {
        log(std::string("dropped a malformed message from the scheduler: ") + e.what());
        continue;
      }
      if (!message) continue;
      bool ended = false;
      try {
        ended = handle(*message, local, operations, peers, known_ids);
      } catch (const kj::Exception& e) {
        log(std::string("dropped a malformed message from the scheduler: ") + e.getDescription().cStr());
      } catch (const std::exception& e) {
        log(std::string("dropped a message from the scheduler: ") + e.what());
      }
      if (ended) break;
    }
    caf::anon_send(local, shutdown_atom::value);
    caf::anon_send_exit(proxy, caf::exit_reason::user_shutdown);
    for (auto& [peer, actor] : peers) caf::anon_send(actor, shutdown_atom::value);
    for (auto known : known_ids) directory->erase(known);
    std::lock_guard lock(mutex);
    worker = nullptr;
    id.reset();
  }

  // True when the session ends (the scheduler dropped this worker or refused it).
  bool handle(transport::Received& message, const caf::actor& local, wire::OperationTable& operations,
              std::unordered_map<std::uint32_t, caf::actor>& peers, std::vector<std::uint32_t>& known_ids) {
    auto envelope = message.envelope();
    switch (envelope.which()) {
      case wire::Envelope::WORKER_WELCOME: {
        const std::uint32_t assigned = envelope.getWorkerWelcome().getWorkerId();
        directory->set(assigned, caf::actor_cast<protocols::input_target_type>(local));
        known_ids.push_back(assigned);
        caf::anon_send(local, welcome_atom::value, assigned);
        {
          std::lock_guard lock(mutex);
          id = assigned;
        }
        changed.notify_all();
        log("registered with the scheduler at " + options.scheduler + " as worker " +
            std::to_string(assigned) + "; peers reach it at " + advertised +
            (peer_server->local_endpoint().empty()
                 ? std::string()
                 : ", those on this host at " + peer_server->local_endpoint()));
        return false;
      }
      case wire::Envelope::PEER: {
        auto peer = envelope.getPeer();
        const std::uint32_t other = peer.getWorkerId();
        if (auto it = peers.find(other); it != peers.end()) {
          caf::anon_send(it->second, shutdown_atom::value);
          peers.erase(it);
          directory->erase(other);
        }
        if (peer.getAddress().size() == 0) return false;  // it left
        PeerTarget target{other,        peer.getAddress(), peer.getPublicKey(), peer.getLocalAddress(),
                          options.name, options.curve,     options.log};
        auto actor = system->spawn(peer_proxy, std::move(target));
        peers[other] = actor;
        directory->set(other, caf::actor_cast<protocols::input_target_type>(actor));
        known_ids.push_back(other);
        return false;
      }
      case wire::Envelope::SHUTDOWN:
        log("the scheduler ended this worker's registration; registering again");
        return true;
      case wire::Envelope::REFUSE:
        log("the scheduler refused this worker: " + std::string(envelope.getRefuse().getReason()) +
            "; registering again");
        return true;
      case wire::Envelope::ERROR:
        log("the scheduler reports: " + std::string(envelope.getError().getReason()));
        return false;
      default: {
        const wire::DecodeContext context{message.frames(), 0, &operations, proxy_};
        if (!wire::deliver_to_actor<wire::kSchedulerToWorker>(envelope, context, local))
          throw wire::WireError("no handler here for '" + wire::kind_name(envelope.which()) + "'");
        return false;
      }
    }
  }
};

WorkerNode::WorkerNode(WorkerNodeOptions options) : state_(std::make_shared<State>()) {
  auto& st = *state_;
  if (!options.log)
    options.log = [](const std::string& line) { std::cerr << "[tessera] " << line << std::endl; };
  const std::uint32_t cores = std::max(1u, std::thread::hardware_concurrency());
  if (options.threads == 0) options.threads = cores;
  if (!options.open_database) {
    // Its own temporary database, removed with it.
    options.open_database = [state = std::weak_ptr<State>(state_)]() -> std::shared_ptr<NodeDatabase> {
      auto st = state.lock();
      if (!st) throw StoreError("the worker is stopping");
      std::lock_guard lock(st->database_mutex);
      if (!st->database) {
        static std::atomic<int> instances{0};
        st->temporary_dir =
            std::filesystem::temp_directory_path() /
            ("tessera-spill-" + std::to_string(::getpid()) + "-" + std::to_string(++instances));
        st->database = std::make_shared<NodeDatabase>(st->temporary_dir);
      }
      return st->database;
    };
  }
  st.options = std::move(options);
  configure_actor_threads(st.config, std::max(2u, cores), st.options.idle_threads);
  if (st.options.memory_limit == 0) keep_freed_memory(st.options.keep_freed_memory);
  st.system = std::make_unique<caf::actor_system>(st.config);
  transport::ServerOptions server;
  server.listen = st.options.listen;
  server.name = st.options.name;
  server.log = st.options.log;
  server.role = wire::Role::WORKER;
  server.curve = st.options.curve;
  server.authorized_keys = st.options.authorized_keys;
  server.authorize_any = st.options.authorize_any;
  server.max_message_bytes = st.options.max_message_bytes;
  server.defer_start = true;
  server.local_ipc = st.options.same_host_ipc;
  State* raw = state_.get();
  st.peer_server = std::make_unique<transport::Server>(
      std::move(server), [raw](transport::Server&, const transport::PeerInfo&, transport::Received& message) {
        raw->on_peer_message(message);
      });
  st.advertised = advertised_endpoint(st.peer_server->endpoint(), st.options.scheduler);
  st.peer_server->start();
  st.first_connection = st.connect();  // throws ConnectionRefused: the node stops with the reason
  st.thread = std::thread([raw] {
    ::pthread_setname_np(::pthread_self(), "tessera-worker");
    raw->run();
  });
}

WorkerNode::~WorkerNode() {
  {
    std::lock_guard lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  state_->thread.join();
  state_->peer_server.reset();
  state_->system->await_all_actors_done();
  state_->system.reset();
  state_->database.reset();
  if (!state_->temporary_dir.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(state_->temporary_dir, ignored);
  }
}

const std::string& WorkerNode::endpoint() const {
  return state_->advertised;
}

std::optional<std::uint32_t> WorkerNode::wait_for_id(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait_for(lock, timeout, [&] { return state_->id.has_value(); });
  return state_->id;
}

}  // namespace tessera
