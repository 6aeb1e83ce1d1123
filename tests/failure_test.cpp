// Failures: a task that throws holds its error (function, key, message); gather rethrows it; what
// depends on it is cancelled with that cause; everything else finishes and the cluster keeps working.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <tessera/tessera.hpp>
#include <thread>

#include "test_util.hpp"

namespace {

std::int64_t fragile(std::int64_t x) {
  if (x == 13) throw std::runtime_error("unlucky number " + std::to_string(x));
  return x;
}
TESSERA_TASK(fragile);
std::int64_t add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add);
std::int64_t throws_int(std::int64_t) {
  throw 42;
}
TESSERA_TASK(throws_int);

class FailureTest : public ::testing::Test {
 protected:
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
};

TEST_F(FailureTest, ErrorNamesFunctionKeyAndMessage) {
  auto f = client.submit(fragile, 13);
  f.wait();
  EXPECT_EQ(f.status(), tessera::TaskState::erred);
  auto error = f.exception();
  ASSERT_TRUE(error);
  EXPECT_EQ(error->function(), "fragile");
  EXPECT_EQ(error->message(), "unlucky number 13");
  EXPECT_NE(error->key().find("fragile-"), std::string::npos);
  EXPECT_FALSE(error->cancelled());
  try {
    f.result();
    FAIL();
  } catch (const tessera::TaskFailed& e) {
    EXPECT_NE(std::string(e.what()).find("(fragile) failed: unlucky number 13"), std::string::npos)
        << e.what();
  }
}

TEST_F(FailureTest, GatherRethrowsAndOtherTasksFinish) {
  std::vector<std::int64_t> inputs(100);
  std::iota(inputs.begin(), inputs.end(), 0);
  auto futures = client.map(fragile, inputs);
  EXPECT_THROW(client.gather(futures), tessera::TaskFailed);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (i == 13) {
      EXPECT_EQ(futures[i].status(), tessera::TaskState::erred);
    } else {
      EXPECT_EQ(futures[i].result(), static_cast<std::int64_t>(i));
    }
  }
}

TEST_F(FailureTest, DependentsAreCancelledWithTheCause) {
  auto bad = client.submit(fragile, 13);
  auto child = client.submit(add, bad, 1);
  auto grandchild = client.submit(add, child, child);
  auto unrelated = client.submit(add, 1, 2);
  grandchild.wait();
  EXPECT_EQ(child.status(), tessera::TaskState::cancelled);
  EXPECT_EQ(grandchild.status(), tessera::TaskState::cancelled);
  ASSERT_TRUE(grandchild.exception());
  EXPECT_TRUE(grandchild.exception()->cancelled());
  EXPECT_NE(grandchild.exception()->message().find("unlucky number 13"), std::string::npos)
      << grandchild.exception()->message();
  EXPECT_NE(grandchild.exception()->message().find(bad.exception()->key()), std::string::npos);
  EXPECT_EQ(unrelated.result(), 3);
  // A later submission that depends on the failed future is cancelled at once, naming the real cause.
  auto late = client.submit(add, bad, 5);
  late.wait();
  EXPECT_EQ(late.status(), tessera::TaskState::cancelled);
  EXPECT_NE(late.exception()->message().find("unlucky number 13"), std::string::npos)
      << late.exception()->message();
}

TEST_F(FailureTest, DelayedComputeRethrowsTheCause) {
  auto graph = tessera::delayed(add)(tessera::delayed(fragile)(std::int64_t{13}), std::int64_t{1});
  try {
    client.compute(graph);
    FAIL();
  } catch (const tessera::TaskFailed& e) {
    EXPECT_TRUE(e.cancelled());
    EXPECT_NE(e.message().find("unlucky number 13"), std::string::npos);
  }
  EXPECT_EQ(client.compute(tessera::delayed(add)(std::int64_t{2}, std::int64_t{2})), 4);
}

TEST_F(FailureTest, ClientCancelStopsQueuedWorkAndItsDependents) {
  auto sleepy = tessera::register_task("failure_test.nap", [](std::int64_t ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return ms;
  });
  auto futures = client.map(sleepy, std::vector<std::int64_t>(16, 100));
  auto total = client.submit(add, futures[15], futures[14]);
  client.cancel(futures);
  for (auto& f : futures) f.wait();
  total.wait();
  int cancelled = 0;
  for (auto& f : futures) cancelled += f.status() == tessera::TaskState::cancelled;
  EXPECT_GE(cancelled, 8);  // at most 4 threads x 2 were already running
  EXPECT_EQ(total.status(), tessera::TaskState::cancelled);
  ASSERT_TRUE(total.exception());
  EXPECT_NE(total.exception()->message().find("cancelled by the client"), std::string::npos);
  EXPECT_EQ(client.submit(add, 1, 1).result(), 2);
}

TEST_F(FailureTest, NonStandardExceptionsAreCaught) {
  auto f = client.submit(throws_int, 1);
  f.wait();
  ASSERT_TRUE(f.exception());
  EXPECT_EQ(f.exception()->message(), "unknown exception");
}

TEST_F(FailureTest, ReleasingAFutureCancelsWorkNobodyWants) {
  auto sleepy = tessera::register_task("failure_test.sleepy", [](std::int64_t ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return ms;
  });
  {
    // 8 tasks of 200 ms on 4 threads: those not started when the futures go are never run.
    auto futures = client.map(sleepy, std::vector<std::int64_t>(8, 200));
    futures[0].wait_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(tessera::testing::eventually([&] { return cluster.status().operations == 0; }));
  EXPECT_GE(cluster.status().tasks_cancelled, 1u);
}

}  // namespace

namespace {

// Failures Tessera names with a stand-in function read as what happened, not "task  ((submission))".
TEST(FailureText, StandInNamesReadPlainly) {
  EXPECT_STREQ(tessera::TaskFailed(tessera::kRefusedSubmissionFunction, "", "too many slots", false).what(),
               "the scheduler refused the submission: too many slots");
  EXPECT_STREQ(tessera::TaskFailed(tessera::kLostConnectionFunction, "", "no answer for 30 s", false).what(),
               "the connection to the scheduler was lost: no answer for 30 s");
  EXPECT_STREQ(tessera::TaskFailed(tessera::kSimulationFunction, "7", "13 is refused", false).what(),
               "parameter set 7 failed: 13 is refused");
  EXPECT_STREQ(tessera::TaskFailed("square", "3f2a", "boom", false).what(),
               "task 3f2a (square) failed: boom");
  EXPECT_STREQ(tessera::TaskFailed("square", "", "boom", true).what(),
               "a task of square was cancelled: boom");
}

}  // namespace
