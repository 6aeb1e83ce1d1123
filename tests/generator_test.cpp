// Adaptive ensembles: a generator beside its stream proposes parameter sets, reads each result once it
// is stored and proposes more, keeping every simulation actor busy, until it is done or its budget is
// spent. The shipped APOSMM-like generator against a random sweep of the same budget, through the client
// API and through `tessera stream run` against a real node; a generator that fails; bad requests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <tessera/tessera.hpp>

#include "plugin_tasks.hpp"
#include "support/node_process.hpp"
#include "test_util.hpp"

namespace {

using tessera::StreamRecord;

constexpr double kCamelMinimum = -1.0316284534898774;

tessera::Config camel_box() {
  tessera::Config config;
  config.set("lower", tessera::to_value(std::vector<double>{-3, -2}));
  config.set("upper", tessera::to_value(std::vector<double>{3, 2}));
  config.set("seed", tessera::to_value(std::int64_t{7}));
  return config;
}

// The records of a finished stream in the order they were stored.
std::vector<StreamRecord> in_completion_order(tessera::Stream& stream) {
  std::vector<StreamRecord> records;
  for (const auto& r : stream.results()) records.push_back(r);
  return records;
}

// How many results were stored when one first came within `tolerance` of the minimum; records + 1
// when none did.
std::size_t sets_to_reach(const std::vector<StreamRecord>& records, double tolerance) {
  for (std::size_t i = 0; i < records.size(); ++i)
    if (!records[i].failed && tessera::from_value<double>(records[i].value) - kCamelMinimum < tolerance)
      return i + 1;
  return records.size() + 1;
}

// The share of the slots' time the simulation ran, from the first start to the last finish.
double utilisation(const std::vector<StreamRecord>& records, std::size_t slots) {
  double busy = 0, first = 1e300, last = 0;
  for (const auto& r : records) {
    busy += r.timeline.finished - r.timeline.started;
    first = std::min(first, r.timeline.started);
    last = std::max(last, r.timeline.finished);
  }
  return busy / (double(slots) * (last - first));
}

// The most sets running at one moment (from their timelines): a count, not a speed, so a loaded machine
// does not change it.
std::size_t most_at_once(const std::vector<StreamRecord>& records) {
  std::vector<std::pair<double, int>> events;  // a finish sorts before a start at the same instant
  for (const auto& r : records) {
    events.emplace_back(r.timeline.started, 1);
    events.emplace_back(r.timeline.finished, -1);
  }
  std::sort(events.begin(), events.end());
  std::size_t now = 0, most = 0;
  for (const auto& [at, change] : events) {
    now = change > 0 ? now + 1 : now - 1;
    most = std::max(most, now);
  }
  return most;
}

TEST(Generator, AposmmReachesTheMinimumInFewerSetsThanARandomSweepNeedsForAHundredth) {
  EXPECT_GE(plugin_tasks::gated_runs.load(), 0);
  constexpr std::size_t kSlots = 4;
  constexpr std::uint64_t kBudget = 3000;
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = kSlots}};
  tessera::Client client{cluster};
  tessera::StreamOptions simulation;
  simulation.config.set("sleep_ms", tessera::to_value(std::int64_t{2}));  // so that busy slots show

  auto ensemble = client.ensemble("aposmm", "six_hump_camel",
                                  {.budget = kBudget, .config = camel_box(), .stream = simulation});
  EXPECT_THROW(ensemble.push(std::vector<double>{0, 0}), std::logic_error);
  ASSERT_TRUE(ensemble.wait(std::chrono::steady_clock::now() + std::chrono::minutes(2)));
  EXPECT_TRUE(ensemble.error().empty()) << ensemble.error();
  const auto adaptive = in_completion_order(ensemble);
  ASSERT_EQ(adaptive.size(), kBudget);  // it is not done before its budget: it searches on
  std::map<std::uint64_t, int> seen;
  for (const auto& r : adaptive) {
    EXPECT_FALSE(r.failed) << r.error;
    EXPECT_EQ(++seen[r.id], 1) << "id " << r.id << " twice";
  }
  EXPECT_EQ(seen.rbegin()->first, kBudget - 1);

  auto sweep = client.stream("six_hump_camel", simulation);
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> x(-3, 3), y(-2, 2);
  for (std::uint64_t i = 0; i < kBudget; ++i) sweep.push(std::vector<double>{x(random), y(random)});
  sweep.close();
  const auto uniform = in_completion_order(sweep);
  ASSERT_EQ(uniform.size(), kBudget);

  const std::size_t adaptive_sets = sets_to_reach(adaptive, 1e-6);
  const std::size_t uniform_sets = sets_to_reach(uniform, 1e-2);
  const double busy = utilisation(adaptive, kSlots);
  std::cout << "aposmm: " << adaptive_sets << " sets to within 1e-6 of the minimum; random sweep: "
            << (uniform_sets > kBudget ? "not within " + std::to_string(kBudget)
                                       : std::to_string(uniform_sets))
            << " sets to within 1e-2; utilisation of the " << kSlots << " slots " << busy << " (random sweep "
            << utilisation(uniform, kSlots) << ")" << std::endl;
  RecordProperty("aposmm_sets_to_1e-6", static_cast<int>(adaptive_sets));
  RecordProperty("random_sets_to_1e-2", static_cast<int>(uniform_sets));
  ASSERT_LE(adaptive_sets, kBudget) << "aposmm did not reach the minimum to 1e-6";
  EXPECT_LT(adaptive_sets, uniform_sets);
  // Every slot fed at once: the generator proposes ahead of the results. (Its utilisation, printed above,
  // is a speed and belongs to bench/: on a loaded machine it falls for the random sweep too.)
  EXPECT_EQ(most_at_once(adaptive), kSlots);
}

TEST(Generator, AGeneratorThatThrowsEndsTheEnsembleWithItsErrorAndItsSetsAreAnswered) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::Config config;
  config.set("count", tessera::to_value(std::int64_t{50}));
  config.set("fail_at", tessera::to_value(std::int64_t{20}));
  auto ensemble = client.ensemble("faulty", "gated", {.budget = 1000, .config = config});
  ASSERT_TRUE(ensemble.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_NE(ensemble.error().find("generator 'faulty' of stream"), std::string::npos) << ensemble.error();
  EXPECT_NE(ensemble.error().find("it failed when told the result of set 20: set 20 upset it"),
            std::string::npos)
      << ensemble.error();
  // What it proposed was accepted and is answered, once each.
  const auto records = in_completion_order(ensemble);
  EXPECT_EQ(records.size(), ensemble.accepted());
  EXPECT_GT(records.size(), 20u);
  EXPECT_EQ(client.results(ensemble.id()).count(), records.size());
}

TEST(Generator, AGeneratorThatIsDoneEndsTheEnsembleBeforeItsBudget) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  tessera::Config config;
  config.set("count", tessera::to_value(std::int64_t{30}));
  auto ensemble = client.ensemble("faulty", "gated", {.budget = 1000, .config = config});
  ASSERT_TRUE(ensemble.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_TRUE(ensemble.error().empty()) << ensemble.error();
  EXPECT_EQ(in_completion_order(ensemble).size(), 30u);
  // And a budget below what it would propose ends it there.
  auto short_one = client.ensemble("faulty", "gated", {.budget = 7, .config = config});
  ASSERT_TRUE(short_one.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  EXPECT_EQ(in_completion_order(short_one).size(), 7u);
}

TEST(Generator, BadEnsemblesAreRefusedNamingWhatIsWrong) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  const auto refused = [&](auto open, const std::string& expected) {
    try {
      open();
      ADD_FAILURE() << "accepted: " << expected;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused([&] { client.ensemble("aposmm", "six_hump_camel", {.budget = 0, .config = camel_box()}); },
          "the budget of generator 'aposmm' is 0 parameter sets");
  refused(
      [&] { client.ensemble("aposmm", "six_hump_camel", {.budget = 2'000'000'000, .config = camel_box()}); },
      "it must be in [1, 1000000000]");
  refused([&] { client.ensemble("nope", "six_hump_camel", {.budget = 10}); },
          "no generator is registered as 'nope' (known: aposmm, faulty");
  refused([&] { client.ensemble("aposmm", "nope", {.budget = 10, .config = camel_box()}); },
          "unknown simulation 'nope'");
  // The generator's config is checked where it runs: the ensemble ends with the generator's error.
  auto unbounded = client.ensemble("aposmm", "six_hump_camel", {.budget = 10});
  ASSERT_TRUE(unbounded.wait(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  EXPECT_NE(unbounded.error().find("generator 'aposmm'"), std::string::npos) << unbounded.error();
  EXPECT_NE(unbounded.error().find("lower"), std::string::npos) << unbounded.error();
}

// ---- Through a real node and the CLI ----

using tessera::testing::cli;
using tessera::testing::NodeProcess;
using tessera::testing::run_command;

TEST(GeneratorProcess, CliStreamRunFindsTheMinimumAcrossANode) {
  NodeProcess node(
      "[node]\nname = \"ensemble\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[worker]\nworkers = 1\nthreads_per_worker = 2\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n");
  const std::string base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  int code = 0;
  auto out = run_command(base +
                             " stream run --generator aposmm --simulation six_hump_camel --budget 1500 "
                             "--config lower=-3,-2 --config upper=3,2 --config seed=3 --quiet",
                         code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(
      out.find("stream 1: generator 'aposmm' proposed 1500 parameter sets, 1500 results stored (0 failed)"),
      std::string::npos)
      << out;
  EXPECT_NE(out.find("least result -1.03162845"), std::string::npos) << out;
  EXPECT_EQ(cli(node.endpoint(), "results --stream 1 --format count"), "1500\n");

  for (const auto& [flags, code_expected, expected] : std::vector<std::tuple<std::string, int, std::string>>{
           {"--generator aposmm --simulation six_hump_camel --budget 0", 2, "--budget"},
           {"--generator aposmm --simulation six_hump_camel", 2, "--budget is required"},
           {"--generator aposmm --simulation six_hump_camel --budget 5 --config lower", 2,
            "--config lower: expected KEY=VALUE"},
           {"--generator aposmm --simulation six_hump_camel --budget 5 --config lower=nan", 2,
            "--config lower=nan: the value is not a finite number"},
           {"--generator aposmm --simulation six_hump_camel --budget 5 --config a=1 --config a=2", 2,
            "key a is given twice"},
           {"--generator nope --simulation six_hump_camel --budget 5", 1,
            "no generator is registered as 'nope'"},
           {"--generator faulty --simulation gated --budget 50 --config count=40 --config fail_at=3", 1,
            "it failed when told the result of set 3"}}) {
    const auto text = run_command(base + " stream run --quiet " + flags, code);
    EXPECT_EQ(code, code_expected) << flags << ": " << text;
    EXPECT_NE(text.find(expected), std::string::npos) << flags << ": " << text;
  }
}

}  // namespace
