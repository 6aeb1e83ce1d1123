// Delayed graphs: compute of one, many and mixed values; persist; futures inside graphs; shared nodes;
// deep chains that must neither overflow the stack nor lose results.
#include <gtest/gtest.h>

#include <tessera/tessera.hpp>

namespace {

using tessera::delayed;

std::int64_t inc(std::int64_t x) {
  return x + 1;
}
TESSERA_TASK(inc);
std::int64_t add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add);
std::string label(std::int64_t x) {
  return "n=" + std::to_string(x);
}
TESSERA_TASK(label);
std::atomic<int> calls{0};
std::int64_t counted(std::int64_t x) {
  calls++;
  return x;
}
TESSERA_TASK(counted);

class DelayedTest : public ::testing::Test {
 protected:
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
};

TEST_F(DelayedTest, NothingRunsUntilCompute) {
  calls = 0;
  auto x = delayed(counted)(std::int64_t{5});
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(client.compute(x), 5);
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(DelayedTest, ComputesManyAndMixedTypes) {
  auto a = delayed(inc)(std::int64_t{1});
  auto b = delayed(add)(a, std::int64_t{10});
  auto s = delayed(label)(b);
  auto [av, bv, sv] = client.compute(a, b, s);
  EXPECT_EQ(av, 2);
  EXPECT_EQ(bv, 12);
  EXPECT_EQ(sv, "n=12");
  std::vector<tessera::Delayed<std::int64_t>> many;
  for (std::int64_t i = 0; i < 1000; ++i) many.push_back(delayed(add)(delayed(inc)(i), i));
  auto out = client.compute(many);
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(out[i], 2 * i + 1);
}

TEST_F(DelayedTest, SharedNodesRunOnce) {
  calls = 0;
  auto shared = delayed(counted)(std::int64_t{3});
  auto left = delayed(add)(shared, shared);
  auto right = delayed(inc)(shared);
  EXPECT_EQ(client.compute(delayed(add)(left, right)), 6 + 4);
  EXPECT_EQ(calls.load(), 1);
}

TEST_F(DelayedTest, PersistKeepsResultsOnWorkersAsFutures) {
  auto x = delayed(add)(delayed(inc)(std::int64_t{1}), std::int64_t{1});
  tessera::Future<std::int64_t> f = client.persist(x);
  EXPECT_EQ(f.result(), 3);
  // A persisted result feeds later work without recomputation.
  calls = 0;
  EXPECT_EQ(client.submit(add, f, f).result(), 6);
  EXPECT_EQ(client.compute(delayed(add)(f, std::int64_t{4})), 7);
}

TEST_F(DelayedTest, DeepChainNeitherOverflowsNorLoses) {
  auto x = delayed(inc)(std::int64_t{0});
  for (int i = 1; i < 200000; ++i) x = delayed(inc)(x);
  EXPECT_EQ(client.compute(x), 200000);
}

TEST_F(DelayedTest, WrongArgumentTypeIsCaughtBeforeRunning) {
  // Name-level checks happen at compile time for typed calls; a Value of the wrong kind is caught at
  // submission and names the function and the argument.
  auto by_name = tessera::register_task("delayed_test.untyped", [](tessera::Value v) { return v; });
  (void)by_name;
  tessera::GraphSpec g;
  g.add("k", "inc", {tessera::Value(2.5)});
  try {
    client.get(g, {"k"});
    FAIL();
  } catch (const tessera::SubmissionError& e) {
    EXPECT_NE(std::string(e.what()).find("inc argument 0 expects int, got double"), std::string::npos)
        << e.what();
  }
}

}  // namespace
