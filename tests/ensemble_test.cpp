// Ensemble controls on streams: process isolation (a set that crashes its simulation process fails
// naming the signal, a fresh process takes its place, the stream and the node go on), timeouts under
// both isolations, and retries that keep every attempt's reason and stop at a poison set. Embedded
// clusters and a real tessera-node driven through the CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tessera/tessera.hpp>

#include "fork_safety.hpp"
#include "plugin_tasks.hpp"
#include "support/node_process.hpp"
#include "support/scratch_dir.hpp"
#include "test_util.hpp"

namespace {

using tessera::Failure;
using tessera::Isolation;
using tessera::StreamRecord;

// What the unruly simulation does with a first parameter ending in this digit.
enum class Behaviour { sum, segfault, abort, hang, throws };
Behaviour behaviour_of(std::uint64_t x) {
  switch (x % 10) {
    case 3:
      return Behaviour::segfault;
    case 4:
      return Behaviour::abort;
    case 5:
      return Behaviour::hang;
    case 7:
      return Behaviour::throws;
    default:
      return Behaviour::sum;
  }
}

std::map<std::uint64_t, StreamRecord> run_unruly(tessera::Client& client, tessera::StreamOptions options,
                                                 std::uint64_t n) {
  auto stream = client.stream("unruly", std::move(options));
  for (std::uint64_t i = 0; i < n; ++i) stream.push(std::vector<double>{double(i), 0.5});
  stream.close();
  std::map<std::uint64_t, StreamRecord> records;
  for (const auto& r : stream.results())
    EXPECT_TRUE(records.emplace(r.id, r).second) << "id " << r.id << " twice";
  EXPECT_EQ(stream.error(), "");
  return records;
}

// Every id once, each with what its behaviour must give.
void expect_outcomes(const std::map<std::uint64_t, StreamRecord>& records, std::uint64_t n, bool crashes) {
  ASSERT_EQ(records.size(), n);
  for (const auto& [id, r] : records) {
    switch (behaviour_of(id)) {
      case Behaviour::sum:
        ASSERT_FALSE(r.failed) << id << ": " << r.error;
        EXPECT_DOUBLE_EQ(tessera::from_value<double>(r.value), double(id) + 0.5);
        break;
      case Behaviour::segfault:
        if (!crashes) break;
        EXPECT_TRUE(r.failed);
        EXPECT_EQ(r.failure, Failure::crash) << r.error;
        EXPECT_NE(r.error.find("killed by SIGSEGV (Segmentation fault) while running this set"),
                  std::string::npos)
            << r.error;
        break;
      case Behaviour::abort:
        if (!crashes) break;
        EXPECT_EQ(r.failure, Failure::crash) << r.error;
        EXPECT_NE(r.error.find("killed by SIGABRT"), std::string::npos) << r.error;
        break;
      case Behaviour::hang:
        EXPECT_EQ(r.failure, Failure::timeout) << r.error;
        EXPECT_EQ(r.error.rfind("timeout after 0.5 s", 0), 0u) << r.error;
        break;
      case Behaviour::throws:
        EXPECT_EQ(r.failure, Failure::error) << r.error;
        EXPECT_EQ(r.error, "7 is refused");
        break;
    }
  }
}

TEST(Ensemble, ProcessIsolationRecordsCrashesAndTimeoutsPerSetAndTheStreamGoesOn) {
  SKIP_UNLESS_FORK_IS_SAFE();
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.isolation = Isolation::process;
  options.timeout = std::chrono::milliseconds(500);
  const std::uint64_t n = 40;
  expect_outcomes(run_unruly(client, options, n), n, true);
  // The node still serves: tasks and another stream.
  EXPECT_EQ(client.submit(plugin_tasks::square, 12).result(), 144);
  options.timeout = {};
  auto records = run_unruly(client, options, 3);
  EXPECT_EQ(records.size(), 3u);
  // The stored records say the same as the delivered ones.
  auto stored = client.results(1);
  EXPECT_EQ(stored.count(), n);
  EXPECT_EQ(stored.where("failed").count(), 4u + 4 + 4 + 4);
  EXPECT_EQ(stored.get(3)->failure, Failure::crash);
  EXPECT_EQ(stored.get(5)->failure, Failure::timeout);
}

TEST(Ensemble, ASimulationProcessIsReusedForManySetsAndReplacedAfterACrash) {
  SKIP_UNLESS_FORK_IS_SAFE();
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.isolation = Isolation::process;
  options.pool_size = 2;
  auto stream = client.stream("where_am_i", std::move(options));
  for (int i = 0; i < 500; ++i) stream.push(double(i));
  stream.push(-1.0);  // aborts its process
  for (int i = 0; i < 500; ++i) stream.push(double(i));
  stream.close();
  std::set<double> pids;
  std::uint64_t crashed = 0;
  for (const auto& r : stream.results()) {
    if (r.failed) {
      crashed += 1;
      EXPECT_EQ(r.failure, Failure::crash);
      continue;
    }
    pids.insert(tessera::from_value<double>(r.value));
  }
  EXPECT_EQ(crashed, 1u);
  EXPECT_EQ(pids.count(double(getpid())), 0u);  // never in the worker itself
  // Two processes at first, one more after the crash: started once, reused for many sets.
  EXPECT_GE(pids.size(), 2u);
  EXPECT_LE(pids.size(), 3u);
}

TEST(Ensemble, ThreadIsolationTimesOutAHungSetAndDiscardsItsLateResult) {
  plugin_tasks::release_hung_sets = false;
  {
    tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 3}};
    tessera::Client client{cluster};
    tessera::StreamOptions options;
    options.isolation = Isolation::thread;
    options.timeout = std::chrono::milliseconds(500);
    // Crashing digits would take this process down: only sums, hangs and throws.
    auto stream = client.stream("unruly", std::move(options));
    const std::vector<double> xs{0, 1, 2, 5, 6, 7, 8, 15, 9, 10, 11};
    for (double x : xs) stream.push(std::vector<double>{x, 0.5});
    stream.close();
    std::map<std::uint64_t, StreamRecord> records;
    for (const auto& r : stream.results()) EXPECT_TRUE(records.emplace(r.id, r).second);
    ASSERT_EQ(records.size(), xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const auto& r = records.at(i);
      const auto b = behaviour_of(static_cast<std::uint64_t>(xs[i]));
      if (b == Behaviour::hang) {
        EXPECT_EQ(r.failure, Failure::timeout);
        EXPECT_NE(r.error.find("timeout after 0.5 s (thread isolation"), std::string::npos) << r.error;
      } else if (b == Behaviour::throws) {
        EXPECT_EQ(r.error, "7 is refused");
      } else {
        ASSERT_FALSE(r.failed) << r.error;
        EXPECT_DOUBLE_EQ(tessera::from_value<double>(r.value), xs[i] + 0.5);
      }
    }
    // The hung runs return now; their results are dropped, the stored timeouts stay.
    plugin_tasks::release_hung_sets = true;
    EXPECT_EQ(client.submit(plugin_tasks::square, 3).result(), 9);
    auto stored = client.results(stream.id());
    EXPECT_EQ(stored.count(), xs.size());
    EXPECT_EQ(stored.get(3)->failure, Failure::timeout);
  }
  plugin_tasks::release_hung_sets = false;
}

TEST(Ensemble, RetriesKeepEveryAttemptsReasonAndASetThatSucceedsLaterIsStoredOnce) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.retries = 2;
  options.config.set("fail_first", tessera::to_value(std::int64_t{2}));
  auto stream = client.stream("flaky", options);
  for (int i = 0; i < 20; ++i) stream.push(double(1000 + i));
  stream.close();
  std::uint64_t n = 0;
  for (const auto& r : stream.results()) {
    ++n;
    ASSERT_FALSE(r.failed) << r.error;
    EXPECT_DOUBLE_EQ(tessera::from_value<double>(r.value), double(1000 + r.id) * double(1000 + r.id));
    ASSERT_EQ(r.attempts.size(), 2u);
    EXPECT_NE(r.attempts[0].find("attempt 1 failed"), std::string::npos) << r.attempts[0];
    EXPECT_NE(r.attempts[1].find("attempt 2 failed"), std::string::npos) << r.attempts[1];
  }
  EXPECT_EQ(n, 20u);
  EXPECT_EQ(client.results(stream.id()).get(4)->attempts.size(), 2u);

  // One retry fewer than needed: final, with the two reasons.
  options.retries = 1;
  options.config.set("fail_first", tessera::to_value(std::int64_t{5}));
  auto short_of_it = client.stream("flaky", options);
  short_of_it.push(2000.0);
  short_of_it.close();
  auto last = short_of_it.next();
  ASSERT_TRUE(last);
  EXPECT_TRUE(last->failed);
  EXPECT_EQ(last->error, "attempt 2 failed");
  ASSERT_EQ(last->attempts.size(), 1u);
  EXPECT_NE(last->attempts[0].find("attempt 1 failed"), std::string::npos);
}

TEST(Ensemble, ASetThatCrashesItsProcessTwiceIsAPoisonSetWhateverRetriesRemain) {
  SKIP_UNLESS_FORK_IS_SAFE();
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.isolation = Isolation::process;
  options.retries = 5;
  auto records = run_unruly(client, options, 5);
  ASSERT_EQ(records.size(), 5u);
  const auto& poison = records.at(3);
  EXPECT_EQ(poison.failure, Failure::crash);
  EXPECT_NE(poison.error.find("a poison set, not run again"), std::string::npos) << poison.error;
  ASSERT_EQ(poison.attempts.size(), 1u);
  EXPECT_NE(poison.attempts[0].find("SIGSEGV"), std::string::npos) << poison.attempts[0];
  EXPECT_EQ(records.at(4).attempts.size(), 1u);  // SIGABRT twice
  EXPECT_FALSE(records.at(2).failed);
}

TEST(Ensemble, OutOfRangeSettingsAreRefusedByName) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  const auto refused = [&](tessera::StreamOptions options, const std::string& expected) {
    try {
      client.stream("unruly", std::move(options));
      ADD_FAILURE() << "accepted; expected " << expected;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  tessera::StreamOptions options;
  options.timeout = std::chrono::duration<double>(-1);
  refused(options, "timeout -1 s is not a number of seconds");
  options.timeout = std::chrono::duration<double>(std::numeric_limits<double>::quiet_NaN());
  refused(options, "timeout nan s");
  options.timeout = std::chrono::duration<double>(std::numeric_limits<double>::infinity());
  refused(options, "timeout inf s");
  options.timeout = {};
  options.retries = 1000;
  refused(options, "retries 1000 exceeds the limit of 100");
}

// ---- Through a real node and the CLI ----

using tessera::testing::cli;
using tessera::testing::NodeProcess;
using tessera::testing::run_command;
using tessera::testing::ScratchDir;

TEST(EnsembleProcess, CliPushWithProcessIsolationTimeoutAndRetriesStoresEveryIdOnce) {
  SKIP_UNLESS_FORK_IS_SAFE();
  NodeProcess node(
      "[node]\nname = \"ensembles\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[worker]\nworkers = 1\nthreads_per_worker = 2\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n");
  const ScratchDir scratch("tessera-ensemble");
  const auto& dir = scratch.path();
  const auto input = (dir / "params.csv").string();
  const std::uint64_t n = 30;
  {
    std::ofstream params(input);
    params << "x,y\n";
    for (std::uint64_t i = 0; i < n; ++i) params << i << ",0.5\n";
  }
  const std::string base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  int code = 0;
  auto out = run_command(base + " stream push --simulation unruly --quiet --input " + input +
                             " --timeout 0.5 --retries 1 --isolation process",
                         code);
  // Exit 0: every set has a stored result, failures included.
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "stream 1: 30 parameter sets, 30 results stored (12 failed)\n");
  std::map<std::uint64_t, nlohmann::json> lines;
  std::istringstream json(cli(node.endpoint(), "results --stream 1 --format json"));
  for (std::string line; std::getline(json, line);) {
    auto parsed = nlohmann::json::parse(line);
    EXPECT_TRUE(lines.emplace(parsed["id"].get<std::uint64_t>(), parsed).second) << line;
  }
  ASSERT_EQ(lines.size(), n);
  for (const auto& [id, line] : lines) {
    switch (behaviour_of(id)) {
      case Behaviour::sum:
        EXPECT_DOUBLE_EQ(line["result"].get<double>(), double(id) + 0.5) << line;
        break;
      case Behaviour::segfault:
        EXPECT_EQ(line["failure"], "crash") << line;
        EXPECT_NE(line["error"].get<std::string>().find("SIGSEGV"), std::string::npos) << line;
        // Crashed, retried once, crashed again: final.
        ASSERT_EQ(line["attempts"].size(), 1u) << line;
        break;
      case Behaviour::abort:
        EXPECT_NE(line["error"].get<std::string>().find("SIGABRT"), std::string::npos) << line;
        break;
      case Behaviour::hang:
        EXPECT_EQ(line["failure"], "timeout") << line;
        EXPECT_NE(line["error"].get<std::string>().find("timeout after 0.5 s"), std::string::npos) << line;
        ASSERT_EQ(line["attempts"].size(), 1u) << line;
        EXPECT_NE(line["attempts"][0].get<std::string>().find("worker-0: timeout after 0.5 s"),
                  std::string::npos)
            << line;
        break;
      case Behaviour::throws:
        EXPECT_EQ(line["error"], "7 is refused") << line;
        EXPECT_EQ(line["attempts"].size(), 1u) << line;
        break;
    }
  }
  // The node still serves after its simulation processes crashed.
  EXPECT_NE(cli(node.endpoint(), "status").find("workers"), std::string::npos);

  // Bad values are refused naming the flag, before anything is pushed.
  for (const auto& [flags, expected] :
       std::vector<std::pair<std::string, std::string>>{{"--timeout -1", "--timeout"},
                                                        {"--timeout nan", "--timeout"},
                                                        {"--timeout 1e300", "--timeout"},
                                                        {"--retries 101", "--retries"},
                                                        {"--retries -1", "--retries"},
                                                        {"--isolation fork", "--isolation"}}) {
    out = run_command(base + " stream push --simulation unruly --quiet --input " + input + " " + flags, code);
    EXPECT_EQ(code, 2) << flags << ": " << out;
    EXPECT_NE(out.find(expected), std::string::npos) << flags << ": " << out;
  }
}

TEST(EnsembleProcess, TheNodesStreamsIsolationIsTheDefaultOfAStreamThatDoesNotSay) {
  SKIP_UNLESS_FORK_IS_SAFE();
  NodeProcess node(
      "[node]\nname = \"isolated\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[streams]\nisolation = \"process\"\n"
      "[worker]\nworkers = 1\nthreads_per_worker = 2\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n");
  tessera::Client client(node.endpoint());
  auto stream = client.stream("where_am_i");
  for (int i = 0; i < 50; ++i) stream.push(double(i));
  stream.close();
  std::set<double> pids;
  for (const auto& r : stream.results()) {
    ASSERT_FALSE(r.failed) << r.error;
    pids.insert(tessera::from_value<double>(r.value));
  }
  EXPECT_EQ(pids.count(double(node.pid())), 0u);  // not the node itself: its child processes
  EXPECT_LE(pids.size(), 2u);
}

}  // namespace
