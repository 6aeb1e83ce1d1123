// Dependent chains: a task whose input is the result of a task of the same operation on the same worker
// runs as a continuation on the compute thread that produced it. What must hold either way: large and
// small results along a chain, consumers of other operations along it, a failure in the middle, and
// that the chain does stay on one thread rather than bouncing through the operation actor per step.
#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <tessera/tessera.hpp>
#include <thread>

namespace {

using tessera::delayed;

// 2 KiB of doubles: above the size kept in a slot, so each step's result goes through the chunk store.
std::vector<double> grow(const std::vector<double>& xs) {
  std::vector<double> out(xs);
  out.resize(256);
  out[0] += 1;
  out[255] = out[0] * 2;
  return out;
}
TESSERA_TASK(grow);

std::int64_t step_or_throw(std::int64_t x) {
  if (x == 2500) throw std::runtime_error("step 2500 refuses");
  return x + 1;
}
TESSERA_TASK(step_or_throw);

std::int64_t step(std::int64_t x) {
  return x + 1;
}
TESSERA_TASK(step);

std::string label(std::int64_t x) {
  return std::to_string(x);
}
TESSERA_TASK(label);

// Which compute thread ran each step, in order.
std::mutex threads_mutex;
std::vector<std::thread::id> thread_of_step;
std::int64_t recorded_step(std::int64_t x) {
  std::lock_guard lock(threads_mutex);
  thread_of_step.push_back(std::this_thread::get_id());
  return x + 1;
}
TESSERA_TASK(recorded_step);

class ChainTest : public ::testing::Test {
 protected:
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  // Continuations are what is tested here: fusion would run these chains as fused tasks instead.
  tessera::Client client = tessera::Client{cluster}.with(tessera::GraphOptimizations{.fuse = false});
};

TEST_F(ChainTest, LargeResultsAlongAChainAreEachStepsOwn) {
  auto x = delayed(grow)(std::vector<double>{0.0});
  for (int i = 1; i < 3000; ++i) x = delayed(grow)(x);
  const auto out = client.compute(x);
  ASSERT_EQ(out.size(), 256u);
  EXPECT_EQ(out[0], 3000.0);
  EXPECT_EQ(out[255], 6000.0);
}

TEST_F(ChainTest, ConsumersOfAnotherOperationAlongTheChainGetEachStep) {
  auto x = delayed(step)(std::int64_t{0});
  std::vector<tessera::Delayed<std::string>> labels;
  for (int i = 1; i <= 5000; ++i) {
    x = delayed(step)(x);
    if (i % 7 == 0) labels.push_back(delayed(label)(x));
  }
  const auto out = client.compute(labels);
  ASSERT_EQ(out.size(), 5000u / 7);
  for (std::size_t k = 0; k < out.size(); ++k) EXPECT_EQ(out[k], std::to_string(7 * (k + 1) + 1)) << k;
  EXPECT_EQ(client.compute(x), 5001);
}

TEST_F(ChainTest, AFailureInTheMiddleFailsWhatDependsOnItNamingTheTaskAndTheClusterGoesOn) {
  auto x = delayed(step_or_throw)(std::int64_t{0});
  for (int i = 1; i < 5000; ++i) x = delayed(step_or_throw)(x);
  try {
    client.compute(x);
    FAIL() << "a chain through a throwing step gave a result";
  } catch (const tessera::TaskFailed& e) {
    EXPECT_NE(std::string(e.what()).find("step 2500 refuses"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("step_or_throw"), std::string::npos) << e.what();
  }
  auto y = delayed(step)(std::int64_t{0});
  for (int i = 1; i < 5000; ++i) y = delayed(step)(y);
  EXPECT_EQ(client.compute(y), 5000);
}

TEST_F(ChainTest, AChainStaysOnItsComputeThread) {
  thread_of_step.clear();
  constexpr int steps = 4000;
  auto x = delayed(recorded_step)(std::int64_t{0});
  for (int i = 1; i < steps; ++i) x = delayed(recorded_step)(x);
  EXPECT_EQ(client.compute(x), steps);
  std::lock_guard lock(threads_mutex);
  ASSERT_EQ(thread_of_step.size(), static_cast<std::size_t>(steps));
  int switches = 0;
  for (std::size_t i = 1; i < thread_of_step.size(); ++i)
    switches += thread_of_step[i] != thread_of_step[i - 1];
  // Each step through the actor would land on whichever of the pool's threads woke first; as
  // continuations, a job runs a millisecond's worth of steps before it reports.
  EXPECT_LT(switches, steps / 20) << "consecutive steps on different threads";
}

}  // namespace
