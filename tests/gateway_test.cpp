// The scheduler's gateway in this process, with the real scheduler actor, over real sockets: what one
// peer does must not hold up the gateway's I/O thread for the others.
#include <gtest/gtest.h>

#include <atomic>
#include <caf/all.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "actors/scheduler_actor.hpp"
#include "nodes/scheduler_gateway.hpp"
#include "nodes/transport.hpp"
#include "test_util.hpp"

namespace {

using namespace tessera;
using tessera::testing::eventually;
using Clock = std::chrono::steady_clock;

struct Log {
  std::mutex mutex;
  std::vector<std::string> lines;

  transport::LogFunction writer() {
    return [this](const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  bool has(const std::string& text) {
    std::lock_guard lock(mutex);
    for (const auto& line : lines)
      if (line.find(text) != std::string::npos) return true;
    return false;
  }
};

caf::actor_system_config& one_actor_thread(caf::actor_system_config& config) {
  config.set("scheduler.max-threads", 1);
  config.set("logger.file-verbosity", caf::atom("quiet"));
  return config;
}

// A scheduler that cannot answer for a while (its only actor thread is held, as by a long step): a worker
// saying hello then must not stop the gateway from welcoming the next peer; it joins once the scheduler
// gets to it.
TEST(Gateway, AWorkerJoiningWhileTheSchedulerIsBusyHoldsUpNoOtherPeer) {
  caf::actor_system_config config;
  caf::actor_system system{one_actor_thread(config)};
  caf::actor scheduler = spawn_scheduler(system);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> holding{false};
  // Its state travels as spawn arguments: CAF 0.17 dereferences a null argument tuple when an actor
  // function is spawned without any.
  auto holder = system.spawn(
      [](caf::event_based_actor*, std::shared_future<void> released,
         std::atomic<bool>* holding) -> caf::behavior {
        return {[released, holding](int) {
          *holding = true;
          released.wait();
        }};
      },
      released, &holding);
  caf::anon_send(holder, 1);
  ASSERT_TRUE(eventually([&] { return holding.load(); }));

  Log log;
  transport::ServerOptions options;
  options.log = log.writer();
  {
    SchedulerGateway gateway(scheduler, {}, options);
    transport::Connection worker(transport::ConnectionOptions{.address = gateway.endpoint(),
                                                              .role = wire::Role::WORKER,
                                                              .name = "joining",
                                                              .threads = 2,
                                                              .listen = "tcp://127.0.0.1:1"});
    const auto start = Clock::now();
    EXPECT_NO_THROW(transport::Connection(transport::ConnectionOptions{
        .address = gateway.endpoint(), .name = "next", .handshake_timeout = std::chrono::seconds(2)}))
        << "the gateway did not welcome a client while a worker's registration waited on the scheduler";
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(1));
    EXPECT_FALSE(log.has("joined as worker"));

    release.set_value();
    bool welcomed = false;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!welcomed && Clock::now() < deadline)
      if (auto message = worker.receive(std::chrono::milliseconds(100)))
        welcomed = message->envelope().isWorkerWelcome();
    EXPECT_TRUE(welcomed) << "the worker was never registered once the scheduler was free";
    EXPECT_TRUE(eventually([&] { return log.has("worker 'joining' joined as worker 0 (2 threads"); }));
  }
  caf::anon_send_exit(holder, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
}

// A client that reconnects to the same scheduler presents the session token it was welcomed with: the new
// connection takes the session over (its tables stay, with how many results were sent of each), a table
// sent again replaces the one held, and the old connection is forgotten. An unknown token starts a new
// session; an oversized one is refused by name.
TEST(Gateway, AClientReconnectingWithItsSessionTokenTakesItsTablesOver) {
  caf::actor_system_config config;
  caf::actor_system system{config};
  caf::actor scheduler = spawn_scheduler(system);
  Log log;
  transport::ServerOptions options;
  options.log = log.writer();
  {
    SchedulerGateway gateway(scheduler, {}, options);
    const auto connect = [&](std::string resume) {
      return std::make_unique<transport::Connection>(transport::ConnectionOptions{
          .address = gateway.endpoint(), .name = "resumer", .resume = std::move(resume)});
    };
    const auto submit = [](transport::Connection& to, std::uint64_t table, bool again) {
      transport::Outgoing message;
      auto out = message.envelope().initSubmit();
      out.setSinkId(table);
      out.setSlots(3);  // no operation fills them: the table stays held
      out.setAgain(again);
      ASSERT_TRUE(to.send(message));
    };
    // Waits for the answer to a status request, which the gateway handles after what was sent before it;
    // returns the refusals of tables that came first.
    const auto refusals_before_status = [](transport::Connection& on) {
      transport::Outgoing ask;
      ask.envelope().setStatusRequest();
      EXPECT_TRUE(on.send(ask));
      std::vector<std::string> refused;
      const auto deadline = Clock::now() + std::chrono::seconds(20);
      while (Clock::now() < deadline) {
        auto message = on.receive(std::chrono::milliseconds(100));
        if (!message) continue;
        auto envelope = message->envelope();
        if (envelope.isStatus()) return refused;
        if (envelope.isResults()) refused.push_back(envelope.getResults().getRefused());
      }
      ADD_FAILURE() << "no status answer within 20 s";
      return refused;
    };

    auto first = connect("");
    const std::string token = first->session();
    ASSERT_EQ(token.size(), 16u);
    EXPECT_FALSE(first->resumed());
    submit(*first, 7, false);
    EXPECT_TRUE(refusals_before_status(*first).empty());

    auto second = connect(token);
    EXPECT_TRUE(second->resumed());
    EXPECT_EQ(second->session(), token);
    ASSERT_EQ(second->delivered().size(), 1u);
    EXPECT_EQ(second->delivered().at(7), 0u);  // nothing was sent of table 7
    EXPECT_TRUE(eventually(
        [&] { return log.has("client 'resumer' reconnected and resumed its session: 1 result tables"); }));
    EXPECT_EQ(gateway.clients(), 1u) << "the old connection still counts as a client";

    // The session holds table 7: the same id again is refused, unless sent again as its replacement.
    submit(*second, 7, false);
    auto refused = refusals_before_status(*second);
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_NE(refused[0].find("result table id reused"), std::string::npos) << refused[0];
    submit(*second, 7, true);
    EXPECT_TRUE(refusals_before_status(*second).empty());

    // The old connection was forgotten: it must say hello again.
    transport::Outgoing beat;
    beat.envelope().initHeartbeat();
    ASSERT_TRUE(first->send(beat));
    bool told = false;
    const auto deadline = Clock::now() + std::chrono::seconds(20);
    while (!told && Clock::now() < deadline)
      if (auto message = first->receive(std::chrono::milliseconds(100)))
        told = message->envelope().isRefuse() &&
               std::string(message->envelope().getRefuse().getReason()).find("must be hello") !=
                   std::string::npos;
    EXPECT_TRUE(told) << "the connection whose session moved was not forgotten";

    auto stranger = connect(std::string(16, 'x'));
    EXPECT_FALSE(stranger->resumed());
    EXPECT_NE(stranger->session(), token);
    EXPECT_TRUE(stranger->delivered().empty());
    EXPECT_TRUE(eventually([&] { return log.has("asked to resume a session this node does not hold"); }));
    try {
      connect(std::string(65, 'x'));
      ADD_FAILURE() << "a 65-byte session token was accepted";
    } catch (const transport::ConnectionRefused& e) {
      EXPECT_NE(std::string(e.what()).find("a session token (resume) of 65 bytes exceeds the limit of 64"),
                std::string::npos)
          << e.what();
    }
  }
  caf::anon_send_exit(scheduler, caf::exit_reason::user_shutdown);
}

}  // namespace
