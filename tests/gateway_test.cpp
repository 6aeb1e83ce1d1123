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

}  // namespace
