// Well-formed messages that ask a real tessera-node for too much, sent by hand (a DEALER speaking the
// protocol, no client library): each is refused at once with a reason naming the limit, the node's memory
// does not grow, and it goes on serving. Also what peers write into the node's log cannot forge a line.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <limits>
#include <random>
#include <zmq_addon.hpp>

#include "nodes/transport.hpp"
#include "support/node_process.hpp"
#include "support/proc_status.hpp"
#include "support/scratch_dir.hpp"
#include "tessera/tessera.hpp"
#include "test_util.hpp"

namespace {

using tessera::testing::NodeProcess;
using tessera::testing::resident_bytes;
using tessera::testing::ScratchDir;
using namespace tessera::transport;
using Clock = std::chrono::steady_clock;

// A node with its own worker and the test plugin's simulations; `scheduler` and `rest` add keys.
std::string node_config(const std::string& scheduler = "", const std::string& rest = "") {
  return "[node]\nname = \"target\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n" +
         scheduler +
         "[worker]\nworkers = 1\nthreads_per_worker = 1\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n" +
         rest;
}

Connection connect_client(const NodeProcess& node, const std::string& name = "hostile") {
  return Connection(ConnectionOptions{.address = node.endpoint(), .name = name});
}

// A process that joins as a worker and keeps heartbeating, but never answers the work it is sent.
class BlackHoleWorker {
 public:
  explicit BlackHoleWorker(ConnectionOptions options) : connection_(std::move(options)) {
    thread_ = std::thread([this] {
      auto next_heartbeat = Clock::now();
      while (!stop_) {
        if (Clock::now() >= next_heartbeat) {
          Outgoing heartbeat;
          heartbeat.envelope().initHeartbeat();
          connection_.send(heartbeat);
          next_heartbeat = Clock::now() + std::chrono::milliseconds(100);
        }
        if (auto message = connection_.receive(std::chrono::milliseconds(20))) {
          if (message->envelope().isSimulate()) swallowed_ += 1;
          if (message->envelope().isShutdown()) shutdowns_ += 1;
          if (message->envelope().isRefuse()) refusals_ += 1;
        }
      }
    });
  }
  ~BlackHoleWorker() {
    stop_ = true;
    thread_.join();
  }
  std::uint64_t swallowed() const { return swallowed_.load(); }
  std::uint64_t shutdowns() const { return shutdowns_.load(); }
  std::uint64_t refusals() const { return refusals_.load(); }

 private:
  Connection connection_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> swallowed_{0}, shutdowns_{0}, refusals_{0};
  std::thread thread_;
};

// How the black hole joins `node`: a worker with 4 threads and a listen address nobody answers at.
ConnectionOptions black_hole_of(const NodeProcess& node) {
  return ConnectionOptions{.address = node.endpoint(),
                           .role = tessera::wire::Role::WORKER,
                           .name = "black-hole",
                           .threads = 4,
                           .listen = "tcp://127.0.0.1:1"};
}

std::uint32_t workers_of(const NodeProcess& node) {
  auto client = connect_client(node, "observer");
  Outgoing status;
  status.envelope().setStatusRequest();
  client.send(status);
  for (int i = 0; i < 20; ++i)
    if (auto answer = client.receive(std::chrono::milliseconds(100)); answer && answer->envelope().isStatus())
      return answer->envelope().getStatus().getWorkers();
  return 0;
}

// Pushes `n` parameter sets to pause_square and waits for the stream to finish; how many results came,
// and whether each id came exactly once with the right value.
std::pair<std::uint64_t, bool> run_stream(tessera::Client& client, int n) {
  auto stream = client.stream("pause_square");
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  bool right = true;
  std::mutex mutex;
  stream.on_result([&](const tessera::StreamRecord& r) {
    std::lock_guard lock(mutex);
    if (r.id >= static_cast<std::uint64_t>(n)) {
      right = false;
      return;
    }
    seen[r.id] += 1;
    const double x = static_cast<double>(r.id);
    // pause_square refuses 13 and squares the rest.
    right = right && (x == 13 ? r.failed : !r.failed && r.value == tessera::Value(x * x));
  });
  for (int i = 0; i < n; ++i) stream.push(double(i));
  stream.close();
  EXPECT_TRUE(stream.wait(Clock::now() + std::chrono::seconds(60))) << "the stream did not finish";
  std::lock_guard lock(mutex);
  std::uint64_t answered = 0;
  for (int count : seen) {
    answered += static_cast<std::uint64_t>(count);
    right = right && count == 1;
  }
  return {answered, right};
}

// Sends `message` and waits (2 s at most) for the first answer of the kind `is`; how long it took.
template <class Is>
std::pair<std::optional<Received>, Clock::duration> ask(Connection& connection, Outgoing& message, Is is) {
  const auto start = Clock::now();
  connection.send(message);
  while (Clock::now() - start < std::chrono::seconds(2)) {
    auto answer = connection.receive(std::chrono::milliseconds(100));
    if (answer && is(answer->envelope())) return {std::move(answer), Clock::now() - start};
  }
  return {std::nullopt, Clock::now() - start};
}

// A refusal is a message, not work: well under this (the target is 10 ms; sanitizer builds and a
// loaded CI machine get slack).
constexpr auto kPromptly = std::chrono::milliseconds(500);
constexpr std::uint64_t kRssSlack = 10u << 20;

TEST(HostilePeer, HugeSubmissionsAreRefusedByOneErrorNamingTheLimit) {
  NodeProcess node(node_config());
  auto client = connect_client(node);
  const auto rss_before = resident_bytes(node.pid());
  for (std::uint32_t slots : {1u << 28, ~0u}) {
    Outgoing submit;
    auto s = submit.envelope().initSubmit();
    s.setSinkId(slots);
    s.setSlots(slots);
    auto [answer, took] = ask(client, submit, [](auto e) { return e.isResults(); });
    ASSERT_TRUE(answer) << slots << " slots: no answer within 2 s";
    EXPECT_LT(took, kPromptly);
    std::cout << slots << " slots refused in "
              << std::chrono::duration_cast<std::chrono::microseconds>(took).count() << " us\n";
    auto results = answer->envelope().getResults();
    EXPECT_EQ(results.getSinkId(), slots);
    EXPECT_EQ(results.getDeliveries().size(), 0u) << "one error, not one per slot";
    EXPECT_NE(std::string(results.getRefused()).find("limits.max_slots_per_submission"), std::string::npos)
        << results.getRefused().cStr();
  }
  EXPECT_LT(resident_bytes(node.pid()), rss_before + kRssSlack);
}

TEST(HostilePeer, ManySlotsOfAnUnknownFunctionAreOneError) {
  NodeProcess node(node_config());
  auto client = connect_client(node);
  const auto rss_before = resident_bytes(node.pid());
  Outgoing submit;
  auto s = submit.envelope().initSubmit();
  s.setSinkId(7);
  s.setSlots(1u << 20);
  auto op = s.initOperations(1)[0];
  op.setId(1);
  op.setFunction("no_such_function");
  op.setSize(1u << 20);
  auto [answer, took] = ask(client, submit, [](auto e) { return e.isResults(); });
  ASSERT_TRUE(answer);
  EXPECT_LT(took, kPromptly);
  auto results = answer->envelope().getResults();
  EXPECT_EQ(results.getDeliveries().size(), 0u);
  EXPECT_NE(std::string(results.getRefused()).find("no_such_function"), std::string::npos)
      << results.getRefused().cStr();
  EXPECT_LT(resident_bytes(node.pid()), rss_before + kRssSlack);
}

TEST(HostilePeer, HugeHistogramsAreRefusedAndOtherRequestsGoOn) {
  NodeProcess node(node_config());
  auto client = connect_client(node);
  const auto rss_before = resident_bytes(node.pid());
  Outgoing query;
  auto q = query.envelope().initResultsQuery();
  q.setRequestId(3);
  q.setStreamId(1);
  q.setFormat("summary");
  q.setBins(1u << 27);
  auto [answer, took] = ask(client, query, [](auto e) { return e.isResultsAnswer(); });
  ASSERT_TRUE(answer);
  EXPECT_LT(took, kPromptly);
  EXPECT_NE(std::string(answer->envelope().getResultsAnswer().getError()).find("limits.max_histogram_bins"),
            std::string::npos);
  EXPECT_LT(resident_bytes(node.pid()), rss_before + kRssSlack);

  Outgoing status;
  status.envelope().setStatusRequest();
  auto [status_answer, status_took] = ask(client, status, [](auto e) { return e.isStatus(); });
  ASSERT_TRUE(status_answer) << "the node stopped answering after the refusal";
  EXPECT_EQ(std::string(status_answer->envelope().getStatus().getName()), "target");
}

TEST(HostilePeer, CheckpointRequestsPastTheirBoundsAreRefusedByName) {
  NodeProcess node(node_config());
  auto client = connect_client(node);
  const auto refusal = [&](const std::function<void(tessera::wire::CheckpointsRequest::Builder)>& fill) {
    Outgoing request;
    auto r = request.envelope().initCheckpointsRequest();
    r.setRequestId(9);
    fill(r);
    auto [answer, took] = ask(client, request, [](auto e) { return e.isCheckpointsAnswer(); });
    EXPECT_TRUE(answer);
    EXPECT_LT(took, kPromptly);
    return answer ? std::string(answer->envelope().getCheckpointsAnswer().getError()) : std::string();
  };
  EXPECT_NE(refusal([](auto r) {
              r.setDrop(true);
              auto keys = r.initKeys(5000);
              for (unsigned i = 0; i < 5000; ++i) keys.set(i, "0123456789abcdef");
            }).find("5000 keys, over the limit of 4096"),
            std::string::npos);
  EXPECT_NE(refusal([](auto r) { r.setFunction(std::string(1000, 'f')); }).find("over the limit of 256"),
            std::string::npos);
  EXPECT_NE(refusal([](auto r) { r.setAfter("not hex"); }).find("is not hexadecimal"), std::string::npos);
  EXPECT_NE(refusal([](auto r) { r.setDrop(true); }).find("drop needs --all, a function or keys"),
            std::string::npos);

  Outgoing status;
  status.envelope().setStatusRequest();
  auto [status_answer, status_took] = ask(client, status, [](auto e) { return e.isStatus(); });
  ASSERT_TRUE(status_answer) << "the node stopped answering after the refusals";
}

TEST(HostilePeer, WorkersClaimingAbsurdResourcesAreRefusedAtHello) {
  NodeProcess node(node_config());
  for (auto [threads, memory] :
       {std::pair<std::uint32_t, std::uint64_t>{~0u, 0}, {0, 0}, {4, ~std::uint64_t{0}}}) {
    try {
      Connection fake(ConnectionOptions{.address = node.endpoint(),
                                        .role = tessera::wire::Role::WORKER,
                                        .name = "greedy",
                                        .threads = threads,
                                        .memory_limit = memory,
                                        .listen = "tcp://127.0.0.1:1"});
      ADD_FAILURE() << "a worker claiming " << threads << " threads and " << memory << " bytes was welcomed";
    } catch (const ConnectionRefused& e) {
      EXPECT_NE(std::string(e.what()).find("limits.max_worker_"), std::string::npos) << e.what();
    }
  }
  // Nobody joined: the node still has only its own worker.
  auto client = connect_client(node);
  Outgoing status;
  status.envelope().setStatusRequest();
  auto [answer, took] = ask(client, status, [](auto e) { return e.isStatus(); });
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->envelope().getStatus().getWorkers(), 1u);
}

// A raw TCP connection to `port` that speaks ZMTP 3.0 (a DEALER, no security) just far enough to announce
// one message frame of `frame_bytes` and send the first `sent` of them; its descriptor.
int announce_frame(int port, std::uint64_t frame_bytes, std::size_t sent) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return fd;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    close(fd);
    return -1;
  }
  std::string greeting(64, '\0');
  greeting[0] = '\xff';
  greeting[9] = '\x7f';
  greeting[10] = 3;  // ZMTP 3.0
  greeting.replace(12, 4, "NULL");
  std::string ready = "\x05READY\x0bSocket-Type";
  ready += std::string("\0\0\0\x06", 4) + "DEALER";
  const std::string command = std::string("\x04", 1) + static_cast<char>(ready.size()) + ready;
  // A long message frame (flag 0x02) with its 8-byte size, big-endian.
  std::string frame(9, '\0');
  frame[0] = '\x02';
  for (int i = 0; i < 8; ++i)
    frame[1 + static_cast<std::size_t>(i)] = static_cast<char>(frame_bytes >> (56 - 8 * i));
  const std::string bytes = greeting + command + frame + std::string(sent, 'x');
  std::size_t written = 0;
  while (written < bytes.size()) {
    const auto n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) break;
    written += static_cast<std::size_t>(n);
  }
  return fd;
}

int port_of(const NodeProcess& node) {
  return std::stoi(node.endpoint().substr(node.endpoint().rfind(':') + 1));
}

// A frame announcing 1 GiB: ZeroMQ must drop the connection instead of reserving the gigabyte
// (limits.max_message_size).
TEST(HostilePeer, AFrameAnnouncingAGigabyteReservesNothing) {
  NodeProcess node(node_config());
  const auto rss_before = resident_bytes(node.pid());
  for (int attempt = 0; attempt < 8; ++attempt) {
    const int fd = announce_frame(port_of(node), std::uint64_t{1} << 30, 64);
    ASSERT_GE(fd, 0);
    // The node closes the connection (read returns 0 or fails) rather than waiting for the gigabyte.
    char sink[256];
    timeval timeout{2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    ssize_t got = 0;
    do got = read(fd, sink, sizeof sink);
    while (got > 0);
    const bool timed_out = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    close(fd);
    EXPECT_FALSE(timed_out) << "the node kept a connection that announced a 1 GiB frame";
  }
  EXPECT_LT(resident_bytes(node.pid()), rss_before + kRssSlack);
  auto client = connect_client(node);  // still serving
  SUCCEED();
}

// 20 connections each announcing the largest frame the node takes and sending 1 MiB of it: what ZeroMQ
// reserves for them is bounded by the (64 MiB) frame limit, not by what a chunk may weigh.
TEST(HostilePeer, ConnectionsAnnouncingLargeFramesReserveAtMostTheFrameLimitEach) {
  NodeProcess node(node_config());
  auto client = connect_client(node);
  const std::uint64_t size_before = tessera::testing::proc_status_bytes(node.pid(), "VmSize:");
  std::vector<int> connections;
  for (int i = 0; i < 20; ++i) {
    const int fd = announce_frame(port_of(node), kDefaultMaxFrameBytes - 1, 1u << 20);
    ASSERT_GE(fd, 0);
    connections.push_back(fd);
  }
  // ZeroMQ reserves each frame as it reads its announcement (most of the 20 within a few seconds).
  const auto grown = [&] {
    const std::uint64_t now = tessera::testing::proc_status_bytes(node.pid(), "VmSize:");
    return now > size_before ? now - size_before : 0;
  };
  EXPECT_TRUE(tessera::testing::eventually([&] { return grown() >= 10 * kDefaultMaxFrameBytes; },
                                           std::chrono::seconds(10)));
  const std::uint64_t grew = grown();
  std::cout << "20 connections announcing " << (kDefaultMaxFrameBytes >> 20) << " MiB frames: virtual size "
            << (size_before >> 20) << " MiB, grew " << (grew >> 20) << " MiB\n";
  // Issue 46 measured 5.1 GB with frames of 256 MiB.
  EXPECT_LE(grew, std::uint64_t{1536} << 20);
  Outgoing status;
  status.envelope().setStatusRequest();
  auto [answer, took] = ask(client, status, [](auto e) { return e.isStatus(); });
  EXPECT_TRUE(answer) << "the node stopped answering";
  for (const int fd : connections) close(fd);
}

TEST(HostilePeer, NamesCannotForgeLogLines) {
  NodeProcess node(node_config(), /*capture_log=*/true);
  const std::string forged = "x\n[tessera] worker 'evil' joined as worker 99 (8 threads)\x1b[2J\xff";
  {
    auto client = connect_client(node, forged);
    Outgoing status;
    status.envelope().setStatusRequest();
    ASSERT_TRUE(ask(client, status, [](auto e) { return e.isStatus(); }).first);
  }
  const std::string log = node.log();
  EXPECT_EQ(log.find("\n[tessera] worker 'evil'"), std::string::npos) << log;
  EXPECT_EQ(log.find('\x1b'), std::string::npos);
  EXPECT_EQ(log.find('\xff'), std::string::npos);
  EXPECT_NE(log.find("x\\x0a[tessera] worker 'evil'"), std::string::npos) << log;
}

TEST(HostilePeer, AWorkerThatBlackHolesItsWorkIsRoutedAroundWithinTheProgressTimeout) {
  NodeProcess node(node_config("progress_timeout = 0.5\n"), /*capture_log=*/true);
  BlackHoleWorker hole(black_hole_of(node));
  ASSERT_TRUE(tessera::testing::eventually([&] { return workers_of(node) == 2; }, std::chrono::seconds(10)));
  tessera::Client client(node.endpoint());
  const auto start = Clock::now();
  const auto [answered, right] = run_stream(client, 400);
  EXPECT_EQ(answered, 400u);
  EXPECT_TRUE(right) << "a result came twice, or was wrong";
  EXPECT_GT(hole.swallowed(), 0u) << "the black hole was sent nothing: the test proves nothing";
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(20));
  EXPECT_NE(node.log().find("progress"), std::string::npos) << node.log();
}

// The stalled black hole is sent SHUTDOWN, ignores it and goes on heartbeating: the gateway forgets its
// connection, so that its next message is refused (hello first) instead of holding a worker's place for
// ever.
TEST(HostilePeer, AStalledWorkerThatIgnoresShutdownIsForgotten) {
  NodeProcess node(node_config("progress_timeout = 0.5\n"), /*capture_log=*/true);
  BlackHoleWorker hole(black_hole_of(node));
  ASSERT_TRUE(tessera::testing::eventually([&] { return workers_of(node) == 2; }, std::chrono::seconds(10)));
  tessera::Client client(node.endpoint());
  const auto [answered, right] = run_stream(client, 400);
  EXPECT_EQ(answered, 400u);
  EXPECT_TRUE(right);
  ASSERT_GT(hole.swallowed(), 0u) << "the black hole was sent nothing: the test proves nothing";
  ASSERT_TRUE(tessera::testing::eventually([&] { return hole.shutdowns() > 0; }, std::chrono::seconds(10)))
      << node.log();
  EXPECT_TRUE(tessera::testing::eventually([&] { return hole.refusals() > 0; }, std::chrono::seconds(10)))
      << node.log();
  EXPECT_NE(node.log().find("'black-hole' (worker 1) was sent SHUTDOWN: its connection is forgotten"),
            std::string::npos)
      << node.log();
  EXPECT_EQ(workers_of(node), 1u);
}

// CURVE with authorized keys: a worker with a key of its own making cannot join, so it can neither
// receive parameter sets nor forge their results.
TEST(HostilePeer, AForgerCannotJoinACurveCluster) {
  const auto node_keys = generate_curve_keys();
  const auto client_keys = generate_curve_keys();
  const ScratchDir scratch("tessera-curve");
  const auto& dir = scratch.path();
  std::ofstream(dir / "node.pub") << node_keys.public_key << "\n";
  std::ofstream(dir / "node.key") << node_keys.secret_key << "\n";
  NodeProcess node(node_config("", "[security]\ncurve = true\npublic_key_file = \"" +
                                       (dir / "node.pub").string() + "\"\nsecret_key_file = \"" +
                                       (dir / "node.key").string() + "\"\nauthorized_keys = [\"" +
                                       client_keys.public_key + "\"]\n"));
  EXPECT_THROW(BlackHoleWorker(ConnectionOptions{.address = node.endpoint(),
                                                 .role = tessera::wire::Role::WORKER,
                                                 .name = "forger",
                                                 .threads = 4,
                                                 .listen = "tcp://127.0.0.1:1",
                                                 .curve = generate_curve_keys(),
                                                 .server_public_key = node_keys.public_key,
                                                 .handshake_timeout = std::chrono::milliseconds(1000)}),
               ConnectionRefused);
  tessera::ConnectOptions options;
  options.public_key = client_keys.public_key;
  options.secret_key = client_keys.secret_key;
  options.scheduler_public_key = node_keys.public_key;
  tessera::Client client(node.endpoint(), options);
  const auto [answered, right] = run_stream(client, 200);
  EXPECT_EQ(answered, 200u);
  EXPECT_TRUE(right);
}

}  // namespace

namespace {

// A worker's memory report and its lost-results claims are a peer's words: it speaks for itself only, its
// texts are cut, its numbers made finite, and claims about tasks it does not hold change nothing.
TEST(HostilePeer, AWorkersMemoryReportAndLostResultClaimsAreCheckedNotTrusted) {
  NodeProcess node(node_config());
  Connection fake(ConnectionOptions{.address = node.endpoint(),
                                    .role = tessera::wire::Role::WORKER,
                                    .name = "liar",
                                    .threads = 1,
                                    .memory_limit = 1 << 30,
                                    .listen = "tcp://127.0.0.1:1"});
  ASSERT_TRUE(tessera::testing::eventually([&] { return workers_of(node) == 2; }));
  Outgoing report;
  auto memory = report.envelope().initMemory();
  memory.setWorkerId(0);  // the node's own worker
  memory.setManagedBytes(~std::uint64_t{0});
  memory.setSpillSeconds(std::numeric_limits<double>::quiet_NaN());
  memory.setSpillError(std::string(100000, 'e') + "\n[tessera] forged line");
  fake.send(report);
  Outgoing lost;
  auto inputs = lost.envelope().initResultsLost().initInputs(3);
  inputs[0].setProducerOp(123456);  // no such operation
  inputs[1].setProducerOp(0);
  inputs[1].setProducerIndex(~0u);
  inputs[2].setConsumerSlot(~0u);
  fake.send(lost);
  // The node still serves, with both workers, and its own worker's report is its own.
  EXPECT_EQ(workers_of(node), 2u);
  auto observer = connect_client(node, "observer");
  Outgoing status;
  status.envelope().setStatusRequest();
  bool checked = false;
  ASSERT_TRUE(tessera::testing::eventually([&] {
    auto [answer, took] = ask(observer, status, [](auto e) { return e.isStatus(); });
    if (!answer) return false;
    for (auto m : answer->envelope().getStatus().getMemory()) {
      if (m.getManagedBytes() != ~std::uint64_t{0}) continue;
      // The liar's report, under the liar's own id (1), cut and made finite.
      EXPECT_EQ(m.getWorkerId(), 1u);
      EXPECT_LE(m.getSpillError().size(), 4096u);
      EXPECT_EQ(m.getSpillSeconds(), 0.0);
      checked = true;
    }
    return checked;
  }));
}

// A client that pushes past its stream's max_in_flight is throttled by the scheduler, not trusted: only
// max_in_flight sets are accepted (and acknowledged), the rest refused with an error naming the limit;
// a reattach listing more ids than limits.max_slots_per_client is refused; the node goes on serving.
TEST(HostilePeer, AStreamsMaxInFlightIsEnforcedByTheScheduler) {
  NodeProcess node(
      node_config("", "[limits]\nmax_slots_per_submission = 1000\nmax_slots_per_client = 1000\n"));
  auto client = connect_client(node);
  Outgoing open;
  auto o = open.envelope().initStreamOpen();
  o.setRequestId(1);
  o.setSimulation("pause_square");
  o.setMaxInFlight(10);
  // 200 ms a set: nothing is answered while the test pushes.
  auto config = o.initConfig(1);
  config[0].setKey("pause_us");
  tessera::wire::encode(tessera::to_value(std::int64_t{200000}), config[0].initValue(), open.attachments());
  auto [opened, open_took] = ask(client, open, [](auto e) { return e.isStreamOpened(); });
  ASSERT_TRUE(opened);
  const std::uint64_t stream = opened->envelope().getStreamOpened().getStreamId();
  ASSERT_GT(stream, 0u) << std::string(opened->envelope().getStreamOpened().getError());

  Outgoing push;
  auto p = push.envelope().initStreamPush();
  p.setStreamId(stream);
  p.setFirstId(0);
  auto sets = p.initParameters(500);
  for (unsigned i = 0; i < 500; ++i)
    tessera::wire::encode(tessera::to_value(double(i)), sets[i], push.attachments());
  client.send(push);
  std::optional<std::uint64_t> accepted;
  std::string refusal;
  const auto start = Clock::now();
  while (Clock::now() - start < std::chrono::seconds(5) && (!accepted || refusal.empty())) {
    auto answer = client.receive(std::chrono::milliseconds(100));
    if (!answer) continue;
    if (answer->envelope().isStreamAccepted()) accepted = answer->envelope().getStreamAccepted().getUpTo();
    if (answer->envelope().isError()) refusal = answer->envelope().getError().getReason();
  }
  ASSERT_TRUE(accepted);
  EXPECT_EQ(*accepted, 10u);
  EXPECT_NE(refusal.find("490 parameter sets from id 10 exceed max_in_flight = 10"), std::string::npos)
      << refusal;

  Outgoing attach;
  auto a = attach.envelope().initStreamAttach();
  a.setRequestId(2);
  a.setStreamId(stream);
  a.initUnanswered(5000);
  auto [attached, attach_took] = ask(client, attach, [](auto e) { return e.isStreamOpened(); });
  ASSERT_TRUE(attached);
  EXPECT_LT(attach_took, kPromptly);
  EXPECT_NE(
      std::string(attached->envelope().getStreamOpened().getError()).find("limits.max_slots_per_client"),
      std::string::npos);

  Outgoing status;
  status.envelope().setStatusRequest();
  auto [status_answer, status_took] = ask(client, status, [](auto e) { return e.isStatus(); });
  ASSERT_TRUE(status_answer) << "the node stopped answering";
}

// Cancellations name what is wrong with them; pushes whose priorities or timeouts are not numbers (or
// not as many as their sets) are dropped whole (none of their sets is accepted), and the stream takes
// the next good push.
TEST(HostilePeer, BadCancellationsPrioritiesAndTimeoutsAreRefusedAndTheStreamGoesOn) {
  NodeProcess node(node_config());
  auto client = connect_client(node);
  Outgoing open;
  auto o = open.envelope().initStreamOpen();
  o.setRequestId(1);
  o.setSimulation("pause_square");
  auto [opened, open_took] = ask(client, open, [](auto e) { return e.isStreamOpened(); });
  ASSERT_TRUE(opened);
  const std::uint64_t stream = opened->envelope().getStreamOpened().getStreamId();
  ASSERT_GT(stream, 0u) << std::string(opened->envelope().getStreamOpened().getError());

  const auto cancel = [&](const std::function<void(tessera::wire::StreamCancel::Builder)>& fill) {
    Outgoing request;
    auto c = request.envelope().initStreamCancel();
    c.setRequestId(7);
    c.setStreamId(stream);
    fill(c);
    auto [answer, took] = ask(client, request, [](auto e) { return e.isStreamCancelled(); });
    EXPECT_TRUE(answer);
    EXPECT_LT(took, kPromptly);
    return answer ? std::string(answer->envelope().getStreamCancelled().getError()) : std::string("(none)");
  };
  EXPECT_NE(cancel([](auto c) { c.setStreamId(777); }).find("stream 777 is not running on this node"),
            std::string::npos);
  EXPECT_NE(cancel([](auto) {}).find("selects sets by ids or by a filter; this one gave neither"),
            std::string::npos);
  EXPECT_NE(cancel([](auto c) { c.setWhere("id >= "); }).find("expected a number at position 7"),
            std::string::npos);
  // Many ranges, inverted and overlapping ones among them, are one answer.
  EXPECT_EQ(cancel([](auto c) {
              auto ranges = c.initRanges(100000);
              for (unsigned i = 0; i < 100000; ++i) {
                ranges[i].setFirst(~std::uint64_t{0} - i);
                ranges[i].setLast(i);
              }
            }),
            "");

  const auto push = [&](std::uint64_t first, unsigned n, std::vector<double> priorities,
                        std::vector<double> timeouts = {}) {
    Outgoing message;
    auto p = message.envelope().initStreamPush();
    p.setStreamId(stream);
    p.setFirstId(first);
    auto sets = p.initParameters(n);
    for (unsigned i = 0; i < n; ++i)
      tessera::wire::encode(tessera::to_value(double(i)), sets[i], message.attachments());
    auto list = p.initPriorities(static_cast<unsigned>(priorities.size()));
    for (unsigned i = 0; i < priorities.size(); ++i) list.set(i, priorities[i]);
    auto seconds = p.initTimeouts(static_cast<unsigned>(timeouts.size()));
    for (unsigned i = 0; i < timeouts.size(); ++i) seconds.set(i, timeouts[i]);
    client.send(message);
  };
  push(0, 3, {1, std::numeric_limits<double>::quiet_NaN(), 2});
  push(0, 3, {1, 2});  // a count that does not match
  push(0, 3, {1, -std::numeric_limits<double>::infinity(), 2});
  push(0, 3, {1, 2, 3});
  const auto accepted_up_to = [&](std::uint64_t expected) {
    std::optional<std::uint64_t> accepted;
    const auto start = Clock::now();
    while (Clock::now() - start < std::chrono::seconds(5) && accepted != expected) {
      auto answer = client.receive(std::chrono::milliseconds(100));
      if (answer && answer->envelope().isStreamAccepted())
        accepted = answer->envelope().getStreamAccepted().getUpTo();
    }
    return accepted;
  };
  auto accepted = accepted_up_to(3);
  ASSERT_TRUE(accepted) << "the good push was not accepted";
  EXPECT_EQ(*accepted, 3u);
  push(3, 3, {}, {1, std::numeric_limits<double>::quiet_NaN(), 2});
  push(3, 3, {}, {1, -1, 2});
  push(3, 3, {}, {1, 1e12, 2});
  push(3, 3, {}, {1, 2});
  push(3, 3, {}, {0, 0.5, 1});
  accepted = accepted_up_to(6);
  ASSERT_TRUE(accepted) << "the good push with timeouts was not accepted";
  EXPECT_EQ(*accepted, 6u);
}

// A submission of `tasks` squares of 3, every result watched.
void fill_squares_submission(Outgoing& message, std::uint64_t sink_id, std::uint32_t tasks) {
  auto s = message.envelope().initSubmit();
  s.setSinkId(sink_id);
  s.setSlots(tasks);
  auto op = s.initOperations(1)[0];
  op.setId(sink_id);
  op.setFunction("square");
  op.setSize(tasks);
  tessera::wire::encode(tessera::to_value(std::int64_t{3}),
                        op.initColumns(1)[0].initBroadcast().initLiteral(), message.attachments());
  auto watch = s.initWatches(1)[0];
  watch.setOp(sink_id);
  watch.setCount(tasks);
}

// The templates the flooder mutates: a well-formed message of each kind a client sends (the `i`th of the
// flood: a submission's table id is fresh each time, so that it is work, not a refusal).
std::string flood_message(int i) {
  static const std::vector<std::function<void(Outgoing&, int)>> fills{
      [](Outgoing& m, int i) { fill_squares_submission(m, static_cast<std::uint64_t>(i), 1u << 16); },
      [](Outgoing& m, int) { m.envelope().setStatusRequest(); },
      [](Outgoing& m, int) { m.envelope().initHeartbeat(); },
      [](Outgoing& m, int) {
        auto s = m.envelope().initSubmit();
        s.setSinkId(9);
        s.setSlots(4);
        auto op = s.initOperations(1)[0];
        op.setId(1);
        op.setFunction("square");
        op.setSize(4);
      },
      [](Outgoing& m, int) {
        auto o = m.envelope().initStreamOpen();
        o.setRequestId(1);
        o.setSimulation("pause_square");
        o.setMaxInFlight(64);
      },
      [](Outgoing& m, int) {
        auto p = m.envelope().initStreamPush();
        p.setStreamId(1);
        auto sets = p.initParameters(8);
        for (unsigned i = 0; i < 8; ++i)
          tessera::wire::encode(tessera::to_value(double(i)), sets[i], m.attachments());
      },
      [](Outgoing& m, int) {
        auto q = m.envelope().initResultsQuery();
        q.setRequestId(2);
        q.setStreamId(1);
        q.setFormat("summary");
        q.setBins(10);
      },
      [](Outgoing& m, int) { m.envelope().setWorkersRequest(); },
      [](Outgoing& m, int) {
        auto c = m.envelope().initStreamCancel();
        c.setRequestId(3);
        c.setStreamId(1);
        c.setWhere("id >= 3");
      },
  };
  Outgoing message;
  fills[static_cast<std::size_t>(i) % fills.size()](message, i);
  auto frames = message.frames();
  return frames[0].to_string();
}

// The bound on a status answer during a flood; a sanitized node runs its handlers 5-15 times
// slower (one step of a 65,536-task submission alone can take a second there).
#ifdef TESSERA_SANITIZED
constexpr auto kProbeDeadline = std::chrono::seconds(5);
#else
constexpr auto kProbeDeadline = std::chrono::seconds(1);
#endif

// One accepted peer floods the node with mutated messages (a few bytes of well-formed ones changed at
// random): meanwhile another client's `status`, each over a fresh connection as the CLI makes it, is
// answered within a second every time.
TEST(HostilePeer, AFloodOfMutatedMessagesFromOnePeerLeavesAnothersStatusAnsweredWithinASecond) {
  NodeProcess node(node_config());
  zmq::context_t context(1);
  zmq::socket_t flooder(context, zmq::socket_type::dealer);
  flooder.set(zmq::sockopt::linger, 0);
  flooder.connect(node.endpoint());
  {
    Outgoing hello;
    auto h = hello.envelope().initHello();
    h.setRole(tessera::wire::Role::CLIENT);
    h.setName("flooder");
    auto frames = hello.frames();
    flooder.send(frames[0], zmq::send_flags::none);
    zmq::message_t welcome;
    ASSERT_TRUE(flooder.recv(welcome));
  }
  constexpr int kMessages = 4000;
  std::atomic<int> sent{0};
  std::thread flood([&] {
    std::mt19937_64 random(46);
    for (int i = 0; i < kMessages; ++i) {
      std::string bytes = flood_message(i);
      const int flips = static_cast<int>(random() % 5);  // a fifth go through intact
      for (int f = 0; f < flips; ++f) bytes[8 + random() % (bytes.size() - 8)] = static_cast<char>(random());
      flooder.send(zmq::buffer(bytes), zmq::send_flags::none);
      sent += 1;
      zmq::message_t drained;  // answers, refusals and errors: read so they do not pile up here
      while (flooder.recv(drained, zmq::recv_flags::dontwait)) {
      }
    }
  });
  std::vector<Clock::duration> waits;
  int unanswered = 0;
  while (sent.load() < kMessages || waits.size() + static_cast<std::size_t>(unanswered) < 40) {
    const auto start = Clock::now();
    bool answered = false;
    try {
      Connection probe(ConnectionOptions{
          .address = node.endpoint(), .name = "probe", .handshake_timeout = kProbeDeadline});
      Outgoing status;
      status.envelope().setStatusRequest();
      probe.send(status);
      while (!answered && Clock::now() - start < kProbeDeadline) {
        auto answer = probe.receive(std::chrono::milliseconds(50));
        answered = answer && answer->envelope().isStatus();
      }
    } catch (const ConnectionRefused&) {
    }
    if (answered)
      waits.push_back(Clock::now() - start);
    else
      unanswered += 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a probe's pace, not a wait for a condition
  }
  flood.join();
  const auto slowest = waits.empty() ? Clock::duration{} : *std::max_element(waits.begin(), waits.end());
  std::cout << waits.size() << " of " << waits.size() + unanswered
            << " status probes answered during a flood of " << kMessages
            << " mutated messages, the slowest in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count() << " ms\n";
  EXPECT_EQ(unanswered, 0) << "status probes went unanswered for a second while one peer flooded the node";
  // The flooder is still served too: its next well-formed request (of a kind the flood had none of) is
  // answered.
  Outgoing functions;
  functions.envelope().setFunctionsRequest();
  auto frames = functions.frames();
  flooder.send(frames[0], zmq::send_flags::none);
  bool answered = false;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!answered && Clock::now() < deadline) {
    zmq::pollitem_t item{flooder.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
    std::vector<zmq::message_t> parts;
    if (!zmq::recv_multipart(flooder, std::back_inserter(parts))) continue;
    try {
      Received message(std::move(parts), 0);
      answered = message.envelope().isFunctions();
    } catch (const std::exception&) {
    }
  }
  EXPECT_TRUE(answered) << "the node stopped answering the flooder's own well-formed requests";
}

// Under an address-space cap, clients ask for more work than the node can hold: an allocation that fails
// is refused, or ends the node with a clear error; while it lives, it answers.
TEST(HostilePeer, AFailedAllocationIsRefusedOrEndsTheNodeButNeverHangsIt) {
#ifdef TESSERA_SANITIZED
  GTEST_SKIP() << "under a sanitizer the node's address space is mostly shadow memory: a cap on it tests the "
                  "sanitizer's allocator, not the node";
#endif
  NodeProcess node(node_config("", "[limits]\nmax_slots_per_node = 1073741824\n"), /*capture_log=*/true);
  const std::uint64_t size = tessera::testing::proc_status_bytes(node.pid(), "VmSize:");
  const rlimit cap{size + (16u << 20), size + (16u << 20)};
  ASSERT_EQ(::prlimit(node.pid(), RLIMIT_AS, &cap, nullptr), 0) << std::strerror(errno);
  std::vector<std::unique_ptr<Connection>> clients;
  for (int c = 0; c < 6; ++c) {
    try {
      clients.push_back(std::make_unique<Connection>(ConnectionOptions{
          .address = node.endpoint(), .name = "greedy", .handshake_timeout = std::chrono::seconds(2)}));
    } catch (const ConnectionRefused&) {
      break;  // a node out of memory may refuse, or be gone
    }
    for (std::uint64_t s = 0; s < 4; ++s) {
      Outgoing submission;
      fill_squares_submission(submission, s + 1, 1u << 20);
      clients.back()->send(submission);
    }
  }
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  int status = 0, answered = 0;
  bool exited = false;
  while (Clock::now() < deadline && !(exited = node.exited(&status))) {
    bool alive = false;
    const auto start = Clock::now();
    try {
      Connection probe(ConnectionOptions{
          .address = node.endpoint(), .name = "probe", .handshake_timeout = std::chrono::seconds(5)});
      Outgoing request;
      request.envelope().setStatusRequest();
      probe.send(request);
      while (!alive && Clock::now() - start < std::chrono::seconds(5)) {
        auto answer = probe.receive(std::chrono::milliseconds(100));
        alive = answer && answer->envelope().isStatus();
      }
    } catch (const ConnectionRefused&) {
    }
    if (!alive && node.exited(&status)) {
      exited = true;
      break;
    }
    ASSERT_TRUE(alive) << "the node neither answered a status request within 5 s nor exited; its log:\n"
                       << node.log().substr(0, 4000);
    answered += 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // a probe's pace
  }
  std::cout << "under a cap of " << (cap.rlim_cur >> 20) << " MiB of address space the node "
            << (exited ? "exited (status " + std::to_string(status) + ")" : std::string("stayed up"))
            << ", after " << answered << " status probes answered\n";
  if (exited) {
    std::string log = node.log();
    std::transform(log.begin(), log.end(), log.begin(), [](unsigned char c) { return std::tolower(c); });
    // Ours names where (exit 4); ZeroMQ's own allocation failures abort with "FATAL ERROR: OUT OF MEMORY".
    EXPECT_NE(log.find("out of memory"), std::string::npos)
        << "the node exited without saying it ran out of memory:\n"
        << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    if (WIFEXITED(status)) {
      EXPECT_EQ(WEXITSTATUS(status), 4);
    }
  }
}

// A node that runs no client code (security.allow_client_code off) refuses it by name wherever a submission
// names it: not only as the operation's function, but inside a bag, fused or array task that calls a
// function by a name it is given.
TEST(HostilePeer, ClientCodeNamedInsideAnotherTaskIsRefusedWhenTheNodeRunsNone) {
  NodeProcess node(node_config("", "[security]\nallow_client_code = false\n"));
  auto client = connect_client(node);
  using tessera::Value;
  const std::vector<std::pair<std::string, Value>> attempts{
      {"python:call/0", Value(std::int64_t{1})},
      {"tessera.bag.map", Value(Value::List{Value("python:call/0"), Value(std::int64_t{1})})},
      {"tessera.fused/1",
       Value(Value::List{Value(Value::List{Value("python:call/0")}), Value(std::int64_t{0})})},
      {"tessera.array.block", Value(Value::List{Value("python:class")})},
  };
  std::uint64_t sink = 0;
  for (const auto& [function, literal] : attempts) {
    SCOPED_TRACE(function);
    Outgoing submit;
    auto s = submit.envelope().initSubmit();
    s.setSinkId(++sink);
    s.setSlots(1);
    auto op = s.initOperations(1)[0];
    op.setId(sink);
    op.setFunction(function);
    op.setSize(1);
    tessera::wire::encode(literal, op.initColumns(1)[0].initBroadcast().initLiteral(), submit.attachments());
    auto watch = s.initWatches(1)[0];
    watch.setOp(sink);
    watch.setCount(1);
    auto [answer, took] = ask(client, submit, [](auto e) { return e.isResults(); });
    ASSERT_TRUE(answer);
    const std::string refused = answer->envelope().getResults().getRefused();
    EXPECT_NE(refused.find("security.allow_client_code"), std::string::npos) << refused;
  }
  // A stream may not choose where a program's sets write their files.
  Outgoing open;
  auto o = open.envelope().initStreamOpen();
  o.setRequestId(1);
  o.setSimulation("pause_square");
  auto entry = o.initConfig(1)[0];
  entry.setKey("tessera.runs_dir");
  tessera::wire::encode(Value("/home/someone/else"), entry.initValue(), open.attachments());
  auto [opened, took] = ask(client, open, [](auto e) { return e.isStreamOpened(); });
  ASSERT_TRUE(opened);
  EXPECT_NE(std::string(opened->envelope().getStreamOpened().getError()).find("tessera.runs_dir"),
            std::string::npos);
}

}  // namespace
