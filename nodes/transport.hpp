// The ZeroMQ transport between Tessera processes. A Server owns a ROUTER socket served by one I/O
// thread: it checks each peer's hello (protocol version first), answers welcome or refuse, and hands
// every later well-formed envelope to a handler; anything malformed — random bytes, a truncated or
// oversized message, a message before hello, a peer of another version — is dropped with a log line
// while the server goes on serving everyone else. A Connection is the other end (a DEALER), used by
// workers and clients. With CURVE keys set, ZeroMQ authenticates and encrypts every connection and the
// server refuses, and logs, public keys it was not given.
#pragma once

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "graph/errors.hpp"
#include "messages/protocol.capnp.h"
#include "messages/wire_codec.hpp"
#include "nodes/log_limiter.hpp"
#include "nodes/wire_table.hpp"

namespace tessera::transport {

// Bumped whenever the meaning of an existing message changes; peers of another version are refused.
inline constexpr std::uint32_t kProtocolVersion =
    5;  // 5: attachments in pieces; 4: write-ahead streams, reattach, heartbeats to clients

// ZeroMQ allocates what a frame announces before its bytes arrive (address space, for each connection at
// once), so this bounds every frame. Larger frames are dropped by ZeroMQ, and the peer with them.
inline constexpr std::size_t kDefaultMaxFrameBytes = std::size_t{64} << 20;
// An attachment (a chunk, a large result) larger than this travels as several frames of at most this
// size, joined again on arrival: a frame's size bounds what one connection reserves, not what a message
// may carry. limits.max_message_size is at least this.
inline constexpr std::size_t kAttachmentPieceBytes = std::size_t{16} << 20;
// A header (the Cap'n Proto envelope, without its frames) larger than this is dropped unread.
inline constexpr std::size_t kMaxHeaderBytes = std::size_t{64} << 20;
// Names in hello longer than this are refused: they end up in every log line about the peer.
inline constexpr std::size_t kMaxPeerNameBytes = 256;
inline constexpr std::size_t kMaxSessionTokenBytes = 64;
inline constexpr std::size_t kMaxPeerAddressBytes = 1024;  // a worker's listen, localListen and host

struct CurveKeys {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;
};
// A fresh CURVE key pair (what `tessera keygen` writes).
CurveKeys generate_curve_keys();

using LogFunction = std::function<void(const std::string&)>;

// One received message: its envelope and the frames beside it, valid while the object lives.
class Received {
 public:
  // Attachments that came in pieces are joined into one buffer each here.
  Received(std::vector<zmq::message_t> parts, std::size_t header_index,
           const wire::DecodeLimits& limits = {});
  wire::Envelope::Reader envelope() { return envelope_; }
  // The frames beside the header, each with an owner: a chunk decoded from one may keep it as its storage,
  // past this object's life.
  wire::Frames frames() const { return wire::Frames(frames_, owners_); }

 private:
  std::vector<zmq::message_t> parts_;  // the envelope and header
  std::vector<std::span<const std::byte>> frames_;
  std::vector<std::shared_ptr<const void>> owners_;  // owners_[i] holds the message of frames_[i]
  std::optional<wire::HeaderReader> reader_;
  wire::Envelope::Reader envelope_;
};

// Encodes an envelope the caller fills, stamped with this node's protocol version.
class Outgoing {
 public:
  Outgoing();
  wire::Envelope::Builder envelope() { return envelope_; }
  wire::Attachments& attachments() { return attachments_; }
  // The frames to send: the flat header, then each attachment (referenced, not copied), in pieces of at
  // most `piece_bytes` (kAttachmentPieceBytes; tests set less).
  std::vector<zmq::message_t> frames(std::size_t piece_bytes = kAttachmentPieceBytes);

 private:
  capnp::MallocMessageBuilder builder_;
  wire::Envelope::Builder envelope_;
  wire::Attachments attachments_;
  kj::Array<capnp::word> flat_;
};

class Server;
struct PeerInfo;

struct ServerOptions {
  std::string listen = "tcp://127.0.0.1:0";  // 127.0.0.1 unless told otherwise; port 0 takes a free one
  std::string name = "scheduler";
  // What this server is: a scheduler, or a worker serving its peers (what may be sent to it follows).
  wire::Role role = wire::Role::SCHEDULER;
  std::optional<CurveKeys> curve;                         // set: CURVE server
  std::vector<std::string> authorized_keys;               // with curve: the client public keys accepted
  bool authorize_any = false;                             // with curve: any key (encryption only)
  std::size_t max_message_bytes = kDefaultMaxFrameBytes;  // larger frames are dropped by ZeroMQ
  LogFunction log;                                        // default: stderr
  bool defer_start = false;  // true: the I/O thread starts on start(), not at construction
  // Also bind a socket file in a directory of its own (as listen = "ipc://*" does), for peers on this
  // host; local_endpoint() names it. Ignored when listen is ipc:// already.
  bool local_ipc = false;
  // On the I/O thread, before a peer is welcomed: a reason to refuse it (a worker claiming more threads
  // than the node's limit), or nullopt to let it in.
  std::function<std::optional<std::string>(const PeerInfo&)> admit{};
  // On the I/O thread, as a peer is welcomed: what the welcome tells it beyond its number (a client's
  // session). Runs before `joined`; it may forget() other peers.
  std::function<void(Server&, const PeerInfo&, wire::Welcome::Builder)> welcome{};
  // On the I/O thread: a peer said hello and was welcomed.
  std::function<void(Server&, const PeerInfo&)> joined{};
  // On the I/O thread, about every 50 ms: time-based work such as heartbeat timeouts.
  std::function<void(Server&)> tick{};
};

struct PeerInfo {
  std::string id;  // ZeroMQ routing id
  std::uint32_t number;
  wire::Role role;
  std::string name;
  std::uint32_t threads = 0;       // workers: compute threads
  std::uint64_t memory_limit = 0;  // workers
  std::string listen{};            // workers: where their peers send them inputs
  std::string public_key{};        // workers with CURVE
  std::string local_listen{};      // workers: a socket file for peers on their host (may be empty)
  std::string host{};              // workers: this_host_identity() of their process
  std::string resume{};            // clients: the session token they were welcomed with before
  std::string origin{};            // workers: "HOSTNAME-PID" of their process
};

class Server {
 public:
  // Runs on the I/O thread; it may answer through `server.send`.
  using Handler = std::function<void(Server& server, const PeerInfo& peer, Received& message)>;
  Server(ServerOptions options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Starts the I/O thread when the options deferred it.
  void start();
  // The endpoint actually bound (the port resolved).
  const std::string& endpoint() const { return endpoint_; }
  // With local_ipc: the socket file's endpoint ("ipc:///tmp/tessera-ipc-XXXXXX/socket"); else empty.
  const std::string& local_endpoint() const { return local_endpoint_; }
  // Thread-safe; the message goes out from the I/O thread.
  void send(const std::string& peer_id, Outgoing& message);
  std::size_t peer_count() const { return peer_count_.load(); }
  std::uint64_t dropped() const { return dropped_.load(); }
  // I/O thread only (from a handler or tick): the peer must say hello again before it is heard.
  void forget(const std::string& peer_id);

 private:
  void run();
  void handle(std::vector<zmq::message_t>& parts);
  void answer_zap();
  void refuse(const std::string& peer_id, const std::string& reason);
  void log(const std::string& line) const;
  // Lines about what a peer sent wrong: rate-limited, so a flood cannot bury the log.
  void log_peer_fault(const std::string& line);

  ServerOptions options_;
  Handler handler_;
  zmq::context_t context_;
  zmq::socket_t router_, outbox_pull_, outbox_push_, zap_;
  std::mutex outbox_mutex_;
  std::string endpoint_, local_endpoint_, outbox_address_;
  std::filesystem::path ipc_directory_;  // listen = "ipc://*" or local_ipc: the directory of its socket file
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> peer_count_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::vector<PeerInfo> peers_;  // I/O thread only
  LogLimiter fault_log_;         // I/O thread only
  std::uint32_t next_peer_number_ = 1;
  std::thread thread_;
};

class ConnectionRefused : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

struct ConnectionOptions {
  std::string address;
  wire::Role role = wire::Role::CLIENT;
  std::string name = "client";
  std::uint32_t threads = 0;
  std::uint64_t memory_limit = 0;
  std::string listen{};
  std::string local_listen{};        // workers: their socket file for peers on this host
  std::string host{};                // workers: this_host_identity()
  std::string origin{};              // workers: "HOSTNAME-PID" of this process
  std::optional<CurveKeys> curve{};  // this end's keys
  std::string server_public_key{};   // with curve: the server's public key
  std::chrono::milliseconds handshake_timeout{5000};
  std::string resume{};  // clients: the session token of an earlier connection, to take that session over
  std::size_t max_message_bytes = kDefaultMaxFrameBytes;  // larger frames from the server are dropped
  // How long send() may wait for room (a peer that is gone); negative: for ever.
  std::chrono::milliseconds send_timeout{-1};
  std::uint32_t protocol_version = kProtocolVersion;  // tests set another to see the refusal
  // What the server is: a scheduler, or another worker (a worker's inputs go straight to it).
  wire::Role server_role = wire::Role::SCHEDULER;
};

// A DEALER connection. send/receive are for one thread at a time; for a connection shared by many
// threads, they post() and one I/O thread pump()s.
class Connection {
 public:
  // Connects and shakes hands; throws ConnectionRefused with the server's reason, or when no answer
  // comes within the timeout (wrong address, or a CURVE key the server does not accept).
  explicit Connection(ConnectionOptions options);
  // False when the send timeout passed first (the message was not sent).
  bool send(Outgoing& message);
  // Waits up to `timeout` for the next message; nullopt on timeout.
  std::optional<Received> receive(std::chrono::milliseconds timeout);
  // Thread-safe: queues the message for the thread that calls pump().
  void post(Outgoing& message);
  // Sends what was posted and waits up to `timeout` for the next message; nullopt on timeout.
  std::optional<Received> pump(std::chrono::milliseconds timeout);
  std::uint32_t peer_number() const { return peer_number_; }
  // Clients: the session token the server welcomed this connection with (empty from a server that gives
  // none); whether it took over the session the options' `resume` named; and then, for each result table
  // of that session, how many slots the server has sent results of.
  const std::string& session() const { return session_; }
  bool resumed() const { return resumed_; }
  const std::unordered_map<std::uint64_t, std::uint64_t>& delivered() const { return delivered_; }
  // How long ago bytes from the server last arrived (any: a frame of a message still on its way counts),
  // by the kernel's count for the TCP connection; nullopt where that is not known (ipc://, or no connection
  // up now). On the thread that pumps. A slow link delays whole messages, not bytes.
  std::optional<std::chrono::milliseconds> since_bytes_arrived();
  // How long closing waits for unsent messages (0 by default: a last goodbye needs more).
  void set_linger(std::chrono::milliseconds linger) {
    dealer_.set(zmq::sockopt::linger, static_cast<int>(linger.count()));
  }

 private:
  // Refuses what the server may not send to this end (by the wire table).
  Received checked(Received message) const;

  zmq::context_t context_;
  wire::Direction from_server_ = wire::kSchedulerToClient;  // the direction of what it receives
  zmq::socket_t dealer_, outbox_pull_, outbox_push_;
  zmq::socket_t monitor_;  // the dealer's connect and disconnect events: which TCP socket is its own
  bool tcp_ever_connected_ = false;  // a TCP connection came up at some point (the link's events say)
  int tcp_socket_ = -1;              // the dealer's TCP connection (owned by ZeroMQ), -1 while none is up
  std::mutex outbox_mutex_;
  std::uint32_t peer_number_ = 0;
  std::string session_;
  bool resumed_ = false;
  std::unordered_map<std::uint64_t, std::uint64_t> delivered_;
};

}  // namespace tessera::transport
