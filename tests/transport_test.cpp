// The ZeroMQ transport over real TCP sockets on 127.0.0.1 (and an ipc:// socket file): handshake, messages
// both ways with large payloads as their own frames, refusal of another protocol version on both sides,
// hostile input dropped while others are served, and CURVE authentication that refuses (and logs) unknown
// keys.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <zmq_addon.hpp>

#include "nodes/transport.hpp"
#include "test_util.hpp"

namespace {

namespace transport = tessera::transport;
using tessera::Value;
using tessera::testing::eventually;

// A server that answers every value with the same value (and counts what it got), logging to memory.
struct EchoServer {
  std::mutex mutex;
  std::vector<std::string> log;
  std::atomic<int> received{0};
  std::unique_ptr<transport::Server> server;

  explicit EchoServer(transport::ServerOptions options = {}) {
    options.log = [this](const std::string& line) {
      std::lock_guard lock(mutex);
      log.push_back(line);
    };
    server = std::make_unique<transport::Server>(
        std::move(options),
        [this](transport::Server& server, const transport::PeerInfo& peer, transport::Received& message) {
          auto envelope = message.envelope();
          if (!envelope.isValue()) return;
          Value v = tessera::wire::decode(envelope.getValue(), message.frames());
          ++received;
          transport::Outgoing answer;
          tessera::wire::encode(v, answer.envelope().initValue(), answer.attachments());
          server.send(peer.id, answer);
        });
  }
  std::size_t lines() {
    std::lock_guard lock(mutex);
    return log.size();
  }
  bool logged(const std::string& text) {
    std::lock_guard lock(mutex);
    for (const auto& line : log)
      if (line.find(text) != std::string::npos) return true;
    return false;
  }
};

Value echo(transport::Connection& connection, const Value& v) {
  transport::Outgoing message;
  tessera::wire::encode(v, message.envelope().initValue(), message.attachments());
  connection.send(message);
  auto answer = connection.receive(std::chrono::seconds(10));
  if (!answer) throw std::runtime_error("no echo");
  return tessera::wire::decode(answer->envelope().getValue(), answer->frames());
}

transport::ConnectionOptions to(const EchoServer& s) {
  transport::ConnectionOptions options;
  options.address = s.server->endpoint();
  options.handshake_timeout = std::chrono::milliseconds(1500);
  return options;
}

TEST(Transport, HandshakeAndMessagesBothWays) {
  EchoServer s;
  EXPECT_EQ(s.server->endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << s.server->endpoint();
  transport::Connection c(to(s));
  EXPECT_EQ(c.peer_number(), 1u);
  EXPECT_EQ(echo(c, Value(std::int64_t{42})), Value(std::int64_t{42}));
  Value big(std::vector<double>(1 << 20, 0.5));  // 8 MiB: travels as its own frame
  EXPECT_EQ(echo(c, big), big);
  EXPECT_TRUE(eventually([&] { return s.logged("client 'client' connected as peer 1"); }));
}

// A client judges a scheduler by bytes arriving, since a slow link delays whole messages: the connection
// reads the kernel's time since data last came on its TCP socket (found through ZeroMQ's connect events,
// forgotten on its disconnect event); over a socket file it is not known.
TEST(Transport, AConnectionKnowsWhenBytesLastArrivedOnItsTcpSocket) {
  EchoServer s;
  transport::Connection c(to(s));
  EXPECT_EQ(echo(c, Value(std::int64_t{7})), Value(std::int64_t{7}));
  const auto quiet = c.since_bytes_arrived();
  ASSERT_TRUE(quiet.has_value());
  EXPECT_LT(*quiet, std::chrono::seconds(10));  // the echo came just now
  s.server.reset();
  EXPECT_TRUE(eventually([&] { return !c.since_bytes_arrived().has_value(); }))
      << "the connection still reads the socket ZeroMQ closed";

  transport::ServerOptions options;
  options.listen = "ipc://*";
  EchoServer local(std::move(options));
  transport::Connection over_a_file(to(local));
  EXPECT_EQ(echo(over_a_file, Value(std::int64_t{8})), Value(std::int64_t{8}));
  EXPECT_FALSE(over_a_file.since_bytes_arrived().has_value());
}

// A received chunk of 64 KiB or more keeps the ZeroMQ frame it arrived in as its storage (no copy); it
// outlives the message it came in (`echo` returns after the answer is gone), and the echo server sends an
// adopted chunk on again. Smaller ones are copied out.
// "ipc://*" (a same-host cluster's worker.listen): the socket file lies in a directory of its own under the
// temporary directory (not the current one, where ZeroMQ's own wildcard falls back), its address is
// absolute so that a peer started anywhere can dial it, and the directory goes when the server stops.
TEST(Transport, IpcWildcardListensInAPrivateTemporaryDirectoryRemovedOnStop) {
  std::filesystem::path directory;
  {
    transport::ServerOptions options;
    options.listen = "ipc://*";
    EchoServer s(std::move(options));
    const std::string endpoint = s.server->endpoint();
    ASSERT_EQ(endpoint.rfind("ipc:///", 0), 0u) << endpoint;
    const std::filesystem::path socket = endpoint.substr(6);
    directory = socket.parent_path();
    EXPECT_EQ(directory.parent_path(), std::filesystem::temp_directory_path()) << endpoint;
    EXPECT_EQ(directory.filename().string().rfind("tessera-ipc-", 0), 0u) << endpoint;
    EXPECT_TRUE(std::filesystem::is_socket(socket)) << endpoint;
    transport::Connection c(to(s));
    Value big(std::vector<double>(1 << 20, 0.25));  // 8 MiB, as a chunk crossing between workers
    EXPECT_EQ(echo(c, big), big);
  }
  EXPECT_FALSE(std::filesystem::exists(directory)) << directory;
}

// local_ipc (a worker's peer server, worker.same_host_ipc): the TCP endpoint and, beside it, a socket file
// in a private directory for peers on this host; both serve, and the directory goes when the server stops.
TEST(Transport, LocalIpcAddsASocketFileBesideTheTcpEndpoint) {
  std::filesystem::path directory;
  {
    transport::ServerOptions options;
    options.local_ipc = true;
    EchoServer s(std::move(options));
    ASSERT_EQ(s.server->endpoint().rfind("tcp://127.0.0.1:", 0), 0u) << s.server->endpoint();
    const std::string local = s.server->local_endpoint();
    ASSERT_EQ(local.rfind("ipc:///", 0), 0u) << local;
    directory = std::filesystem::path(local.substr(6)).parent_path();
    EXPECT_EQ(directory.filename().string().rfind("tessera-ipc-", 0), 0u) << local;
    EXPECT_EQ(std::filesystem::status(directory).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
    for (const auto& address : {s.server->endpoint(), local}) {
      auto options = to(s);
      options.address = address;
      transport::Connection c(options);
      Value big(std::vector<double>(1 << 20, 0.5));
      EXPECT_EQ(echo(c, big), big) << address;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(directory)) << directory;
  transport::ServerOptions ipc_only;
  ipc_only.listen = "ipc://*";
  ipc_only.local_ipc = true;  // nothing more to add
  EchoServer s(std::move(ipc_only));
  EXPECT_TRUE(s.server->local_endpoint().empty()) << s.server->local_endpoint();
}

// What a worker's hello claims about its socket file is checked: an address that is not ipc://, or one
// too long to be a path, is refused naming what was wrong.
TEST(Transport, AHelloWithABadLocalListenIsRefused) {
  EchoServer s;
  auto options = to(s);
  options.role = tessera::wire::Role::WORKER;
  options.local_listen = "tcp://10.0.0.1:1";
  try {
    transport::Connection c(options);
    FAIL() << "accepted";
  } catch (const transport::ConnectionRefused& e) {
    EXPECT_NE(std::string(e.what()).find("localListen must be an ipc:// endpoint"), std::string::npos)
        << e.what();
  }
  options.local_listen = "ipc:///" + std::string(2000, 'x');
  try {
    transport::Connection c(options);
    FAIL() << "accepted";
  } catch (const transport::ConnectionRefused& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the limit of 1024 bytes"), std::string::npos) << e.what();
  }
  options.local_listen.clear();
  transport::Connection fine(options);  // the server is still there
}

TEST(Transport, LargeReceivedChunksAdoptTheirFrameAndOutliveTheMessage) {
  namespace backends = tessera::backends;
  EchoServer s;
  transport::Connection c(to(s));
  const Eigen::MatrixXd big = Eigen::MatrixXd::Random(1024, 1024);  // 8 MiB
  const auto back = echo(c, Value(backends::Chunk::dense<double>(big))).as_chunk();
  EXPECT_TRUE(back->adopted());
  EXPECT_EQ(back->describe(), "cpu float64 1024x1024");
  EXPECT_EQ(back->dense<double>(), big);
  const Eigen::MatrixXf big32 = Eigen::MatrixXf::Random(300, 100);  // 117 KiB
  const auto back32 = echo(c, Value(backends::Chunk::dense<float>(big32))).as_chunk();
  EXPECT_TRUE(back32->adopted());
  EXPECT_EQ(back32->dense<float>(), big32);
  const Eigen::MatrixXd small = Eigen::MatrixXd::Random(30, 20);
  const auto back_small = echo(c, Value(backends::Chunk::dense<double>(small))).as_chunk();
  EXPECT_FALSE(back_small->adopted());
  EXPECT_EQ(back_small->dense<double>(), small);
}

// An attachment larger than a frame may be travels in pieces and arrives whole: a chunk of 40 MiB through
// sockets that take frames of 17 MiB at most, both ways, and a value cut into 1,000-byte pieces read back.
TEST(Transport, AnAttachmentLargerThanAFrameTravelsInPiecesAndArrivesWhole) {
  namespace backends = tessera::backends;
  transport::ServerOptions options;
  options.max_message_bytes = transport::kAttachmentPieceBytes + (1u << 20);
  EchoServer s(options);
  auto connect = to(s);
  connect.max_message_bytes = options.max_message_bytes;
  transport::Connection c(connect);
  const Eigen::MatrixXd big = Eigen::MatrixXd::Random(2560, 2048);  // 40 MiB
  const auto back = echo(c, Value(backends::Chunk::dense<double>(big))).as_chunk();
  EXPECT_EQ(back->dense<double>(), big);
  EXPECT_EQ(s.received.load(), 1);

  std::vector<double> doubles(10000);
  for (std::size_t i = 0; i < doubles.size(); ++i) doubles[i] = double(i) / 7;
  transport::Outgoing message;
  tessera::wire::encode(Value(doubles), message.envelope().initValue(), message.attachments());
  auto frames = message.frames(1000);
  EXPECT_EQ(frames.size(), 1u + 80u);  // the header, then 80,000 bytes in pieces of 1,000
  transport::Received received(std::move(frames), 0);
  EXPECT_EQ(tessera::wire::decode(received.envelope().getValue(), received.frames()), Value(doubles));

  // A header that announces other pieces than the message has is refused.
  transport::Outgoing lying;
  tessera::wire::encode(Value(doubles), lying.envelope().initValue(), lying.attachments());
  auto pieces = lying.frames(1000);
  pieces.pop_back();
  EXPECT_THROW(transport::Received(std::move(pieces), 0), tessera::wire::WireError);
}

TEST(Transport, AnotherProtocolVersionIsRefusedOnBothSides) {
  EchoServer s;
  auto options = to(s);
  options.protocol_version = 99;
  try {
    transport::Connection c(options);
    FAIL() << "connected";
  } catch (const transport::ConnectionRefused& e) {
    EXPECT_NE(
        std::string(e.what()).find("protocol version mismatch: the peer speaks version 99, this node speaks "
                                   "version " +
                                   std::to_string(transport::kProtocolVersion)),
        std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(eventually([&] { return s.logged("refused peer") && s.logged("protocol version mismatch"); }));
}

TEST(Transport, HostileInputIsDroppedWhileOthersAreServed) {
  EchoServer s;
  transport::Connection good(to(s));
  zmq::context_t context;
  zmq::socket_t raw(context, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(s.server->endpoint());
  // A well-formed message of the wrong kind before hello.
  transport::Outgoing early;
  early.envelope().initHeartbeat();
  auto frames = early.frames();
  raw.send(frames[0], zmq::send_flags::none);
  EXPECT_TRUE(eventually([&] { return s.logged("the first message must be hello, got heartbeat"); }));
  const std::size_t lines_before = s.lines();
  std::mt19937_64 rng{3};
  for (int i = 0; i < 200; ++i) {
    std::string junk(rng() % 100, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    raw.send(zmq::buffer(junk), zmq::send_flags::none);
  }
  // A truncated envelope.
  transport::Outgoing value;
  tessera::wire::encode(Value(std::string(1000, 'x')), value.envelope().initValue(), value.attachments());
  auto value_frames = value.frames();
  raw.send(zmq::buffer(value_frames[0].data(), value_frames[0].size() / 2 / 8 * 8), zmq::send_flags::none);
  EXPECT_TRUE(eventually([&] { return s.server->dropped() >= 150; })) << s.server->dropped();
  // A flood is not a line a message: about 20 a second, then a count of those left out.
  EXPECT_LT(s.lines() - lines_before, 100u);
  EXPECT_EQ(echo(good, Value("still served")), Value("still served"));
  transport::Connection late(to(s));
  EXPECT_EQ(echo(late, Value(true)), Value(true));
}

TEST(Transport, CurveAcceptsAuthorizedKeysAndRefusesOthers) {
  const auto server_keys = transport::generate_curve_keys();
  const auto good_keys = transport::generate_curve_keys();
  const auto bad_keys = transport::generate_curve_keys();
  EXPECT_EQ(server_keys.public_key.size(), 40u);
  transport::ServerOptions options;
  options.curve = server_keys;
  options.authorized_keys = {good_keys.public_key};
  EchoServer s(options);

  auto good = to(s);
  good.curve = good_keys;
  good.server_public_key = server_keys.public_key;
  transport::Connection c(good);
  EXPECT_EQ(echo(c, Value(2.5)), Value(2.5));

  auto bad = good;
  bad.curve = bad_keys;
  EXPECT_THROW(transport::Connection{bad}, transport::ConnectionRefused);
  EXPECT_TRUE(
      eventually([&] { return s.logged("public key " + bad_keys.public_key + " is not authorized"); }));

  auto plain = to(s);  // no keys at all
  EXPECT_THROW(transport::Connection{plain}, transport::ConnectionRefused);
  EXPECT_EQ(echo(c, Value(std::int64_t{7})), Value(std::int64_t{7}));  // the good one is unaffected
}

}  // namespace
