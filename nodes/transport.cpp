#include "nodes/transport.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>

#include "actors/outgoing_bytes.hpp"

#include "nodes/wire_table.hpp"

#include <capnp/serialize.h>
#include <zmq_addon.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "graph/errors.hpp"
#include "graph/printable.hpp"

namespace tessera::transport {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += {digits[c >> 4], digits[c & 15]};
  return out;
}

std::string role_name(wire::Role role) {
  switch (role) {
    case wire::Role::CLIENT:
      return "client";
    case wire::Role::WORKER:
      return "worker";
    case wire::Role::SCHEDULER:
      return "scheduler";
  }
  return "unknown role";
}

// No high-water marks: ZeroMQ would otherwise drop (ROUTER) or block on (DEALER) the messages past 1000
// queued for a slow peer, and a dropped assignment or result is a task that never finishes. Memory is
// the bound instead, as with Dask's TCP comms.
void unbounded(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::sndhwm, 0);
  socket.set(zmq::sockopt::rcvhwm, 0);
}

// An ipc:// path given relative ("ipc://run/worker.sock") is reported relative to this process's current
// directory: peers started elsewhere must be given it absolute.
std::string dialable_endpoint(const std::string& bound) {
  constexpr std::string_view scheme = "ipc://";
  if (!bound.starts_with(scheme)) return bound;
  const std::filesystem::path path = bound.substr(scheme.size());
  if (path.empty() || path.is_absolute() || bound[scheme.size()] == '@') return bound;  // @: abstract
  return std::string(scheme) + std::filesystem::absolute(path).string();
}

// What keeps a zero-copy frame's bytes alive until ZeroMQ has sent them, counted in outgoing_bytes().
struct FrameOwner {
  tessera::Value value;
  std::int64_t bytes;
};

// Called by ZeroMQ (on its I/O thread) once a zero-copy frame has gone out.
void release_attachment(void*, void* owner) {
  auto* frame = static_cast<FrameOwner*>(owner);
  tessera::outgoing_bytes().fetch_sub(frame->bytes, std::memory_order_relaxed);
  delete frame;
}

// False when the socket's send timeout passed before the first frame was taken (then none was sent; once
// the first frame of a message is queued, ZeroMQ takes the rest).
bool send_frames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  for (std::size_t i = 0; i < frames.size(); ++i) {
    const auto sent =
        socket.send(frames[i], i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (!sent && i == 0) return false;
  }
  return true;
}

void set_curve_client(zmq::socket_t& socket, const CurveKeys& keys, const std::string& server_public_key) {
  socket.set(zmq::sockopt::curve_serverkey, server_public_key);
  socket.set(zmq::sockopt::curve_publickey, keys.public_key);
  socket.set(zmq::sockopt::curve_secretkey, keys.secret_key);
}

}  // namespace

CurveKeys generate_curve_keys() {
  char public_key[41], secret_key[41];
  if (zmq_curve_keypair(public_key, secret_key) != 0)
    throw std::runtime_error("cannot make a CURVE key pair: " + std::string(zmq_strerror(zmq_errno())));
  return CurveKeys{public_key, secret_key};
}

Received::Received(std::vector<zmq::message_t> parts, std::size_t header_index,
                   const wire::DecodeLimits& limits)
    : parts_(std::move(parts)) {
  if (parts_.size() <= header_index) throw wire::WireError("message without a header frame");
  const auto& header = parts_[header_index];
  reader_.emplace(std::span<const std::byte>(static_cast<const std::byte*>(header.data()), header.size()),
                  limits);
  envelope_ = reader_->root<wire::Envelope>();
  // Each attachment in one frame, unless the header says how many pieces each came in.
  const auto pieces = envelope_.getAttachmentPieces();
  const std::size_t first = header_index + 1;
  if (pieces.size() != 0) {
    std::uint64_t announced = 0;
    for (const std::uint32_t count : pieces) {
      if (count == 0) throw wire::WireError("an attachment in 0 pieces");
      announced += count;
    }
    if (announced != parts_.size() - first)
      throw wire::WireError("the header announces " + std::to_string(announced) +
                            " attachment pieces, the message has " + std::to_string(parts_.size() - first));
  }
  const std::size_t attachments = pieces.size() != 0 ? pieces.size() : parts_.size() - first;
  for (std::size_t a = 0, next = first; a < attachments; ++a) {
    const std::uint32_t count = pieces.size() != 0 ? pieces[static_cast<unsigned>(a)] : 1;
    if (count == 1) {
      // The frame moves into a message of its own, shared: the bytes stay where ZeroMQ received them.
      auto frame = std::make_shared<zmq::message_t>(std::move(parts_[next++]));
      frames_.emplace_back(static_cast<const std::byte*>(frame->data()), frame->size());
      owners_.push_back(std::move(frame));
      continue;
    }
    std::size_t total = 0;
    for (std::size_t k = next; k < next + count; ++k) total += parts_[k].size();
    // Aligned as a chunk's storage wants it; each piece is freed once copied.
    const std::size_t rounded = (std::max<std::size_t>(total, 1) + 63) / 64 * 64;
    std::shared_ptr<std::byte> joined(static_cast<std::byte*>(std::aligned_alloc(64, rounded)), std::free);
    if (!joined) throw std::bad_alloc();
    std::size_t at = 0;
    for (const std::size_t end = next + count; next < end; ++next) {
      if (parts_[next].size()) std::memcpy(joined.get() + at, parts_[next].data(), parts_[next].size());
      at += parts_[next].size();
      parts_[next].rebuild();
    }
    frames_.emplace_back(joined.get(), total);
    owners_.push_back(std::move(joined));
  }
  parts_.resize(first);  // the envelope and header; the frames are owned above
}

Outgoing::Outgoing() : envelope_(builder_.initRoot<wire::Envelope>()) {
  envelope_.setVersion(kProtocolVersion);
}

std::vector<zmq::message_t> Outgoing::frames(std::size_t piece_bytes) {
  piece_bytes = std::max<std::size_t>(piece_bytes, 1);
  const auto pieces_of = [piece_bytes](std::size_t bytes) {
    return std::max<std::size_t>(1, (bytes + piece_bytes - 1) / piece_bytes);
  };
  const auto& attached = attachments_.frames;
  if (std::any_of(attached.begin(), attached.end(), [&](const auto& f) { return pieces_of(f.size()) > 1; })) {
    auto pieces = envelope_.initAttachmentPieces(static_cast<unsigned>(attached.size()));
    for (std::size_t i = 0; i < attached.size(); ++i)
      pieces.set(static_cast<unsigned>(i), static_cast<std::uint32_t>(pieces_of(attached[i].size())));
  }
  flat_ = capnp::messageToFlatArray(builder_);
  std::vector<zmq::message_t> out;
  out.emplace_back(flat_.begin(), flat_.size() * sizeof(capnp::word));
  for (std::size_t i = 0; i < attached.size(); ++i) {
    // Zero copy: ZeroMQ frees each piece by dropping the Value that owns its bytes (each piece holds it).
    const auto frame = attached[i];
    for (std::size_t at = 0, n = pieces_of(frame.size()); n > 0; --n) {
      const std::size_t size = std::min(piece_bytes, frame.size() - at);
      auto* owner = new FrameOwner{attachments_.keep[i], static_cast<std::int64_t>(size)};
      tessera::outgoing_bytes().fetch_add(owner->bytes, std::memory_order_relaxed);
      out.emplace_back(const_cast<std::byte*>(frame.data()) + at, size, &release_attachment, owner);
      at += size;
    }
  }
  return out;
}

Server::Server(ServerOptions options, Handler handler)
    : options_(std::move(options)),
      handler_(std::move(handler)),
      context_(1),
      router_(context_, zmq::socket_type::router),
      outbox_pull_(context_, zmq::socket_type::pull),
      outbox_push_(context_, zmq::socket_type::push),
      zap_(context_, zmq::socket_type::rep) {
  if (!options_.log)
    options_.log = [](const std::string& line) { std::cerr << "[tessera] " << line << std::endl; };
  router_.set(zmq::sockopt::linger, 0);
  unbounded(router_);
  router_.set(zmq::sockopt::router_mandatory, 1);
  router_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options_.max_message_bytes));
  if (options_.curve) {
    // The ZAP handler must exist before the first connection: it decides which client keys may enter.
    zap_.set(zmq::sockopt::linger, 0);
    zap_.bind("inproc://zeromq.zap.01");
    router_.set(zmq::sockopt::curve_server, 1);
    router_.set(zmq::sockopt::curve_secretkey, options_.curve->secret_key);
  }
  // ZeroMQ's own "ipc://*" falls back to the current directory when TMPDIR is unset; this one goes in
  // the temporary directory, in a directory of its own (mode 0700) that the destructor removes.
  auto bind_private_socket_file = [this] {
    std::string pattern = (std::filesystem::temp_directory_path() / "tessera-ipc-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a directory for the ipc:// socket from " + pattern + ": " +
                               std::strerror(errno));
    ipc_directory_ = pattern;
    try {
      router_.bind("ipc://" + (ipc_directory_ / "socket").string());
    } catch (...) {
      std::error_code ignored;
      std::filesystem::remove_all(ipc_directory_, ignored);
      ipc_directory_.clear();
      throw;
    }
    return dialable_endpoint(router_.get(zmq::sockopt::last_endpoint));
  };
  if (options_.listen == "ipc://*") {
    endpoint_ = bind_private_socket_file();
  } else {
    router_.bind(options_.listen);
    endpoint_ = dialable_endpoint(router_.get(zmq::sockopt::last_endpoint));
    if (options_.local_ipc && !options_.listen.starts_with("ipc://")) {
      try {
        local_endpoint_ = bind_private_socket_file();
      } catch (const std::exception& e) {
        // Peers on this host then dial `listen` as others do.
        log(std::string("no socket file for peers on this host (they use ") + endpoint_ + "): " + e.what());
      }
    }
  }
  outbox_address_ = "inproc://tessera-outbox";
  // Unbounded too: a sender on the I/O thread itself (a handler's answer) must never wait for it.
  unbounded(outbox_pull_);
  unbounded(outbox_push_);
  outbox_pull_.bind(outbox_address_);
  outbox_push_.set(zmq::sockopt::linger, 0);
  outbox_push_.connect(outbox_address_);
  if (!options_.defer_start) start();
}

void Server::start() {
  if (!thread_.joinable())
    thread_ = std::thread([this] {
      ::pthread_setname_np(::pthread_self(), "tessera-server");
      run();
    });
}

Server::~Server() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
  // The listening socket still holds its file open; unlinked, it takes no new connections.
  std::error_code ignored;
  if (!ipc_directory_.empty()) std::filesystem::remove_all(ipc_directory_, ignored);
}

void Server::log(const std::string& line) const {
  options_.log(line);
}

void Server::log_peer_fault(const std::string& line) {
  fault_log_.write(options_.log, line);
}

void Server::send(const std::string& peer_id, Outgoing& message) {
  auto frames = message.frames();
  std::lock_guard lock(outbox_mutex_);
  outbox_push_.send(zmq::buffer(peer_id), zmq::send_flags::sndmore);
  send_frames(outbox_push_, frames);
}

void Server::forget(const std::string& peer_id) {
  auto it = std::find_if(peers_.begin(), peers_.end(), [&](const PeerInfo& p) { return p.id == peer_id; });
  if (it == peers_.end()) return;
  peers_.erase(it);
  peer_count_ = peers_.size();
}

void Server::refuse(const std::string& peer_id, const std::string& reason) {
  Outgoing answer;
  answer.envelope().initRefuse().setReason(reason);
  auto frames = answer.frames();
  try {
    router_.send(zmq::buffer(peer_id), zmq::send_flags::sndmore);
    send_frames(router_, frames);
  } catch (const zmq::error_t&) {
    // The peer is gone already: nothing to tell.
  }
}

void Server::run() {
  std::vector<zmq::pollitem_t> items{{router_.handle(), 0, ZMQ_POLLIN, 0},
                                     {outbox_pull_.handle(), 0, ZMQ_POLLIN, 0}};
  if (options_.curve) items.push_back({zap_.handle(), 0, ZMQ_POLLIN, 0});
  auto next_tick = std::chrono::steady_clock::now();
  while (!stopping_) {
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    // A burst is drained in one go (bounded, so neither direction starves the other).
    constexpr int kBurst = 256;
    for (int i = 0; i < kBurst && (items[0].revents & ZMQ_POLLIN); ++i) {
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(router_, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
      handle(parts);
    }
    for (int i = 0; i < kBurst && (items[1].revents & ZMQ_POLLIN); ++i) {
      std::vector<zmq::message_t> parts;
      if (!zmq::recv_multipart(outbox_pull_, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
      try {
        if (!send_frames(router_, parts)) {
          dropped_ += 1;
          log_peer_fault("could not send to peer " + hex(parts[0].to_string()) +
                         ": it takes no more messages");
        }
      } catch (const zmq::error_t& e) {
        log_peer_fault("could not send to peer " + hex(parts[0].to_string()) + ": " + e.what());
      }
    }
    if (items.size() > 2 && (items[2].revents & ZMQ_POLLIN)) answer_zap();
    if (options_.tick) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= next_tick) {
        options_.tick(*this);
        next_tick = now + std::chrono::milliseconds(50);
      }
    }
  }
}

void Server::handle(std::vector<zmq::message_t>& parts) {
  const std::string peer_id = parts.empty() ? std::string() : parts[0].to_string();
  auto it = std::find_if(peers_.begin(), peers_.end(), [&](const PeerInfo& p) { return p.id == peer_id; });
  // Named only when something is wrong: this runs for every message. Looked up again then, since a hello
  // or a handler's forget() may have changed peers_ in between.
  const auto who = [&] {
    auto known =
        std::find_if(peers_.begin(), peers_.end(), [&](const PeerInfo& p) { return p.id == peer_id; });
    if (known == peers_.end()) return "peer " + hex(peer_id);
    return in_quotes(known->name) + " (" + role_name(known->role) + ")";
  };
  try {
    if (parts.size() > 1 && parts[1].size() > kMaxHeaderBytes)
      throw wire::WireError("a header of " + std::to_string(parts[1].size()) +
                            " bytes exceeds the limit of " + std::to_string(kMaxHeaderBytes));
    Received message(std::move(parts), 1);
    auto envelope = message.envelope();
    if (envelope.getVersion() != kProtocolVersion) {
      const std::string reason = "protocol version mismatch: the peer speaks version " +
                                 std::to_string(envelope.getVersion()) + ", this node speaks version " +
                                 std::to_string(kProtocolVersion);
      log_peer_fault("refused " + who() + ": " + reason);
      refuse(peer_id, reason);
      dropped_ += 1;
      return;
    }
    if (it == peers_.end()) {
      if (!envelope.isHello()) {
        const std::string reason =
            "the first message must be hello, got " + wire::kind_name(envelope.which());
        log_peer_fault("refused " + who() + ": " + reason);
        refuse(peer_id, reason);
        dropped_ += 1;
        return;
      }
      auto hello = envelope.getHello();
      PeerInfo peer{peer_id,           next_peer_number_,    hello.getRole(),
                    hello.getName(),   hello.getThreads(),   hello.getMemoryLimit(),
                    hello.getListen(), hello.getPublicKey(), hello.getLocalListen(),
                    hello.getHost()};
      const auto token = hello.getResume();
      peer.origin = hello.getOrigin();
      peer.resume.assign(reinterpret_cast<const char*>(token.begin()),
                         std::min<std::size_t>(token.size(), kMaxSessionTokenBytes));
      std::optional<std::string> refusal;
      const bool plain_origin =
          peer.origin.size() <= kMaxPeerNameBytes &&
          std::all_of(peer.origin.begin(), peer.origin.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
          });
      if (peer.name.size() > kMaxPeerNameBytes)
        refusal = "a name of " + std::to_string(peer.name.size()) + " bytes exceeds the limit of " +
                  std::to_string(kMaxPeerNameBytes);
      else if (peer.listen.size() > kMaxPeerAddressBytes || peer.local_listen.size() > kMaxPeerAddressBytes ||
               peer.host.size() > kMaxPeerAddressBytes)
        refusal = "an address (listen, localListen or host) exceeds the limit of " +
                  std::to_string(kMaxPeerAddressBytes) + " bytes";
      else if (!peer.local_listen.empty() && !peer.local_listen.starts_with("ipc://"))
        refusal = "localListen must be an ipc:// endpoint, got " + in_quotes(peer.local_listen, 80);
      else if (!plain_origin)
        refusal = "an origin (HOSTNAME-PID) must be at most " + std::to_string(kMaxPeerNameBytes) +
                  " letters, digits, '-', '.' or '_'";
      else if (token.size() > kMaxSessionTokenBytes)
        refusal = "a session token (resume) of " + std::to_string(token.size()) +
                  " bytes exceeds the limit of " + std::to_string(kMaxSessionTokenBytes);
      else if (options_.admit)
        refusal = options_.admit(peer);
      if (refusal) {
        log_peer_fault("refused " + role_name(peer.role) + " " + in_quotes(peer.name) + " (" + hex(peer_id) +
                       "): " + *refusal);
        refuse(peer_id, *refusal);
        dropped_ += 1;
        return;
      }
      ++next_peer_number_;
      peers_.push_back(peer);
      peer_count_ = peers_.size();
      log(role_name(peer.role) + " " + in_quotes(peer.name) + " connected as peer " +
          std::to_string(peer.number));
      Outgoing welcome;
      auto w = welcome.envelope().initWelcome();
      w.setPeerId(peer.number);
      w.setServerName(options_.name);
      if (options_.welcome) options_.welcome(*this, peer, w);
      auto frames = welcome.frames();
      router_.send(zmq::buffer(peer_id), zmq::send_flags::sndmore);
      send_frames(router_, frames);
      if (options_.joined) options_.joined(*this, peers_.back());
      return;
    }
    if (envelope.isHello()) return;  // a repeated hello changes nothing
    // Who may send what to whom is the wire table's, for every server alike.
    wire::check_direction(envelope.which(), wire::direction_between(it->role, options_.role));
    handler_(*this, *it, message);
  } catch (const kj::Exception& e) {
    log_peer_fault("dropped a malformed message from " + who() + ": " +
                   printable(e.getDescription().cStr(), 200));
    dropped_ += 1;
  } catch (const std::exception& e) {
    log_peer_fault("dropped a message from " + who() + ": " + printable(e.what(), 200));
    dropped_ += 1;
  }
}

void Server::answer_zap() {
  std::vector<zmq::message_t> request;
  if (!zmq::recv_multipart(zap_, std::back_inserter(request), zmq::recv_flags::dontwait)) return;
  // ZAP request: version, request id, domain, address, identity, mechanism, credentials...
  std::string status = "400", text = "malformed ZAP request", address;
  if (request.size() >= 7 && request[5].to_string() == "CURVE" && request[6].size() == 32) {
    address = request[3].to_string();
    char z85[41];
    zmq_z85_encode(z85, static_cast<const std::uint8_t*>(request[6].data()), 32);
    const bool known = std::find(options_.authorized_keys.begin(), options_.authorized_keys.end(),
                                 std::string(z85)) != options_.authorized_keys.end();
    if (known || options_.authorize_any) {
      status = "200";
      text = "OK";
    } else {
      text = "public key not authorized";
      log_peer_fault("refused a CURVE connection from " + printable(address) + ": public key " + z85 +
                     " is not authorized");
    }
  }
  std::vector<zmq::message_t> reply;
  reply.emplace_back(std::string("1.0"));
  reply.emplace_back(request.size() > 1 ? request[1].to_string() : std::string());
  reply.emplace_back(status);
  reply.emplace_back(text);
  reply.emplace_back(std::string());
  reply.emplace_back(std::string());
  send_frames(zap_, reply);
}

Connection::Connection(ConnectionOptions options)
    : context_(1),
      dealer_(context_, zmq::socket_type::dealer),
      outbox_pull_(context_, zmq::socket_type::pull),
      outbox_push_(context_, zmq::socket_type::push) {
  dealer_.set(zmq::sockopt::linger, 0);
  dealer_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(options.max_message_bytes));
  unbounded(dealer_);
  // Unbounded: the thread that pumps may post too (heartbeats), and must never wait for itself.
  unbounded(outbox_pull_);
  unbounded(outbox_push_);
  outbox_pull_.bind("inproc://tessera-connection-outbox");
  outbox_push_.set(zmq::sockopt::linger, 0);
  outbox_push_.connect("inproc://tessera-connection-outbox");
  from_server_ = options.server_role == wire::Role::WORKER ? wire::kWorkerToWorker
                 : options.role == wire::Role::WORKER      ? wire::kSchedulerToWorker
                                                           : wire::kSchedulerToClient;
  if (options.curve) set_curve_client(dealer_, *options.curve, options.server_public_key);
  if (options.send_timeout.count() >= 0)
    dealer_.set(zmq::sockopt::sndtimeo, static_cast<int>(options.send_timeout.count()));
  // Before connecting, so that the first connection's event comes too.
  if (zmq_socket_monitor(dealer_.handle(), "inproc://tessera-connection-monitor",
                         ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) == 0) {
    monitor_ = zmq::socket_t(context_, zmq::socket_type::pair);
    monitor_.set(zmq::sockopt::linger, 0);
    // Read only when a scheduler goes quiet: a full queue would block ZeroMQ's I/O thread on the next
    // event (a link that flaps for long), so it has no bound.
    unbounded(monitor_);
    monitor_.connect("inproc://tessera-connection-monitor");
  }
  try {
    dealer_.connect(options.address);
  } catch (const zmq::error_t& e) {
    // ZeroMQ says only "Invalid argument": name the address and what one looks like.
    throw ConnectionError("cannot connect to " + in_quotes(options.address, 200) + ": " + e.what() +
                          " (an address is tcp://HOST:PORT or ipc://PATH)");
  }
  Outgoing hello;
  hello.envelope().setVersion(options.protocol_version);
  auto h = hello.envelope().initHello();
  h.setRole(options.role);
  h.setName(options.name);
  h.setThreads(options.threads);
  h.setMemoryLimit(options.memory_limit);
  h.setListen(options.listen);
  h.setLocalListen(options.local_listen);
  h.setHost(options.host);
  h.setOrigin(options.origin);
  h.setPublicKey(options.curve ? options.curve->public_key : std::string());
  if (!options.resume.empty())
    h.setResume(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(options.resume.data()), options.resume.size()));
  send(hello);
  auto answer = receive(options.handshake_timeout);
  if (!answer) {
    // A link that came up and stayed silent is a peer that would not speak to this client (a node with
    // CURVE on, to a client without its key, or one that does not accept this key); none at all is no
    // node there.
    (void)since_bytes_arrived();  // reads the link's events
    const std::string waited = " within " + std::to_string(options.handshake_timeout.count()) + " ms";
    if (!tcp_ever_connected_)
      throw ConnectionRefused("no answer from " + options.address + waited +
                              ": nothing accepted a connection there (is a node listening at that address?)");
    throw ConnectionRefused("no answer from " + options.address + waited +
                            ": a connection was made but the peer did not answer " +
                            (options.curve
                                 ? "(does it accept this client's CURVE key?)"
                                 : "(if the node has CURVE on, this client needs keys to speak to it)"));
  }
  auto envelope = answer->envelope();
  if (envelope.isRefuse())
    throw ConnectionRefused(options.address +
                            " refused the connection: " + std::string(envelope.getRefuse().getReason()));
  if (!envelope.isWelcome())
    throw ConnectionRefused(options.address + " answered hello with " + wire::kind_name(envelope.which()));
  auto welcome = envelope.getWelcome();
  peer_number_ = welcome.getPeerId();
  const auto session = welcome.getSession();
  session_.assign(reinterpret_cast<const char*>(session.begin()), session.size());
  resumed_ = welcome.getResumed();
  if (resumed_)
    for (auto table : welcome.getDelivered()) delivered_[table.getSinkId()] = table.getSlots();
}

bool Connection::send(Outgoing& message) {
  auto frames = message.frames();
  return send_frames(dealer_, frames);
}

void Connection::post(Outgoing& message) {
  auto frames = message.frames();
  std::lock_guard lock(outbox_mutex_);
  send_frames(outbox_push_, frames);
}

std::optional<Received> Connection::pump(std::chrono::milliseconds timeout) {
  zmq::pollitem_t items[] = {{dealer_.handle(), 0, ZMQ_POLLIN, 0}, {outbox_pull_.handle(), 0, ZMQ_POLLIN, 0}};
  zmq::poll(items, 2, timeout);
  while (items[1].revents & ZMQ_POLLIN) {
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(outbox_pull_, std::back_inserter(parts), zmq::recv_flags::dontwait)) break;
    send_frames(dealer_, parts);
  }
  if (!(items[0].revents & ZMQ_POLLIN)) return std::nullopt;
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(dealer_, std::back_inserter(parts), zmq::recv_flags::dontwait))
    return std::nullopt;
  return checked(Received(std::move(parts), 0));
}

std::optional<std::chrono::milliseconds> Connection::since_bytes_arrived() {
  if (!monitor_) return std::nullopt;
  for (;;) {
    zmq::message_t event, endpoint;
    if (!monitor_.recv(event, zmq::recv_flags::dontwait)) break;
    if (event.more()) (void)monitor_.recv(endpoint, zmq::recv_flags::dontwait);
    if (event.size() < 6) continue;
    std::uint16_t kind = 0;
    std::int32_t value = 0;
    std::memcpy(&kind, event.data(), sizeof kind);
    std::memcpy(&value, static_cast<const char*>(event.data()) + sizeof kind, sizeof value);
    if (kind == ZMQ_EVENT_CONNECTED) {
      tcp_socket_ = value;
      tcp_ever_connected_ = true;
    }
    if (kind == ZMQ_EVENT_DISCONNECTED) tcp_socket_ = -1;
  }
  if (tcp_socket_ < 0) return std::nullopt;
  tcp_info info{};
  socklen_t size = sizeof info;
  // Fails on a socket file's connection (ipc://): not known then.
  if (getsockopt(tcp_socket_, IPPROTO_TCP, TCP_INFO, &info, &size) != 0) return std::nullopt;
  return std::chrono::milliseconds(info.tcpi_last_data_recv);
}

Received Connection::checked(Received message) const {
  const auto which = message.envelope().which();
  // The handshake's answers come before the peer's role matters.
  if (which != wire::Envelope::WELCOME && which != wire::Envelope::REFUSE)
    wire::check_direction(which, from_server_);
  return message;
}

std::optional<Received> Connection::receive(std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{dealer_.handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
  std::vector<zmq::message_t> parts;
  if (!zmq::recv_multipart(dealer_, std::back_inserter(parts))) return std::nullopt;
  return checked(Received(std::move(parts), 0));
}

}  // namespace tessera::transport
