// The progress watchdog on a real embedded cluster: a "worker" that registers with the scheduler like
// any other and then swallows every message (a black hole: alive, never answering) is declared stalled
// after scheduler.progress_timeout, once, with a log line naming it; what it held runs again on the real
// worker, and every stream result and every task result arrives exactly once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <numeric>
#include <set>
#include <tessera/tessera.hpp>

#include "actors/glm/messages.hpp"
#include "actors/messages.hpp"
#include "client/local_cluster_access.hpp"
#include "test_util.hpp"

namespace {

using namespace std::chrono_literals;

constexpr auto kProgressTimeout = 300ms;

struct WatchdogSimulation {
  explicit WatchdogSimulation(const tessera::Config&) {}
  double run(double x) { return x * 3; }
};
TESSERA_SIMULATION(WatchdogSimulation, "watchdog_triple");

std::atomic<int> doubled_runs{0};
std::atomic<int> summed_runs{0};

std::int64_t watchdog_double(std::int64_t x) {
  doubled_runs += 1;
  return 2 * x;
}
TESSERA_TASK(watchdog_double);
std::int64_t watchdog_sum(std::int64_t a, std::int64_t b) {
  summed_runs += 1;
  return a + b;
}
TESSERA_TASK(watchdog_sum);

// What the black hole was sent, to show it was given work to sit on.
struct Swallowed {
  std::atomic<int> assignments{0};
  std::atomic<int> simulation_jobs{0};
};

// The worker protocol, every message swallowed (shutdown aside): nothing is ever answered. A CAF 0.17
// handler's result goes back to the sender even for a plain send, and an error there would end the
// scheduler, so each message has a handler of its own and nothing unexpected is answered either.
caf::behavior black_hole(caf::event_based_actor* self, std::shared_ptr<Swallowed> swallowed) {
  using namespace tessera;
  self->set_default_handler([](caf::scheduled_actor*, caf::message_view&) -> caf::result<caf::message> {
    return caf::delegated<caf::message>{};
  });
  return {
      [=](assign_atom, const AssignBatch&) { swallowed->assignments += 1; },
      [=](simulate_atom, const SimulationJob&) { swallowed->simulation_jobs += 1; },
      [](welcome_atom, std::uint32_t) {},
      [](peer_atom, const PeerNotice&) {},
      [](subscribe_atom, const SubscribeBatch&) {},
      [](drop_atom, const SlotBatch&) {},
      [](cancel_slots_atom, const SlotBatch&) {},
      [](steal_atom, const StealRequest&) {},
      [](forget_atom, OpId) {},
      [](simulation_setup_atom, const SimulationSetup&) {},
      [](simulation_end_atom, std::uint64_t) {},
      [](glm_atom, const GlmMessage&) {},
      [](input_atom, const InputBatch&) {},
      [=](shutdown_atom) { self->quit(); },
  };
}

class Watchdog : public ::testing::Test {
 protected:
  static tessera::ClusterOptions options() {
    tessera::ClusterOptions o;
    o.workers = 1;
    o.threads_per_worker = 2;
    o.scheduler.progress_timeout = kProgressTimeout;
    return o;
  }

  // Registers the black hole as the cluster's second worker, claiming as many threads as the real one.
  void add_black_hole() {
    auto& engine = tessera::detail::LocalClusterAccess::engine(cluster);
    hole = engine.system().spawn(black_hole, swallowed);
    caf::scoped_actor self{engine.system()};
    self->request(engine.scheduler(), caf::infinite, tessera::register_atom::value,
                  tessera::WorkerRegistration{.actor = hole, .threads = 2, .name = "black-hole"})
        .receive(
            [&](std::uint32_t id) { hole_id = id; },
            [&](const caf::error& e) { FAIL() << "registration failed: " << engine.system().render(e); });
    ASSERT_EQ(cluster.status().workers, 2u);
  }

  // The scheduler's log line about the black hole, and only one. (How the name is quoted is the
  // escaping helper's business: only the name itself is looked for.)
  void expect_one_stall_logged(const std::string& log) {
    const auto first = log.find("finished nothing for");
    ASSERT_NE(first, std::string::npos) << log;
    EXPECT_EQ(log.find("finished nothing for", first + 1), std::string::npos) << log;
    const auto begin = log.rfind('\n', first) == std::string::npos ? 0 : log.rfind('\n', first) + 1;
    const std::string line = log.substr(begin, log.find('\n', first) - begin);
    EXPECT_EQ(line.rfind("[tessera] scheduler: worker " + std::to_string(hole_id) + " (", 0), 0u) << line;
    EXPECT_NE(line.find("black-hole"), std::string::npos) << line;
    EXPECT_NE(line.find("finished nothing for " + std::to_string(kProgressTimeout.count()) + " ms"),
              std::string::npos)
        << line;
    EXPECT_NE(line.find("declared stalled"), std::string::npos) << line;
    const auto status = cluster.status();
    EXPECT_EQ(status.workers_stalled, 1u);
    EXPECT_EQ(status.workers, 1u);  // the real worker is still there
  }

  void TearDown() override {
    if (hole) caf::anon_send_exit(hole, caf::exit_reason::user_shutdown);  // in case it was never told
  }

  tessera::LocalCluster cluster{options()};
  tessera::Client client{cluster};
  std::shared_ptr<Swallowed> swallowed = std::make_shared<Swallowed>();
  caf::actor hole;
  std::uint32_t hole_id = 0;
};

TEST_F(Watchdog, AStreamFinishesWithEveryResultOnceAfterAWorkerBlackHolesItsJobs) {
  add_black_hole();
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  auto stream = client.stream("watchdog_triple");
  const int n = 200;
  for (int i = 0; i < n; ++i) stream.push(double(i));
  stream.close();
  const bool finished = stream.wait(start + 10s);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(finished) << "the stream stalled; log:\n" << log;
  EXPECT_GT(swallowed->simulation_jobs.load(), 0);
  // It waited for the watchdog, not for ever (a generous bound: the scheduler checks every 75 ms).
  EXPECT_GE(elapsed, kProgressTimeout);
  EXPECT_LT(elapsed, 10 * kProgressTimeout);
  std::set<std::uint64_t> seen;
  for (const auto& r : stream.results()) {
    ASSERT_FALSE(r.failed) << r.error;
    EXPECT_TRUE(seen.insert(r.id).second) << "id " << r.id << " twice";
    EXPECT_DOUBLE_EQ(tessera::result_as<double>(r), 3.0 * double(r.id));
  }
  EXPECT_EQ(seen.size(), std::size_t(n));
  EXPECT_EQ(client.results(stream.id()).count(), std::uint64_t(n));
  expect_one_stall_logged(log);
}

TEST_F(Watchdog, ATaskGraphFinishesWithEveryTaskRunOnceAfterAWorkerBlackHolesItsTasks) {
  add_black_hole();
  doubled_runs = 0;
  summed_runs = 0;
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::int64_t> inputs(40);
  std::iota(inputs.begin(), inputs.end(), 0);
  auto doubled = client.map(watchdog_double, inputs);
  auto summed = client.map(watchdog_sum, doubled, inputs);
  const bool finished = tessera::testing::eventually(
      [&] {
        return std::all_of(summed.begin(), summed.end(),
                           [](const auto& f) { return f.status() != tessera::TaskState::waiting; });
      },
      10s);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(finished) << "the graph stalled; log:\n" << log;
  EXPECT_GT(swallowed->assignments.load(), 0);
  EXPECT_GE(elapsed, kProgressTimeout);
  EXPECT_LT(elapsed, 10 * kProgressTimeout);
  const auto values = client.gather(summed);
  for (std::size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(values[i], 3 * inputs[i]);
  // The black hole ran nothing, and nothing it held had finished: each task ran once, on the real worker.
  EXPECT_EQ(doubled_runs.load(), 40);
  EXPECT_EQ(summed_runs.load(), 40);
  expect_one_stall_logged(log);
  // The cluster goes on with its real worker.
  EXPECT_EQ(client.submit(watchdog_sum, std::int64_t{40}, std::int64_t{2}).result(), 42);
}

}  // namespace
