// Controls over a running stream's queued and running parameter sets: priorities (a higher one is
// dispatched first, equal ones in push order) and cancellation (queued sets never run, running ones are
// stopped or abandoned, each stored as cancelled), through the client API in this process and across a
// real node, and through `tessera stream cancel` and `stream push --priority-column`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <tessera/tessera.hpp>

#include "backends/device_queue.hpp"
#include "fork_safety.hpp"
#include "plugin_tasks.hpp"
#include "support/node_process.hpp"
#include "support/scratch_dir.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using tessera::Failure;
using tessera::StreamRecord;
using tessera::testing::eventually;
using tessera::testing::ScratchDir;

// The gated simulation's files: its negative sets wait while `gate` exists, and say they began by
// creating `started`.
class Gate {
 public:
  Gate() { std::ofstream(gate()) << "closed\n"; }
  std::string gate() const { return (dir_ / "gate").string(); }
  std::string started() const { return (dir_ / "started").string(); }
  void open() const { fs::remove(gate()); }
  bool closed() const { return fs::exists(gate()); }
  tessera::Config config() const {
    tessera::Config config;
    config.set("gate", tessera::to_value(gate()));
    config.set("started", tessera::to_value(started()));
    return config;
  }

 private:
  ScratchDir dir_{"tessera-gate"};
};

// A stream of the gated simulation on one simulation actor (the worker's only compute thread).
tessera::Stream gated_stream(tessera::Client& client, const Gate& gate,
                             tessera::Isolation isolation = tessera::Isolation::thread) {
  tessera::StreamOptions options;
  options.pool_size = 1;
  options.isolation = isolation;
  options.config = gate.config();
  return client.stream("gated", options);
}

// Pushes one set and waits until the stream has it (so that it is dispatched before what comes next).
void push_alone(tessera::Stream& stream, double x) {
  stream.push(x);
  stream.flush();
  ASSERT_TRUE(eventually([&] { return stream.accepted() == stream.pushed(); }));
}

// Pushes a set that waits at the gate, and waits until it runs.
void hold_at_the_gate(tessera::Stream& stream, const Gate& gate) {
  stream.push(-1.0);
  stream.flush();
  ASSERT_TRUE(eventually([&] { return fs::exists(gate.started()); }));
}

// Results by id, and the ids in the order they ran (the gated simulation's result is its run count).
struct Ran {
  std::map<std::uint64_t, StreamRecord> records;
  std::vector<std::uint64_t> order;  // of the sets that ran
};
Ran collect(tessera::Stream& stream) {
  Ran ran;
  std::vector<std::pair<double, std::uint64_t>> runs;
  for (const auto& r : stream.results()) {
    EXPECT_TRUE(ran.records.emplace(r.id, r).second) << "id " << r.id << " twice";
    if (!r.failed) runs.emplace_back(tessera::from_value<double>(r.value), r.id);
  }
  std::sort(runs.begin(), runs.end());
  for (const auto& [at, id] : runs) ran.order.push_back(id);
  return ran;
}

// Ids in the order priorities dispatch them: higher first, equal ones by id.
std::vector<std::uint64_t> by_priority(std::vector<std::uint64_t> ids,
                                       const std::function<double(std::uint64_t)>& priority) {
  std::stable_sort(ids.begin(), ids.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return priority(a) > priority(b); });
  return ids;
}

TEST(StreamControls, QueuedSetsRunHigherPriorityFirstAndEqualPrioritiesInPushOrder) {
  Gate gate;
  EXPECT_GE(plugin_tasks::gated_runs.load(), 0);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = gated_stream(client, gate);
  push_alone(stream, -1.0);  // holds the only simulation actor
  push_alone(stream, 0.0);   // the second job out, queued at the worker: not overtaken
  const std::vector<double> priorities{3, 0, 5, 1, 5, -2, 1, 0, 9, 5, -2.5, 1e9, 0};
  std::vector<std::uint64_t> queued;
  for (std::size_t i = 0; i < priorities.size(); ++i)
    queued.push_back(stream.push(double(i + 2), {.priority = priorities[i]}));
  stream.flush();
  ASSERT_TRUE(eventually([&] { return stream.accepted() == stream.pushed(); }));
  gate.open();
  stream.close();
  const auto ran = collect(stream);
  ASSERT_EQ(ran.records.size(), priorities.size() + 2);
  std::vector<std::uint64_t> expected{0, 1};
  for (auto id : by_priority(queued, [&](std::uint64_t id) { return priorities[id - 2]; }))
    expected.push_back(id);
  EXPECT_EQ(ran.order, expected);

  // A priority that is not a number is refused naming the set, and uses no id.
  auto next = client.stream("gated");
  EXPECT_THROW(next.push(1.0, {.priority = std::numeric_limits<double>::quiet_NaN()}), std::invalid_argument);
  EXPECT_THROW(next.push(1.0, {.priority = std::numeric_limits<double>::infinity()}), std::invalid_argument);
  EXPECT_EQ(next.push(1.0), 0u);
  next.close();
  EXPECT_TRUE(next.wait());
}

TEST(StreamControls, CancelledSetsAreStoredAsCancelledAndTheRestRun) {
  Gate gate;
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = gated_stream(client, gate);
  push_alone(stream, -1.0);  // id 0 runs and holds the only thread
  push_alone(stream, 1.0);   // id 1 waits at the worker, in flight
  for (int i = 2; i < 100; ++i) stream.push(double(i));
  stream.flush();
  ASSERT_TRUE(eventually([&] { return stream.accepted() == 100; }));

  auto counts = stream.cancel(tessera::IdRange{50, 100});
  EXPECT_EQ(counts.queued, 50u);
  EXPECT_EQ(counts.running, 0u);
  counts = stream.cancel_where("id >= 10 and id < 20");
  EXPECT_EQ(counts.queued, 10u);
  counts = stream.cancel_where("parameters >= 30 and parameters < 35");
  EXPECT_EQ(counts.queued, 5u);
  counts = stream.cancel({1, 55, 99});  // 55 and 99 are answered already
  EXPECT_EQ(counts.queued, 0u);
  EXPECT_EQ(counts.running, 1u);
  counts = stream.cancel({0});  // running under thread isolation: abandoned
  EXPECT_EQ(counts.running, 1u);
  counts = stream.cancel({0});
  EXPECT_EQ(counts.queued + counts.running, 0u);
  EXPECT_EQ(stream.cancel_where("result > 3").queued, 0u);  // queued sets have no result to match
  // A filter that compares nothing would select every set: refused, naming the filter.
  for (const char* everything : {"ok", " "}) {
    try {
      stream.cancel_where(everything);
      ADD_FAILURE() << "'" << everything << "' was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("has no clause on id or parameters"), std::string::npos)
          << e.what();
    }
  }
  try {
    stream.cancel_where("bogus > 1");
    ADD_FAILURE() << "a bad filter was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("stream " + std::to_string(stream.id())), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
  }

  gate.open();  // the abandoned run returns; its result is discarded
  stream.close();
  const auto ran = collect(stream);
  ASSERT_EQ(ran.records.size(), 100u);
  const auto cancelled = [](std::uint64_t id) {
    return id <= 1 || (id >= 10 && id < 20) || (id >= 30 && id < 35) || id >= 50;
  };
  for (const auto& [id, r] : ran.records) {
    if (!cancelled(id)) {
      EXPECT_FALSE(r.failed) << id << ": " << r.error;
      continue;
    }
    EXPECT_TRUE(r.failed) << id;
    EXPECT_EQ(r.failure, Failure::cancelled) << id << ": " << r.error;
    EXPECT_EQ(r.error, id <= 1 ? "cancelled by request while it ran" : "cancelled by request before it ran");
  }
  auto stored = client.results(stream.id());
  EXPECT_EQ(stored.count(), 100u);
  EXPECT_EQ(stored.where("failed").count(), 67u);
  EXPECT_EQ(stored.get(0)->failure, Failure::cancelled);
  // Cancelling a finished stream cancels nothing.
  EXPECT_EQ(stream.cancel({5}).queued, 0u);
}

// The callback runs on the thread that would answer the cancellation: refused there, not a hang.
TEST(StreamControls, CancelFromAResultCallbackIsRefusedNotADeadlock) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("gated");
  std::atomic<int> refused{0};
  stream.on_result([&](const StreamRecord&) {
    try {
      stream.cancel({0});
    } catch (const std::logic_error& e) {
      if (std::string(e.what()).find("cannot be called from an on_result callback") != std::string::npos)
        refused += 1;
    }
  });
  for (int i = 0; i < 3; ++i) stream.push(double(i));
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  EXPECT_EQ(refused.load(), 3);
}

TEST(StreamControls, CancellingASetRunningInAProcessStopsThatProcess) {
  SKIP_UNLESS_FORK_IS_SAFE();
  Gate gate;
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = gated_stream(client, gate, tessera::Isolation::process);
  ASSERT_NO_FATAL_FAILURE(hold_at_the_gate(stream, gate));  // it runs in its process
  for (int i = 1; i < 20; ++i) stream.push(double(i));
  stream.flush();
  ASSERT_TRUE(eventually([&] { return stream.accepted() == 20; }));
  EXPECT_EQ(stream.cancel({0}).running, 1u);
  stream.close();
  // The gate stays closed: only a stopped process lets the rest run.
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  EXPECT_TRUE(gate.closed());
  const auto ran = collect(stream);
  ASSERT_EQ(ran.records.size(), 20u);
  EXPECT_EQ(ran.records.at(0).failure, Failure::cancelled);
  for (std::uint64_t id = 1; id < 20; ++id)
    EXPECT_FALSE(ran.records.at(id).failed) << ran.records.at(id).error;
}

// A simulation actor whose instance lives in a process holds a second job behind the one it runs; an
// actor with nothing to do takes that job back, so no set waits behind one that is held.
TEST(StreamControls, AJobWaitingBehindAHeldProcessMovesToAnIdleOne) {
  SKIP_UNLESS_FORK_IS_SAFE();
  Gate gate;
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.pool_size = 2;
  options.isolation = tessera::Isolation::process;
  options.config = gate.config();
  auto stream = client.stream("gated", options);
  ASSERT_NO_FATAL_FAILURE(hold_at_the_gate(stream, gate));
  for (int i = 1; i < 10; ++i) stream.push(double(i));
  stream.flush();
  // Every other set is answered while the first still holds its process.
  ASSERT_TRUE(eventually([&] { return stream.completed() == 9; })) << stream.completed() << " of 9";
  EXPECT_TRUE(gate.closed());
  gate.open();
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  const auto ran = collect(stream);
  ASSERT_EQ(ran.records.size(), 10u);
  for (const auto& [id, r] : ran.records) EXPECT_FALSE(r.failed) << id << ": " << r.error;
}

// Streams share a worker's compute threads. The thread that feeds a simulation process runs that
// actor's next job at once, but hands the thread over when other work waits for one: a stream with sets
// to spare does not hold the worker until it is through (here 1,500 sets of 2 ms on the only thread).
TEST(StreamControls, AStreamWhoseProcessAlwaysHasAJobWaitingStillSharesTheWorkersThread) {
  SKIP_UNLESS_FORK_IS_SAFE();
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto process_stream = [&](std::int64_t pause_us) {
    tessera::StreamOptions options;
    options.pool_size = 1;
    options.isolation = tessera::Isolation::process;
    options.config.set("pause_us", tessera::to_value(pause_us));
    return client.stream("pause_square", options);
  };
  auto busy = process_stream(2000);
  constexpr int kBusySets = 1500;
  for (int i = 0; i < kBusySets; ++i) busy.push(1.0);
  busy.flush();
  ASSERT_TRUE(eventually([&] { return busy.completed() > 0; }));
  auto other = process_stream(0);
  other.push(2.0);
  other.close();
  busy.close();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  ASSERT_TRUE(other.wait(deadline));
  ASSERT_TRUE(busy.wait(deadline));
  std::vector<StreamRecord> others;
  for (const auto& r : other.results()) others.push_back(r);
  ASSERT_EQ(others.size(), 1u);
  ASSERT_FALSE(others[0].failed) << others[0].error;
  double busy_last_started = 0;
  std::size_t busy_records = 0;
  for (const auto& r : busy.results()) {
    ASSERT_FALSE(r.failed) << r.id << ": " << r.error;
    busy_last_started = std::max(busy_last_started, r.timeline.started);
    ++busy_records;
  }
  EXPECT_EQ(busy_records, std::size_t{kBusySets});
  EXPECT_LT(others[0].timeline.started, busy_last_started)
      << "the other stream's set waited until the busy stream was through";
}

// A cancelled set in the job waiting behind a process's running one is taken out of it: it never runs.
TEST(StreamControls, ACancelledSetWaitingBehindAProcessNeverRuns) {
  SKIP_UNLESS_FORK_IS_SAFE();
  Gate gate;
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = gated_stream(client, gate, tessera::Isolation::process);
  ASSERT_NO_FATAL_FAILURE(hold_at_the_gate(stream, gate));
  push_alone(stream, 1.0);  // waits behind id 0 at its simulation actor
  push_alone(stream, 2.0);
  const auto counts = stream.cancel({1});
  EXPECT_EQ(counts.queued + counts.running, 1u);
  gate.open();
  push_alone(stream, 3.0);
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  const auto ran = collect(stream);
  ASSERT_EQ(ran.records.size(), 4u);
  EXPECT_EQ(ran.records.at(1).failure, Failure::cancelled) << ran.records.at(1).error;
  // The process's run count: id 1 took none.
  EXPECT_EQ(ran.order, (std::vector<std::uint64_t>{0, 2, 3}));
  for (std::uint64_t id : {0, 2, 3}) {
    EXPECT_FALSE(ran.records.at(id).failed) << id << ": " << ran.records.at(id).error;
    EXPECT_EQ(tessera::from_value<double>(ran.records.at(id).value), id == 0 ? 0.0 : double(id - 1)) << id;
  }
}

// A set's own timeout takes the place of the stream's (here none): the set that waits past it fails as
// a timeout, the others run without one. Under process isolation its process is killed, so the rest run
// while the gate stays closed; under thread isolation they wait for the abandoned run to return.
void expect_per_set_timeouts(tessera::Isolation isolation) {
  Gate gate;
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = gated_stream(client, gate, isolation);
  std::mutex guard;
  std::map<std::uint64_t, StreamRecord> records;
  stream.on_result([&](const StreamRecord& r) {
    std::lock_guard lock(guard);
    records.emplace(r.id, r);
  });
  stream.push(1.0, {.timeout = std::chrono::milliseconds(200)});
  stream.push(-1.0, {.timeout = std::chrono::milliseconds(300)});  // waits at the gate: times out
  stream.push(2.0);
  stream.push(3.0, {.timeout = std::chrono::seconds(60)});
  stream.flush();
  // Nothing is retried and nothing waits for the gate, except under thread isolation the abandoned run.
  stream.close();
  if (isolation == tessera::Isolation::thread) {
    ASSERT_TRUE(eventually([&] { return stream.completed() >= 2; }));
    gate.open();
  }
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  if (isolation == tessera::Isolation::process) {
    EXPECT_TRUE(gate.closed());
  }
  std::lock_guard lock(guard);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records.at(1).failure, Failure::timeout) << records.at(1).error;
  EXPECT_NE(records.at(1).error.find("timeout after 0.3 s"), std::string::npos) << records.at(1).error;
  for (std::uint64_t id : {0, 2, 3}) EXPECT_FALSE(records.at(id).failed) << records.at(id).error;
  // The stored record says the same.
  EXPECT_EQ(client.results(stream.id()).where("failed").count(), 1u);
  auto stored = client.results(stream.id()).get(1);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->failure, Failure::timeout);
}

TEST(StreamControls, ASetsOwnTimeoutReplacesTheStreamsUnderThreadIsolation) {
  expect_per_set_timeouts(tessera::Isolation::thread);
}

TEST(StreamControls, ASetsOwnTimeoutKillsItsProcess) {
  SKIP_UNLESS_FORK_IS_SAFE();
  expect_per_set_timeouts(tessera::Isolation::process);
}

TEST(StreamControls, ATimeoutThatIsNotANumberOfSecondsIsRefusedNamingTheSet) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto stream = client.stream("gated");
  for (double bad :
       {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), 1e12}) {
    try {
      stream.push(1.0, {.timeout = std::chrono::duration<double>(bad)});
      ADD_FAILURE() << "timeout " << bad << " was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("parameter set 0 of stream"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("timeout"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(stream.push(1.0), 0u);  // the refused ones used no id
  stream.close();
  EXPECT_TRUE(stream.wait());
}

// ---- Resources a simulation declares ----

// Its results, failing the test on any failure.
std::vector<double> run_all(tessera::Client& client, const std::string& simulation, int sets,
                            tessera::StreamOptions options = {}) {
  auto stream = client.stream(simulation, options);
  for (int i = 0; i < sets; ++i) stream.push(double(i));
  stream.close();
  std::vector<double> values;
  for (const auto& r : stream.results()) {
    EXPECT_FALSE(r.failed) << "set " << r.id << ": " << r.error;
    if (!r.failed) values.push_back(tessera::from_value<double>(r.value));
  }
  EXPECT_EQ(values.size(), std::size_t(sets));
  return values;
}

TEST(StreamResources, ASimulationDeclaringThreadsRunsAsManyInstancesAsTheWorkersThreadsAllow) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 4}};
  tessera::Client client{cluster};
  plugin_tasks::threaded_peak = 0;
  // Four compute threads, two per instance: two instances at once, never three.
  const auto peaks = run_all(client, "threaded", 60);
  EXPECT_EQ(*std::max_element(peaks.begin(), peaks.end()), 2.0);
  EXPECT_EQ(plugin_tasks::threaded_peak.load(), 2);
}

TEST(StreamResources, AGpuSimulationIsHandedItsOwnDeviceAndRunsOnePerDevice) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 4, .gpus = {3, 5}}};
  tessera::Client client{cluster};
  // Each instance fails if its device is busy with another: the two devices bound four threads to two.
  const auto devices = run_all(client, "on_gpu", 80);
  const std::set<double> seen(devices.begin(), devices.end());
  EXPECT_EQ(seen, (std::set<double>{3.0, 5.0}));

  // Two workers split the devices: each has one, so both run, each on its own.
  tessera::LocalCluster split{{.workers = 2, .threads_per_worker = 2, .gpus = {3, 5}}};
  tessera::Client split_client{split};
  const auto split_devices = run_all(split_client, "on_gpu", 40);
  EXPECT_EQ(std::set<double>(split_devices.begin(), split_devices.end()), (std::set<double>{3.0, 5.0}));
}

TEST(StreamResources, AGpuSimulationOnAWorkerWithoutDevicesFailsNamingTheWorker) {
  if (tessera::backends::device_count() > 0)
    GTEST_SKIP() << "this machine has a GPU: its workers have devices";
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto stream = client.stream("on_gpu");
  for (int i = 0; i < 3; ++i) stream.push(double(i));
  stream.close();
  std::size_t count = 0;
  for (const auto& r : stream.results()) {
    ++count;
    EXPECT_TRUE(r.failed);
    EXPECT_NE(r.error.find("simulation 'on_gpu' needs 1 GPU device per instance; worker-"), std::string::npos)
        << r.error;
    EXPECT_NE(r.error.find("has none"), std::string::npos) << r.error;
  }
  EXPECT_EQ(count, 3u);
}

TEST(StreamResources, DevicesThatAreNotOrdinalsAreRefusedNamingTheOption) {
  for (const auto& [gpus, expected] : std::vector<std::pair<std::vector<int>, std::string>>{
           {{-1}, "ClusterOptions::gpus[0]: device -1 is not a CUDA ordinal"},
           {{0, 4096}, "ClusterOptions::gpus[1]: device 4096"},
           {{2, 2}, "ClusterOptions::gpus[1]: device 2 is listed twice"}}) {
    try {
      tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1, .gpus = gpus}};
      ADD_FAILURE() << expected << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

// ---- Through a real node and the CLI ----

using tessera::testing::cli;
using tessera::testing::NodeProcess;
using tessera::testing::run_command;

const char* kNodeConfig =
    "[node]\nname = \"controls\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
    "[worker]\nworkers = 1\nthreads_per_worker = 1\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n";

TEST(StreamControlsProcess, CliCancelAndPrioritiesAcrossANode) {
  NodeProcess node(kNodeConfig);
  Gate gate;
  tessera::Client client(node.endpoint());
  auto stream = gated_stream(client, gate);
  ASSERT_EQ(stream.id(), 1u);
  ASSERT_NO_FATAL_FAILURE(hold_at_the_gate(stream, gate));
  push_alone(stream, 1.0);
  const auto priority = [](std::uint64_t id) { return double(id % 3); };
  std::vector<std::uint64_t> queued;
  for (std::uint64_t id = 2; id < 100; ++id)
    queued.push_back(stream.push(double(id), {.priority = priority(id)}));
  stream.flush();
  ASSERT_TRUE(eventually([&] { return stream.accepted() == 100; }));

  EXPECT_EQ(cli(node.endpoint(), "stream cancel --stream 1 --ids 90-99"),
            "stream 1: cancelled 10 queued and 0 running parameter sets\n");
  EXPECT_EQ(cli(node.endpoint(), "stream cancel --stream 1 --where 'id >= 80 and id < 85'"),
            "stream 1: cancelled 5 queued and 0 running parameter sets\n");
  EXPECT_EQ(cli(node.endpoint(), "stream cancel --stream 1 --ids 0,70-71,95"),
            "stream 1: cancelled 2 queued and 1 running parameter sets\n");
  const std::string base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  for (const auto& [flags, code_expected, expected] : std::vector<std::tuple<std::string, int, std::string>>{
           {"--stream 1 --ids 9-5", 2, "--ids: '9-5' ends before it begins"},
           {"--stream 1 --ids x", 2, "--ids: 'x' is not an id"},
           {"--stream 1 --ids 1,,2", 2, "--ids"},
           // Names are the stream's (its parameters', a program's outputs): the node checks them.
           {"--stream 1 --where 'bogus > 1'", 1, "filter 'bogus > 1': expected"},
           {"--stream 1 --where ok", 2, "has no clause on id or parameters"},
           {"--stream 1 --ids ''", 2, "needs --ids or --where"},
           {"--stream 1 --ids 1 --where 'id > 1'", 2, "excludes"},
           {"--stream 99 --ids 1", 1, "stream 99 is not running on this node"}}) {
    int code = 0;
    const auto out = run_command(base + " stream cancel " + flags, code);
    EXPECT_EQ(code, code_expected) << flags << ": " << out;
    EXPECT_NE(out.find(expected), std::string::npos) << flags << ": " << out;
  }

  gate.open();
  stream.close();
  const auto ran = collect(stream);
  ASSERT_EQ(ran.records.size(), 100u);
  const auto cancelled = [](std::uint64_t id) {
    return id == 0 || id == 70 || id == 71 || (id >= 80 && id < 85) || id >= 90;
  };
  std::vector<std::uint64_t> expected{1};
  std::erase_if(queued, cancelled);
  for (auto id : by_priority(queued, priority)) expected.push_back(id);
  const auto text = [](const std::vector<std::uint64_t>& ids) {
    std::string out;
    for (auto id : ids) out += std::to_string(id) + " ";
    return out;
  };
  EXPECT_EQ(text(ran.order), text(expected));
  EXPECT_EQ(ran.records.at(0).failure, Failure::cancelled);
  EXPECT_EQ(cli(node.endpoint(), "results --stream 1 --where failed --format count"), "18\n");
  const auto line =
      nlohmann::json::parse(cli(node.endpoint(), "results --stream 1 --where 'id == 85' --format json"));
  EXPECT_FALSE(line.contains("failure") && line["failure"] != "ok") << line;
  const auto zero =
      nlohmann::json::parse(cli(node.endpoint(), "results --stream 1 --where 'id == 0' --format json"));
  EXPECT_EQ(zero["failure"], "cancelled") << zero;
}

TEST(StreamControlsProcess, CliPushTakesPrioritiesFromANamedColumn) {
  NodeProcess node(kNodeConfig);
  const ScratchDir scratch("tessera-priorities");
  const auto& dir = scratch.path();
  const auto input = (dir / "params.csv").string();
  {
    std::ofstream params(input);
    params << "x,rank\n";
    for (int i = 0; i < 20; ++i) params << i << "," << (i % 4) << "\n";
  }
  const std::string base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  int code = 0;
  // The gated simulation takes one number: the rank column must not reach it.
  auto out = run_command(
      base + " stream push --simulation gated --quiet --input " + input + " --priority-column rank", code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "stream 1: 20 parameter sets, 20 results stored (0 failed)\n");
  std::istringstream json(cli(node.endpoint(), "results --stream 1 --format json"));
  std::size_t lines = 0;
  for (std::string line; std::getline(json, line); ++lines) {
    const auto parsed = nlohmann::json::parse(line);
    EXPECT_EQ(parsed["parameters"], nlohmann::json::array({double(parsed["id"].get<std::uint64_t>())}))
        << line;
  }
  EXPECT_EQ(lines, 20u);
  // The export's header keeps the parameter's name, and has no column for the priority.
  const auto csv = cli(node.endpoint(), "results --stream 1 --format csv");
  EXPECT_EQ(csv.rfind("id,x,result,status,error,node,pushed_at,", 0), 0u) << csv;

  out = run_command(
      base + " stream push --simulation gated --quiet --input " + input + " --priority-column nope", code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("--priority-column nope: no such column in the header of"), std::string::npos) << out;
  EXPECT_NE(out.find("(its columns: x, rank)"), std::string::npos) << out;
  {
    std::ofstream params(input);
    params << "1,2\n3,4\n";
  }
  out = run_command(
      base + " stream push --simulation gated --quiet --input " + input + " --priority-column x", code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("has no header row naming its columns"), std::string::npos) << out;
}

TEST(StreamControlsProcess, CliStreamsAGpuSimulationOverTheNodesConfiguredDevices) {
  NodeProcess node(
      "[node]\nname = \"gpus\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[worker]\nworkers = 1\nthreads_per_worker = 4\ngpus = [4, 6]\n[plugins]\npaths = "
      "[\"" TESSERA_TEST_PLUGIN "\"]\n");
  const ScratchDir scratch("tessera-gpus");
  const auto& dir = scratch.path();
  const auto input = (dir / "params.csv").string();
  {
    std::ofstream params(input);
    params << "x\n";
    for (int i = 0; i < 30; ++i) params << i << "\n";
  }
  const std::string base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  int code = 0;
  const auto out = run_command(base + " stream push --simulation on_gpu --quiet --input " + input, code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "stream 1: 30 parameter sets, 30 results stored (0 failed)\n");
  // Every set ran on one of the two devices, and each device had some.
  const auto on = [&](int device) {
    return std::stoi(cli(node.endpoint(), "results --stream 1 --where 'result == " + std::to_string(device) +
                                              "' --format count"));
  };
  EXPECT_EQ(on(4) + on(6), 30);
  EXPECT_GT(on(4), 0);
  EXPECT_GT(on(6), 0);
}

}  // namespace
