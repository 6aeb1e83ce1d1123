// Bags: from_sequence, map, filter, fold and reduce, across partition counts (including more
// partitions than items), checked against plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <tessera/tessera.hpp>

namespace {

std::int64_t square(std::int64_t x) {
  return x * x;
}
TESSERA_TASK(square);
bool is_even(std::int64_t x) {
  return x % 2 == 0;
}
TESSERA_TASK(is_even);
std::int64_t plus(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(plus);
double total(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0);
}
TESSERA_TASK(total);

using Bag = tessera::Bag<std::int64_t>;

class BagTest : public ::testing::TestWithParam<std::uint32_t> {
 protected:
  tessera::LocalCluster cluster{{.workers = 2, .threads_per_worker = 2}};
  tessera::Client client{cluster};
};

TEST_P(BagTest, MapFilterFoldMatchLoops) {
  std::vector<std::int64_t> items(101);
  std::iota(items.begin(), items.end(), -50);
  auto bag = Bag::from_sequence(items, GetParam());
  EXPECT_EQ(bag.npartitions(), std::min<std::size_t>(GetParam(), items.size()));

  std::vector<std::int64_t> squares;
  for (auto x : items) squares.push_back(x * x);
  EXPECT_EQ(bag.map(square).compute(client), squares);

  std::vector<std::int64_t> evens;
  for (auto x : items)
    if (x % 2 == 0) evens.push_back(x);
  EXPECT_EQ(bag.filter(is_even).compute(client), evens);

  std::int64_t sum_of_even_squares = 0;
  for (auto x : evens) sum_of_even_squares += x * x;
  EXPECT_EQ(client.compute(bag.filter(is_even).map(square).fold(plus, std::int64_t{0})), sum_of_even_squares);
  EXPECT_EQ(client.compute(bag.map(square).reduce(plus)),
            std::accumulate(squares.begin(), squares.end(), std::int64_t{0}));
}

INSTANTIATE_TEST_SUITE_P(Partitions, BagTest, ::testing::Values(1u, 3u, 7u, 100u, 500u));

TEST(Bag, ItemsMayBeVectors) {
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client client{cluster};
  std::vector<std::vector<double>> rows{{1, 2}, {3}, {}, {4, 5, 6}};
  auto totals = tessera::Bag<std::vector<double>>::from_sequence(rows, 2).map(total).compute(client);
  EXPECT_EQ(totals, (std::vector<double>{3, 3, 0, 15}));
}

TEST(Bag, ZeroPartitionsIsAClearError) {
  EXPECT_THROW(Bag::from_sequence({1, 2}, 0), tessera::SubmissionError);
}

}  // namespace
