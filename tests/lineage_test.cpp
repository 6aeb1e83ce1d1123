// Lineage: when the scheduler declares a worker lost, the tasks it was running and the results it held
// that are still wanted are computed again elsewhere — even when their inputs were released long ago —
// and every future ends with the value it would have had without the failure.
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <tessera/tessera.hpp>
#include <thread>

#include "actors/messages.hpp"
#include "client/local_cluster_access.hpp"
#include "test_util.hpp"

namespace {

std::int64_t slow_increment(std::int64_t x) {
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  return x + 1;
}
TESSERA_TASK(slow_increment);
std::int64_t lineage_add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(lineage_add);

void declare_lost(tessera::LocalCluster& cluster, std::uint32_t worker) {
  caf::anon_send(tessera::detail::LocalClusterAccess::engine(cluster).scheduler(), tessera::lost_atom::value,
                 worker);
}

TEST(Lineage, RunningAndHeldTasksOfALostWorkerAreRecomputed) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  std::vector<std::int64_t> inputs(300);
  std::iota(inputs.begin(), inputs.end(), 0);
  auto futures = client.map(slow_increment, inputs);
  ASSERT_TRUE(tessera::testing::eventually([&] { return cluster.status().tasks_done >= 60; }));
  declare_lost(cluster, 1);
  const auto values = client.gather(futures);
  for (std::size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(values[i], inputs[i] + 1);
  const auto status = cluster.status();
  EXPECT_EQ(status.workers, 1u);
  EXPECT_EQ(status.workers_lost, 1u);
  // Worker 1 had finished some tasks whose futures are still held: those results were computed again.
  EXPECT_GT(status.tasks_recomputed, 0u);
  // The survivors keep working.
  EXPECT_EQ(client.submit(slow_increment, std::int64_t{41}).result(), 42);
}

TEST(Lineage, LostResultsAreRecomputedFromReleasedInputs) {
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  std::vector<std::int64_t> inputs(64);
  std::iota(inputs.begin(), inputs.end(), 0);
  std::vector<tessera::Future<std::int64_t>> second;
  {
    auto first = client.map(slow_increment, inputs);
    second = client.map(lineage_add, first, inputs);
    client.gather(second);
  }  // the first layer's futures are gone: its results are freed, its records forgotten
  ASSERT_TRUE(tessera::testing::eventually([&] { return cluster.status().operations == 1; }));
  declare_lost(cluster, 0);
  // A new layer needs the second layer's results; those on worker 0 are gone and so are their inputs.
  std::vector<std::int64_t> hundreds(inputs.size(), 100);
  auto third = client.map(lineage_add, second, hundreds);
  const auto values = client.gather(third);
  for (std::size_t i = 0; i < inputs.size(); ++i) EXPECT_EQ(values[i], 2 * inputs[i] + 1 + 100);
  EXPECT_GT(cluster.status().tasks_recomputed, 0u);
  EXPECT_EQ(cluster.status().workers, 1u);
}

TEST(Lineage, ChainsAcrossALostWorkerComplete) {
  tessera::LocalCluster cluster{{.workers = 3, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  using tessera::delayed;
  std::vector<tessera::Delayed<std::int64_t>> heads;
  for (std::int64_t chain = 0; chain < 12; ++chain) {
    auto x = delayed(slow_increment)(chain);
    for (int step = 0; step < 20; ++step) x = delayed(slow_increment)(x);
    heads.push_back(x);
  }
  std::thread saboteur([&] {
    tessera::testing::eventually([&] { return cluster.status().tasks_done >= 40; });
    declare_lost(cluster, 2);
  });
  const auto values = client.compute(heads);
  saboteur.join();
  for (std::int64_t chain = 0; chain < 12; ++chain) EXPECT_EQ(values[chain], chain + 21);
  EXPECT_EQ(cluster.status().workers_lost, 1u);
  // Nothing recomputed is left stranded.
  EXPECT_TRUE(tessera::testing::eventually([&] { return cluster.status().tasks_pending == 0; }));
}

}  // namespace
