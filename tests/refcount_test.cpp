// Reference counting: a result lives while a future or an unfinished dependent needs it, and its
// memory returns when none does; intermediate results of a graph are freed as the graph runs.
#include <gtest/gtest.h>

#include <numeric>
#include <tessera/tessera.hpp>

#include "actors/held_results.hpp"
#include "test_util.hpp"

namespace {

using tessera::HeldResults;
using tessera::testing::eventually;

std::vector<double> block(std::int64_t n) {
  return std::vector<double>(static_cast<std::size_t>(n), 1.0);
}
TESSERA_TASK(block);
double block_sum(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}
TESSERA_TASK(block_sum);

bool nothing_held(tessera::LocalCluster& cluster) {
  return HeldResults::instance().count.load() == 0 && HeldResults::instance().bytes.load() == 0 &&
         cluster.status().operations == 0;
}

TEST(RefCount, DroppingFuturesFreesResultsOnWorkers) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  {
    auto futures = client.map(block, std::vector<std::int64_t>(64, 1 << 17));  // 64 MiB in all
    for (auto& f : futures) f.wait();
    EXPECT_EQ(HeldResults::instance().count.load(), 64);
    EXPECT_EQ(HeldResults::instance().bytes.load(), 64ll * (1 << 17) * 8);
    // A copy keeps its result alive after the original is gone.
    tessera::Future<std::vector<double>> kept = futures[5];
    futures.clear();
    EXPECT_TRUE(eventually([] { return HeldResults::instance().count.load() == 1; }));
    EXPECT_EQ(kept.result().size(), std::size_t{1} << 17);
  }
  EXPECT_TRUE(eventually([&] { return nothing_held(cluster); }));
}

TEST(RefCount, IntermediatesAreFreedOnceTheirConsumersFinish) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  std::vector<tessera::Delayed<double>> sums;
  for (int i = 0; i < 32; ++i)
    sums.push_back(tessera::delayed(block_sum)(tessera::delayed(block)(std::int64_t{1 << 16})));
  auto futures = client.persist(sums);
  for (auto& f : futures) EXPECT_DOUBLE_EQ(f.result(), double(1 << 16));
  // Only the 32 small sums remain held: every 512 KiB block was released when its sum finished.
  EXPECT_TRUE(eventually([] { return HeldResults::instance().count.load() == 32; }));
  EXPECT_EQ(HeldResults::instance().bytes.load(), 0);
  futures.clear();
  EXPECT_TRUE(eventually([&] { return nothing_held(cluster); }));
}

TEST(RefCount, ComputeLeavesNothingBehind) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  EXPECT_DOUBLE_EQ(client.compute(tessera::delayed(block_sum)(tessera::delayed(block)(std::int64_t{1000}))),
                   1000.0);
  EXPECT_TRUE(eventually([&] { return nothing_held(cluster); }));
}

}  // namespace
