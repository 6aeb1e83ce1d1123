// Stress: 1,000,000 tasks in a random DAG, checked against a sequential evaluation of the same graph.
#include <gtest/gtest.h>

#include <random>
#include <tessera/tessera.hpp>

namespace {

std::int64_t leaf(std::int64_t seed) {
  return seed % 1000;
}
TESSERA_TASK(leaf);
// Mixing keeps values bounded and makes any misrouted input visible.
std::int64_t mix2(std::int64_t a, std::int64_t b) {
  return (a * 31 + b * 17 + 7) % 1000003;
}
TESSERA_TASK(mix2);
std::int64_t mix1(std::int64_t a) {
  return (a * 13 + 5) % 1000003;
}
TESSERA_TASK(mix1);

TEST(Stress, MillionTaskRandomDagMatchesSequentialEvaluation) {
  constexpr std::size_t kTasks = 1'000'000;
  std::mt19937_64 rng{20261129};
  // Node i depends on up to two earlier nodes chosen near it (a long, wide, irregular DAG).
  struct Node {
    int kind;  // 0 leaf, 1 one input, 2 two inputs
    std::size_t a, b;
  };
  std::vector<Node> nodes(kTasks);
  std::vector<std::int64_t> expected(kTasks);
  for (std::size_t i = 0; i < kTasks; ++i) {
    const int kind = i < 100 ? 0 : static_cast<int>(rng() % 3);
    const std::size_t window = std::min<std::size_t>(i, 5000);
    const std::size_t a = i - 1 - rng() % std::max<std::size_t>(window, 1);
    const std::size_t b = i - 1 - rng() % std::max<std::size_t>(window, 1);
    nodes[i] = Node{kind, a, b};
    expected[i] = kind == 0   ? leaf(static_cast<std::int64_t>(i))
                  : kind == 1 ? mix1(expected[a])
                              : mix2(expected[a], expected[b]);
  }
  std::vector<tessera::Delayed<std::int64_t>> graph(kTasks);
  for (std::size_t i = 0; i < kTasks; ++i) {
    const Node& n = nodes[i];
    graph[i] = n.kind == 0   ? tessera::delayed(leaf)(static_cast<std::int64_t>(i))
               : n.kind == 1 ? tessera::delayed(mix1)(graph[n.a])
                             : tessera::delayed(mix2)(graph[n.a], graph[n.b]);
  }
  tessera::LocalCluster cluster{{.workers = 3, .threads_per_worker = 1}};
  tessera::Client client{cluster};
  // Every node is wanted, so all of them run and every result is checked.
  const auto results = client.compute(graph);
  graph.clear();
  ASSERT_EQ(results.size(), kTasks);
  for (std::size_t i = 0; i < kTasks; ++i) ASSERT_EQ(results[i], expected[i]) << "node " << i;
  EXPECT_EQ(cluster.status().tasks_done, kTasks);
}

}  // namespace
