// Streams of parameter sets on an embedded cluster: simulation actors built once and kept between
// parameter sets, credit-based flow control, results in completion order through the iterator or a
// callback, each stored once in RocksDB and queryable while the stream runs and after a restart,
// errors stored per id while the stream goes on, and bad input refused by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <tessera/tessera.hpp>
#include <thread>

#include "actors/messages.hpp"
#include "client/local_cluster_access.hpp"
#include "test_util.hpp"

namespace {

std::atomic<int> constructions{0};

// Remembers how many parameter sets it ran: state lives between parameter sets.
struct CountingSimulation {
  explicit CountingSimulation(const tessera::Config& config) : offset(config.get<double>("offset", 0.0)) {
    constructions += 1;
  }
  std::vector<double> run(const std::vector<double>& p) {
    runs += 1;
    return {p[0] * 2 + offset, static_cast<double>(runs)};
  }
  static constexpr std::size_t arity = 2;
  double offset;
  std::int64_t runs = 0;
};
TESSERA_SIMULATION(CountingSimulation, "counting");

struct SlowSimulation {
  explicit SlowSimulation(const tessera::Config&) {}
  double run(double x) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return x;
  }
};
TESSERA_SIMULATION(SlowSimulation, "slow");

struct PickySimulation {
  explicit PickySimulation(const tessera::Config&) {}
  double run(double x) {
    if (x == 13) throw std::runtime_error("13 is unlucky");
    return x + 1;
  }
};
TESSERA_SIMULATION(PickySimulation, "picky");

tessera::ClusterOptions stored_in(const std::filesystem::path& dir) {
  tessera::ClusterOptions options;
  options.workers = 1;
  options.threads_per_worker = 2;
  options.data_dir = dir.string();
  return options;
}

std::filesystem::path temp_dir(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("tessera-stream-test-" + std::to_string(getpid()) + "-" + name);
}

TEST(Stream, EveryParameterSetIsAnsweredOnceAndStored) {
  constructions = 0;
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.config.set("offset", tessera::to_value(0.5));
  auto stream = client.stream("counting", std::move(options));
  const int n = 10000;
  for (int i = 0; i < n; ++i) EXPECT_EQ(stream.push(std::vector<double>{double(i), 1.0}), std::uint64_t(i));
  stream.close();
  std::set<std::uint64_t> seen;
  for (const auto& r : stream.results()) {
    ASSERT_FALSE(r.failed) << r.error;
    EXPECT_TRUE(seen.insert(r.id).second) << "id " << r.id << " twice";
    EXPECT_DOUBLE_EQ(tessera::result_as<std::vector<double>>(r)[0], double(r.id) * 2 + 0.5);
  }
  EXPECT_EQ(seen.size(), std::size_t(n));
  EXPECT_EQ(stream.accepted(), std::uint64_t(n));  // every set was written ahead before its answer
  // One instance per simulation actor (2 workers x 2 threads), kept between parameter sets.
  EXPECT_LE(constructions.load(), 4);
  EXPECT_GE(constructions.load(), 1);
  auto stored = client.results(stream.id());
  EXPECT_EQ(stored.count(), std::uint64_t(n));
  EXPECT_EQ(stored.where("result[0] > 10000.5").count(), std::uint64_t(n - 5000 - 1));
  const auto summary = stored.summary("result[0]");
  EXPECT_DOUBLE_EQ(summary.min, 0.5);
  EXPECT_DOUBLE_EQ(summary.max, (n - 1) * 2 + 0.5);
  // The run counter shows instances were reused: some instance ran many parameter sets.
  EXPECT_GT(stored.summary("result[1]").max, 100.0);
}

TEST(Stream, AFastProducerIsHeldToMaxInFlight) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("slow", {.max_in_flight = 64});
  std::size_t worst = 0;
  for (int i = 0; i < 2000; ++i) {
    stream.push(double(i));
    worst = std::max<std::size_t>(worst, stream.pushed() - stream.completed());
  }
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_LE(worst, 64u);
  EXPECT_GE(worst, 32u);  // and it did keep the pipeline full
  EXPECT_EQ(client.results(stream.id()).count(), 2000u);
}

TEST(Stream, ResultsComeThroughACallbackAndQueriesWorkWhileItRuns) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("slow", {.max_in_flight = 256});
  std::atomic<int> called{0};
  stream.on_result([&](const tessera::StreamRecord& r) {
    EXPECT_FALSE(r.failed);
    called += 1;
  });
  for (int i = 0; i < 1000; ++i) stream.push(double(i));
  stream.flush();
  // Queried while the stream runs: some results are stored already, not all.
  ASSERT_TRUE(tessera::testing::eventually([&] { return client.results(stream.id()).count() > 0; }));
  EXPECT_LT(client.results(stream.id()).count(), 1000u);
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_EQ(called.load(), 1000);
}

// Results that came before the callback was set (an ensemble's start at once) go to it first, on the
// caller's thread, then the rest as they come: none is left in the queue, none is given twice.
TEST(Stream, ACallbackSetLateIsGivenTheResultsThatCameBeforeIt) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("slow", {.max_in_flight = 256});
  for (int i = 0; i < 400; ++i) stream.push(double(i));
  stream.flush();
  ASSERT_TRUE(tessera::testing::eventually([&] { return stream.completed() >= 20; }));
  std::mutex mutex;
  std::set<std::uint64_t> seen;
  std::size_t calls = 0;
  std::atomic<int> inside{0}, overlapped{0};
  stream.on_result([&](const tessera::StreamRecord& r) {
    if (inside.fetch_add(1) != 0) overlapped += 1;
    {
      std::lock_guard lock(mutex);
      seen.insert(r.id);
      calls += 1;
    }
    inside.fetch_sub(1);
  });
  {
    std::lock_guard lock(mutex);
    EXPECT_GE(calls, 20u);  // the waiting ones were given before on_result returned
  }
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  std::lock_guard lock(mutex);
  EXPECT_EQ(calls, 400u);
  EXPECT_EQ(seen.size(), 400u);
  EXPECT_EQ(overlapped.load(), 0);
  EXPECT_FALSE(stream.next(std::chrono::steady_clock::now()).has_value());
}

TEST(Stream, AThrowingSimulationStoresAnErrorAndTheStreamGoesOn) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("picky");
  for (int i = 0; i < 100; ++i) stream.push(double(i));
  stream.close();
  int failed = 0;
  for (const auto& r : stream.results()) {
    if (r.failed) {
      ++failed;
      EXPECT_EQ(r.id, 13u);
      EXPECT_EQ(r.error, "13 is unlucky");
      EXPECT_EQ(r.node.rfind("worker-", 0), 0u) << r.node;
    }
  }
  EXPECT_EQ(failed, 1);
  auto stored = client.results(stream.id());
  EXPECT_EQ(stored.count(), 100u);
  EXPECT_EQ(stored.where("failed").count(), 1u);
  EXPECT_EQ(stored.get(13)->error, "13 is unlucky");
  EXPECT_DOUBLE_EQ(tessera::from_value<double>(stored.get(12)->value), 13.0);
}

TEST(Stream, BadInputIsRefusedByNameAndAcceptedSetsAreKept) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  try {
    client.stream("no_such_simulation");
    FAIL();
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown simulation 'no_such_simulation'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("counting"), std::string::npos) << e.what();
  }
  auto stream = client.stream("counting");
  stream.push(std::vector<double>{1, 2});
  try {
    stream.push(std::vector<double>{1, 2, 3});
    FAIL();
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("parameter set 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("takes 2 parameters, got 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(stream.push(std::vector<double>{3, 4}), 1u);  // the refused set used no id
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  EXPECT_EQ(client.results(stream.id()).count(), 2u);
}

TEST(Stream, ResultsSurviveARestartOfTheCluster) {
  const auto dir = temp_dir("restart");
  std::uint64_t id = 0;
  {
    tessera::LocalCluster cluster{stored_in(dir)};
    tessera::Client client{cluster};
    auto stream = client.stream("picky");
    for (int i = 0; i < 50; ++i) stream.push(double(i));
    stream.close();
    ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
    id = stream.id();
  }
  tessera::LocalCluster cluster{stored_in(dir)};
  tessera::Client client{cluster};
  EXPECT_EQ(client.results(id).count(), 50u);
  EXPECT_EQ(client.results(id).where("result > 40").count(), 10u);
  EXPECT_EQ(client.stream("picky").id(), id + 1);  // stream ids go on after a restart
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

// Past the sink's cap (65,536 results nobody took yet) only ids stay in memory; the iterator reads the
// rest back from the store, still in completion order and still every one.
TEST(Stream, ResultsPastTheInMemoryCapAreReadBackFromTheStore) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("picky", {.max_in_flight = 4096});
  const int n = 70000;
  for (int i = 0; i < n; ++i) stream.push(double(i + 100));
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  std::vector<bool> seen(n, false);
  int count = 0;
  for (const auto& r : stream.results()) {
    ASSERT_LT(r.id, std::uint64_t(n));
    EXPECT_FALSE(seen[r.id]);
    seen[r.id] = true;
    EXPECT_DOUBLE_EQ(tessera::result_as<double>(r), double(r.id + 101));
    ++count;
  }
  EXPECT_EQ(count, n);
}

}  // namespace

namespace {

// A stream of `n` sets of "slow" (which returns its parameter) finished with every id answered, and the
// store holds ids 0..n-1 once each, each with its own value.
void expect_each_id_once(tessera::Client& client, tessera::Stream& stream, int n) {
  EXPECT_EQ(stream.completed(), std::uint64_t(n));
  auto stored = client.results(stream.id());
  EXPECT_EQ(stored.count(), std::uint64_t(n));
  std::uint64_t expected = 0;
  for (const auto& r : stored.range(0, n)) {
    EXPECT_EQ(r.id, expected++);
    EXPECT_DOUBLE_EQ(tessera::from_value<double>(r.value), double(r.id));
  }
  EXPECT_EQ(expected, std::uint64_t(n));
}

// A worker lost mid-stream: its unanswered parameter sets run again on the others, and the store holds
// exactly one result per id.
TEST(Stream, ALostWorkersParameterSetsRunAgainExactlyOnce) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("slow", {.max_in_flight = 1024});
  std::thread saboteur([&] {
    tessera::testing::eventually([&] { return stream.completed() >= 1000; });
    caf::anon_send(tessera::detail::LocalClusterAccess::engine(cluster).scheduler(),
                   tessera::lost_atom::value, std::uint32_t{1});
  });
  const int n = 6000;
  for (int i = 0; i < n; ++i) stream.push(double(i));
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(120)));
  saboteur.join();
  expect_each_id_once(client, stream, n);
  EXPECT_EQ(cluster.status().workers, 1u);
}

// Workers retired mid-stream (scale down): the sets they were sent when they shut down run again on the
// workers that stay, and the store holds exactly one result per id.
TEST(Stream, ARetiredWorkersParameterSetsRunAgainExactlyOnce) {
  tessera::LocalCluster cluster{{.workers = 3, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("slow", {.max_in_flight = 1024});
  std::thread scaler([&] {
    tessera::testing::eventually([&] { return stream.completed() >= 1000; });
    cluster.scale(2);
    tessera::testing::eventually([&] { return stream.completed() >= 2500; });
    cluster.scale(1);
  });
  const int n = 6000;
  for (int i = 0; i < n; ++i) stream.push(double(i));
  stream.close();
  EXPECT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)))
      << "the stream never finished: sets sent to a retired worker were not run again";
  scaler.join();
  expect_each_id_once(client, stream, n);
  EXPECT_TRUE(cluster.wait_for_workers(1));
  EXPECT_EQ(cluster.status().workers_lost, 0u) << "retired workers were counted as lost";
}

}  // namespace
