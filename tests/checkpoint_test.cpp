// Checkpoints in one process, with real RocksDB files in a temporary data_dir: persisted results stored
// under content-derived keys and read back instead of computed, by a cluster started again from the
// same data_dir and by another client; delayed values, arrays, bags and futures; listing and dropping;
// a record damaged on disk computed again and counted.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <atomic>
#include <filesystem>
#include <tessera/array.hpp>
#include <tessera/tessera.hpp>

#include "storage/checkpoint_store.hpp"
#include "storage/node_database.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using tessera::delayed;

std::atomic<int> slow_runs{0}, cheap_runs{0};

std::int64_t costly(std::int64_t x) {
  slow_runs++;
  return x * x;
}
TESSERA_TASK(costly);

std::int64_t shifted(std::int64_t x) {
  cheap_runs++;
  return x + 1000;
}
TESSERA_TASK(shifted);

struct TemporaryDir {
  fs::path path = fs::temp_directory_path() /
                  ("tessera-checkpoints-" + std::to_string(getpid()) + "-" +
                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  ~TemporaryDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

tessera::ClusterOptions on_disk(const fs::path& dir) {
  return {.workers = 2, .threads_per_worker = 2, .data_dir = dir.string()};
}

// Layer one (costly, checkpointed) and layer two (shifted) over it, n tasks each.
std::vector<tessera::Delayed<std::int64_t>> first_layer(std::int64_t n) {
  std::vector<tessera::Delayed<std::int64_t>> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(delayed(costly)(i));
  return out;
}

class Checkpoints : public ::testing::Test {
 protected:
  void SetUp() override { slow_runs = cheap_runs = 0; }
  TemporaryDir data;
};

TEST_F(Checkpoints, ARestartedClusterReadsThemInsteadOfComputing) {
  constexpr std::int64_t n = 40;
  {
    tessera::LocalCluster cluster(on_disk(data.path));
    tessera::Client client(cluster);
    auto stored = client.persist(first_layer(n), {.checkpoint = true});
    auto values = client.gather(stored);
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(values[i], i * i);
    EXPECT_EQ(slow_runs.load(), n);
    const auto status = cluster.status();
    EXPECT_EQ(status.checkpoints_written, std::uint64_t(n));
    EXPECT_EQ(status.checkpoints_stored, std::uint64_t(n));
    EXPECT_GT(status.checkpoint_bytes_written, 0u);
    EXPECT_EQ(status.tasks_from_checkpoint, 0u);
  }
  // The same graph, built anew in a new cluster on the same data_dir: layer one is read, layer two runs.
  tessera::LocalCluster cluster(on_disk(data.path));
  tessera::Client client(cluster);
  std::vector<tessera::Delayed<std::int64_t>> second;
  for (auto& d : first_layer(n)) second.push_back(delayed(shifted)(d));
  auto values = client.compute(second);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(values[i], i * i + 1000);
  EXPECT_EQ(slow_runs.load(), n);  // none ran again
  EXPECT_EQ(cheap_runs.load(), n);
  const auto status = cluster.status();
  EXPECT_EQ(status.tasks_from_checkpoint, std::uint64_t(n));
  EXPECT_EQ(status.tasks_done, std::uint64_t(n));  // only layer two was computed
  EXPECT_EQ(status.checkpoints_written, 0u);
}

TEST_F(Checkpoints, AnotherClientSubmittingTheSameTasksReadsThem) {
  tessera::LocalCluster cluster(on_disk(data.path));
  tessera::Client first(cluster);
  std::vector<std::int64_t> xs{3, 4, 5};
  auto futures = first.with({.checkpoint = true}).map(costly, xs);
  EXPECT_EQ(first.gather(futures), (std::vector<std::int64_t>{9, 16, 25}));
  tessera::Client second(cluster);
  EXPECT_EQ(second.gather(second.map(costly, xs)), (std::vector<std::int64_t>{9, 16, 25}));
  EXPECT_EQ(slow_runs.load(), 3);
  // Other literal arguments are other tasks.
  EXPECT_EQ(second.gather(second.map(costly, std::vector<std::int64_t>{6})), std::vector<std::int64_t>{36});
  EXPECT_EQ(slow_runs.load(), 4);
  EXPECT_EQ(cluster.status().tasks_from_checkpoint, 3u);
}

TEST_F(Checkpoints, ArraysAndBagsPersistTheirChunksAndPartitions) {
  Eigen::MatrixXd m = Eigen::MatrixXd::Random(300, 200);
  tessera::ArrayOptions chunks{.chunks = {100, 100}};
  std::uint64_t chunk_checkpoints = 0;
  {
    tessera::LocalCluster cluster(on_disk(data.path));
    tessera::Client client(cluster);
    auto x = (tessera::Array::from_eigen(m, chunks) * 2.0 + 1.0).persist(client, {.checkpoint = true});
    EXPECT_TRUE(x.compute(client).isApprox(m * 2.0 + Eigen::MatrixXd::Constant(300, 200, 1.0)));
    // A result computed from checkpointed tasks may come before their checkpoints are stored (the
    // scheduler's writer stores them beside it).
    EXPECT_TRUE(tessera::testing::eventually([&] { return cluster.status().checkpoints_written >= 6; }));
    chunk_checkpoints = cluster.status().checkpoints_written;
    EXPECT_EQ(chunk_checkpoints, 6u);  // one per chunk

    auto bag = tessera::Bag<std::int64_t>::from_sequence({1, 2, 3, 4, 5, 6}, 3).map(costly);
    auto persisted = bag.persist(client, {.checkpoint = true});
    EXPECT_EQ(persisted.compute(client), (std::vector<std::int64_t>{1, 4, 9, 16, 25, 36}));
    EXPECT_TRUE(tessera::testing::eventually(
        [&] { return cluster.status().checkpoints_written >= chunk_checkpoints + 3; }));
    EXPECT_EQ(cluster.status().checkpoints_written, chunk_checkpoints + 3);
  }
  tessera::LocalCluster cluster(on_disk(data.path));
  tessera::Client client(cluster);
  auto y = tessera::Array::from_eigen(m, chunks) * 2.0 + 1.0;
  EXPECT_TRUE(y.compute(client).isApprox(m * 2.0 + Eigen::MatrixXd::Constant(300, 200, 1.0)));
  EXPECT_EQ(cluster.status().tasks_from_checkpoint, 6u);
  const int before = slow_runs.load();
  auto bag = tessera::Bag<std::int64_t>::from_sequence({1, 2, 3, 4, 5, 6}, 3).map(costly);
  EXPECT_EQ(bag.compute(client), (std::vector<std::int64_t>{1, 4, 9, 16, 25, 36}));
  EXPECT_EQ(slow_runs.load(), before);
  EXPECT_EQ(cluster.status().tasks_from_checkpoint, 9u);
}

TEST_F(Checkpoints, AreListedAndDroppedByFunctionOrKey) {
  tessera::LocalCluster cluster(on_disk(data.path));
  tessera::Client client(cluster);
  client.gather(client.persist(first_layer(5), {.checkpoint = true}));
  client.gather(client.with({.checkpoint = true}).map(shifted, std::vector<std::int64_t>{1, 2}));
  auto all = client.checkpoints();
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(client.checkpoints("costly").size(), 5u);
  for (const auto& c : all) {
    EXPECT_EQ(c.key.size(), 64u);
    EXPECT_GT(c.bytes, 0u);
    EXPECT_GT(c.written_ms, 0);
    EXPECT_TRUE(c.function == "costly" || c.function == "shifted") << c.function;
  }
  EXPECT_THROW(client.drop_checkpoints({.keys = {"abc"}}), std::invalid_argument);
  EXPECT_THROW(client.drop_checkpoints({.keys = {"not hex!"}}), std::invalid_argument);
  EXPECT_EQ(client.drop_checkpoints({.keys = {all.front().key.substr(0, 12)}}), 1u);
  EXPECT_EQ(client.drop_checkpoints({.function = "shifted"}), 2u - (all.front().function == "shifted"));
  EXPECT_EQ(client.drop_checkpoints({.all = true}), client.checkpoints().size() == 0 ? 0u : 4u);
  EXPECT_TRUE(client.checkpoints().empty());
  // Dropped means computed again.
  const int before = slow_runs.load();
  client.gather(client.persist(first_layer(5)));
  EXPECT_EQ(slow_runs.load(), before + 5);
}

// (e) A record whose bytes changed on disk fails its CRC: it is deleted, counted, and its task computed.
TEST_F(Checkpoints, ADamagedRecordIsComputedAgainAndCounted) {
  {
    tessera::LocalCluster cluster(on_disk(data.path));
    tessera::Client client(cluster);
    client.gather(client.persist(first_layer(4), {.checkpoint = true}));
  }
  std::string damaged_key;
  {
    auto database = std::make_shared<tessera::NodeDatabase>(data.path);
    std::unique_ptr<rocksdb::Iterator> it(
        database->db().NewIterator(rocksdb::ReadOptions(), database->checkpoints()));
    it->Seek("v");
    ASSERT_TRUE(it->Valid() && it->key().starts_with("v"));
    std::string key = it->key().ToString(), record = it->value().ToString();
    record[record.size() - 3] ^= 0x5a;  // a byte of the value itself; RocksDB's own checksum is rewritten
    ASSERT_TRUE(database->db().Put(rocksdb::WriteOptions(), database->checkpoints(), key, record).ok());
    it.reset();
    damaged_key = key;
  }
  tessera::LocalCluster cluster(on_disk(data.path));
  tessera::Client client(cluster);
  const int before = slow_runs.load();
  auto values = client.gather(client.persist(first_layer(4), {.checkpoint = true}));
  for (std::int64_t i = 0; i < 4; ++i) ASSERT_EQ(values[i], i * i);  // never the damaged bytes
  EXPECT_EQ(slow_runs.load(), before + 1);
  const auto status = cluster.status();
  EXPECT_EQ(status.checkpoints_corrupt, 1u);
  EXPECT_EQ(status.tasks_from_checkpoint, 3u);
  EXPECT_EQ(status.checkpoints_written, 1u);  // stored again, whole
  EXPECT_EQ(client.checkpoints().size(), 4u);
}

}  // namespace
