// Futures: submit, map, gather, as_completed, futures as arguments of later submits.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <set>
#include <tessera/tessera.hpp>
#include <thread>

namespace {

std::int64_t increment(std::int64_t x) {
  return x + 1;
}
TESSERA_TASK(increment);
std::int64_t add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add);
double scale_sum(const std::vector<double>& v, double factor) {
  double s = 0;
  for (double x : v) s += x;
  return s * factor;
}
TESSERA_TASK(scale_sum);
std::string greet(const std::string& name) {
  return "hello " + name;
}
TESSERA_TASK(greet);
std::int64_t sleepy(std::int64_t ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return ms;
}
TESSERA_TASK(sleepy);

TEST(Futures, SubmitReturnsTheResult) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto f = client.submit(increment, 41);
  EXPECT_EQ(f.result(), 42);
  EXPECT_EQ(f.status(), tessera::TaskState::done);
  EXPECT_EQ(client.submit(greet, std::string("tessera")).result(), "hello tessera");
  EXPECT_DOUBLE_EQ(client.submit(scale_sum, std::vector<double>{1, 2, 3}, 2.0).result(), 12.0);
}

TEST(Futures, SubmitByNameChecksCountAndTypes) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  using tessera::Value;
  EXPECT_EQ(client.submit_by_name("add", {Value(std::int64_t{2}), Value(std::int64_t{3})}).result().as_int(),
            5);
  auto message = [&](std::string_view name, std::vector<tessera::Arg> args) -> std::string {
    try {
      client.submit_by_name(name, std::move(args));
    } catch (const tessera::SubmissionError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message("nope", {}).find("unknown task function 'nope'"), std::string::npos);
  EXPECT_NE(message("add", {Value(std::int64_t{1})}).find("add(int, int) -> int takes 2 arguments, got 1"),
            std::string::npos);
  EXPECT_NE(
      message("add", {Value(std::int64_t{1}), Value("x")}).find("add: argument 1 expects int, got string"),
      std::string::npos)
      << message("add", {Value(std::int64_t{1}), Value("x")});
}

TEST(Futures, MapAndGatherKeepInputOrder) {
  tessera::LocalCluster cluster{{.workers = 3, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  std::vector<std::int64_t> inputs(10000);
  std::iota(inputs.begin(), inputs.end(), 0);
  auto results = client.gather(client.map(increment, inputs));
  ASSERT_EQ(results.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) ASSERT_EQ(results[i], inputs[i] + 1);
}

TEST(Futures, MapOverTwoRanges) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  std::vector<std::int64_t> a{1, 2, 3}, b{10, 20, 30};
  EXPECT_EQ(client.gather(client.map(add, a, b)), (std::vector<std::int64_t>{11, 22, 33}));
  std::vector<std::int64_t> shorter{1};
  EXPECT_THROW(client.map(add, a, shorter), tessera::SubmissionError);
}

TEST(Futures, FuturesAsArgumentsChainWithoutGathering) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto x = client.submit(increment, 1);
  auto y = client.submit(increment, x);
  auto z = client.submit(add, x, y);
  EXPECT_EQ(z.result(), 2 + 3);
  // A future of a finished task works as an argument too.
  EXPECT_EQ(client.submit(add, z, z).result(), 10);
  // Futures of a map feed a second map.
  auto first = client.map(increment, std::vector<std::int64_t>{1, 2, 3});
  auto second = client.map(increment, first);
  EXPECT_EQ(client.gather(second), (std::vector<std::int64_t>{3, 4, 5}));
}

TEST(Futures, AsCompletedYieldsInCompletionOrder) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 4}};
  tessera::Client client{cluster};
  auto futures = client.map(sleepy, std::vector<std::int64_t>{300, 1, 150, 60});
  std::vector<std::int64_t> order;
  for (const auto& f : tessera::as_completed(futures)) order.push_back(f.result());
  EXPECT_EQ(order, (std::vector<std::int64_t>{1, 60, 150, 300}));
}

TEST(Futures, WaitForTimesOutOnASlowTask) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto f = client.submit(sleepy, 300);
  EXPECT_FALSE(f.wait_for(std::chrono::milliseconds(10)));
  EXPECT_TRUE(f.wait_for(std::chrono::seconds(10)));
  EXPECT_EQ(f.result(), 300);
}

TEST(Futures, SlowTasksDoNotStallOtherWork) {
  // Two compute threads busy sleeping; a third worker keeps answering.
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto slow = client.submit(sleepy, 400);
  const auto start = std::chrono::steady_clock::now();
  auto fast = client.gather(client.map(increment, std::vector<std::int64_t>(100, 1)));
  EXPECT_EQ(fast.size(), 100u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(350));
  EXPECT_EQ(slow.result(), 400);
}

}  // namespace
