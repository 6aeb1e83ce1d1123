// Scaling: workers join and retire while work runs; results held by a retiring worker move to the
// others, and every result stays correct.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <tessera/tessera.hpp>
#include <thread>

#include "actors/held_results.hpp"
#include "test_util.hpp"

namespace {

std::int64_t slow_double(std::int64_t x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return 2 * x;
}
TESSERA_TASK(slow_double);
std::int64_t add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add);

std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(Scale, UpAndDownWhileWorkRuns) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  auto futures = client.map(slow_double, range(2000));
  cluster.scale(4);
  EXPECT_EQ(cluster.workers(), 4u);
  futures[200].wait();
  cluster.scale(2);
  auto more = client.map(slow_double, range(500));
  cluster.scale(3);
  auto results = client.gather(futures);
  for (std::int64_t i = 0; i < 2000; ++i) ASSERT_EQ(results[i], 2 * i);
  auto second = client.gather(more);
  for (std::int64_t i = 0; i < 500; ++i) ASSERT_EQ(second[i], 2 * i);
  EXPECT_TRUE(cluster.wait_for_workers(3));
}

TEST(Scale, ResultsOfARetiredWorkerMoveAndStayUsable) {
  tessera::LocalCluster cluster{{.workers = 3, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  auto futures = client.map(slow_double, range(300));
  for (auto& f : futures) f.wait();
  const auto held = tessera::HeldResults::instance().count.load();
  cluster.scale(1);
  ASSERT_TRUE(cluster.wait_for_workers(1));
  // The moved results arrive at their new worker asynchronously; none is lost.
  EXPECT_TRUE(
      tessera::testing::eventually([&] { return tessera::HeldResults::instance().count.load() == held; }));
  // The held results feed new tasks on the remaining worker.
  auto sums = client.map(add, futures, futures);
  auto out = client.gather(sums);
  for (std::int64_t i = 0; i < 300; ++i) ASSERT_EQ(out[i], 4 * i);
}

TEST(Scale, ScalingToZeroIsRejected) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 1}};
  EXPECT_THROW(cluster.scale(0), std::invalid_argument);
}

}  // namespace
