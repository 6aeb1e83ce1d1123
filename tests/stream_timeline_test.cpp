// Each parameter set's timeline (pushed, dispatched, started, finished, stored), kept with its result:
// in the records a stream delivers, in the store, as query fields (run_seconds, queue_seconds, ...), in
// `tessera results --format timeline`, and as the CSV export's last columns. Embedded, under both
// isolations, and through a real node and the CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tessera/tessera.hpp>

#include "fork_safety.hpp"
#include "plugin_tasks.hpp"
#include "support/node_process.hpp"

namespace {

using tessera::SetTimeline;

// Every step in order, and the run at least as long as the simulation sleeps.
void expect_ordered(const SetTimeline& t, double at_least_run, const std::string& what) {
  EXPECT_GT(t.pushed, 1.6e9) << what;  // after 2020: seconds since the Unix epoch
  EXPECT_LE(t.pushed, t.dispatched) << what;
  EXPECT_LE(t.dispatched, t.started + 1e-3) << what;  // the worker's clock may read a little behind
  EXPECT_GE(t.finished - t.started, at_least_run) << what;
  EXPECT_LE(t.finished, t.stored + 1e-3) << what;
}

void run_and_check(tessera::Isolation isolation) {
  EXPECT_GE(plugin_tasks::gated_runs.load(), 0);
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.isolation = isolation;
  options.config.set("pause_us", tessera::to_value(std::int64_t{20000}));
  auto stream = client.stream("pause_square", options);
  const int n = 12;
  for (int i = 0; i < n; ++i) stream.push(double(i));
  stream.close();
  int seen = 0;
  for (const auto& r : stream.results()) {
    ++seen;
    expect_ordered(r.timeline, 0.02, "delivered " + std::to_string(r.id));
  }
  EXPECT_EQ(seen, n);
  auto stored = client.results(stream.id());
  const auto three = stored.get(3);
  ASSERT_TRUE(three);
  expect_ordered(three->timeline, 0.02, "stored 3");
  EXPECT_GT(three->timeline.stored, 0);
  // Twelve 20 ms sets on two slots: the last ones wait for the first.
  EXPECT_EQ(stored.where("run_seconds >= 0.02").count(), std::uint64_t(n));
  EXPECT_GE(stored.where("queue_seconds > 0.02").count(), 1u);
  EXPECT_EQ(stored.where("queue_seconds > 1000").count(), 0u);
}

TEST(StreamTimeline, EachSetsStepsAreKeptInOrderUnderThreadIsolation) {
  run_and_check(tessera::Isolation::thread);
}

TEST(StreamTimeline, EachSetsStepsAreKeptInOrderUnderProcessIsolation) {
  SKIP_UNLESS_FORK_IS_SAFE();
  run_and_check(tessera::Isolation::process);
}

using tessera::testing::cli;
using tessera::testing::NodeProcess;
using tessera::testing::run_command;

TEST(StreamTimelineProcess, TheCliQueriesAndSummarisesTimelines) {
  NodeProcess node(
      "[node]\nname = \"timeline\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[worker]\nworkers = 1\nthreads_per_worker = 2\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n");
  {
    tessera::Client client(node.endpoint());
    tessera::StreamOptions options;
    options.config.set("pause_us", tessera::to_value(std::int64_t{20000}));
    auto stream = client.stream("pause_square", options);
    for (int i = 0; i < 10; ++i) stream.push(double(i));
    stream.close();
    for (const auto& r : stream.results()) expect_ordered(r.timeline, 0.02, "remote " + std::to_string(r.id));
    // Records read back through the node keep their timeline.
    const auto four = client.results(stream.id()).get(4);
    ASSERT_TRUE(four);
    expect_ordered(four->timeline, 0.02, "stored remotely 4");
  }
  const auto summary =
      nlohmann::json::parse(cli(node.endpoint(), "results --stream 1 --field run_seconds --format summary"));
  EXPECT_EQ(summary["numeric"], 10) << summary;
  EXPECT_GE(summary["min"].get<double>(), 0.02) << summary;
  EXPECT_EQ(cli(node.endpoint(), "results --stream 1 --where 'queue_seconds > 1000' --format count"), "0\n");
  const auto timeline = nlohmann::json::parse(cli(node.endpoint(), "results --stream 1 --format timeline"));
  EXPECT_EQ(timeline["count"], 10) << timeline;
  EXPECT_EQ(timeline["run_seconds"]["count"], 10) << timeline;
  EXPECT_GE(timeline["run_seconds"]["p50"].get<double>(), 0.02) << timeline;
  EXPECT_GE(timeline["run_seconds"]["total"].get<double>(), 0.2) << timeline;
  EXPECT_GE(timeline["span_seconds"].get<double>(), 0.1) << timeline;  // 10 x 20 ms on 2 slots at least
  EXPECT_EQ(timeline["queue_seconds"]["count"], 10) << timeline;
  // The JSON export carries each set's timeline; the CSV's last five columns are its times.
  const auto line =
      nlohmann::json::parse(cli(node.endpoint(), "results --stream 1 --where 'id == 4' --format json"));
  ASSERT_TRUE(line.contains("timeline")) << line;
  EXPECT_GE(line["timeline"]["finished"].get<double>() - line["timeline"]["started"].get<double>(), 0.02)
      << line;
  std::istringstream csv(cli(node.endpoint(), "results --stream 1 --format csv"));
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  EXPECT_NE(header.find(",pushed_at,dispatched_at,started_at,finished_at,stored_at"), std::string::npos)
      << header;
  EXPECT_EQ(std::count(row.begin(), row.end(), ','), std::count(header.begin(), header.end(), ',')) << row;
  // A timeline field that does not exist is named in the error.
  int code = 0;
  const auto out = run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint() +
                                   " results --stream 1 --where 'waiting_seconds > 1' --format count",
                               code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("a timeline field"), std::string::npos) << out;
}

}  // namespace
