// tessera-bench-checkpoint: what storing checkpoints costs, against RocksDB's own put on this machine.
// Three writers of --blocks values of --block-mb each, in fresh directories under the system's temporary
// one, each with the checkpoint family's options (blob files for values of 64 KiB or more, WAL on,
// unsynced): (1) RocksDB's Put of the raw bytes, one per value; (2) CheckpointStore::write (the record
// layout, its CRC-32, the info record), one per value; (3) end to end, a LocalCluster persisting a map
// that makes the blocks with {.checkpoint = true}, against the same map persisted without. Prints one
// JSON line per writer and run, and one with medians.
#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstring>
#include <filesystem>
#include <iostream>
#include <tessera/tessera.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"
#include "storage/checkpoint_store.hpp"
#include "storage/node_database.hpp"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::size_t g_doubles = 0;

// One block of the benchmark: g_doubles values that depend on the seed.
std::vector<double> bench_block(std::int64_t seed) {
  std::vector<double> out(g_doubles);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(seed) + static_cast<double>(i);
  return out;
}
TESSERA_TASK(bench_block);

struct Scratch {
  fs::path path;
  explicit Scratch(const std::string& what)
      : path(fs::temp_directory_path() /
             ("tessera-bench-checkpoint-" + what + "-" + std::to_string(getpid()))) {
    fs::remove_all(path);
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

double rocksdb_put_seconds(std::size_t blocks, const std::vector<double>& block) {
  Scratch dir("rocksdb");
  rocksdb::Options options(rocksdb::DBOptions(), tessera::NodeDatabase::checkpoint_options());
  options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::Open(options, dir.path.string(), &raw).ok())
    throw std::runtime_error("cannot open RocksDB");
  std::unique_ptr<rocksdb::DB> db(raw);
  const rocksdb::Slice value(reinterpret_cast<const char*>(block.data()), block.size() * sizeof(double));
  const auto start = Clock::now();
  for (std::size_t i = 0; i < blocks; ++i) {
    char key[33] = {};
    std::snprintf(key, sizeof key, "v%031zu", i);
    if (!db->Put(rocksdb::WriteOptions(), key, value).ok()) throw std::runtime_error("RocksDB put failed");
  }
  const double seconds = tessera::bench::seconds_since(start);
  db->Close();
  return seconds;
}

double store_write_seconds(std::size_t blocks, const std::vector<double>& block) {
  Scratch dir("store");
  tessera::CheckpointStore store(std::make_shared<tessera::NodeDatabase>(dir.path));
  const tessera::Value value = tessera::to_value(block);
  const auto start = Clock::now();
  for (std::size_t i = 0; i < blocks; ++i) {
    tessera::TaskDigest digest{};
    std::memcpy(digest.data(), &i, sizeof i);
    store.write(
        {tessera::CheckpointStore::Record{digest, "bench_block", "bench_block-" + std::to_string(i), value}});
  }
  return tessera::bench::seconds_since(start);
}

// Persist of the map, with or without checkpoints; the seconds until every block was computed (and
// stored), and the store's own write time.
std::pair<double, double> cluster_seconds(std::size_t blocks, bool checkpoint, std::uint32_t workers,
                                          std::uint32_t threads) {
  Scratch dir(checkpoint ? "cluster-checkpoint" : "cluster-plain");
  tessera::LocalCluster cluster(
      {.workers = workers, .threads_per_worker = threads, .data_dir = dir.path.string()});
  tessera::Client client(cluster);
  std::vector<std::int64_t> seeds(blocks);
  for (std::size_t i = 0; i < blocks; ++i) seeds[i] = static_cast<std::int64_t>(i);
  const auto start = Clock::now();
  auto futures = client.with({.checkpoint = checkpoint}).map(bench_block, seeds);
  for (auto& f : futures) f.wait();
  const double seconds = tessera::bench::seconds_since(start);
  return {seconds, cluster.status().checkpoint_write_seconds};
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-checkpoint",
      "checkpoint write MB/s against RocksDB's own put (one JSON line per writer and run)");
  flags.integer("blocks", 128, 1, 1000000, "values written per run")
      .real("block-mb", 4, 0.001, 1024, "megabytes per value")
      .integer("repeat", 3, 1, 1000, "runs (medians reported)")
      .integer("workers", 2, 1, 64, "workers of the end-to-end cluster")
      .integer("threads", 1, 1, 1024, "threads per worker");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const auto blocks = static_cast<std::size_t>(flags.integer("blocks"));
  g_doubles = static_cast<std::size_t>(flags.real("block-mb") * 1e6 / sizeof(double));
  const double mb = static_cast<double>(blocks * g_doubles * sizeof(double)) / 1e6;
  const auto block = bench_block(7);
  std::vector<double> put, store, plain, persisted, persisted_store;
  for (long long run = 0; run < flags.integer("repeat"); ++run) {
    put.push_back(mb / rocksdb_put_seconds(blocks, block));
    store.push_back(mb / store_write_seconds(blocks, block));
    const auto workers = static_cast<std::uint32_t>(flags.integer("workers"));
    const auto threads = static_cast<std::uint32_t>(flags.integer("threads"));
    const double without = cluster_seconds(blocks, false, workers, threads).first;
    const auto [with, writes] = cluster_seconds(blocks, true, workers, threads);
    plain.push_back(mb / without);
    persisted.push_back(mb / with);
    persisted_store.push_back(writes > 0 ? mb / writes : 0);
    std::cout << "{\"run\": " << run << ", \"mb\": " << mb << ", \"rocksdb_put_mb_per_s\": " << put.back()
              << ", \"checkpoint_store_mb_per_s\": " << store.back()
              << ", \"persist_mb_per_s\": " << plain.back()
              << ", \"persist_checkpointed_mb_per_s\": " << persisted.back()
              << ", \"scheduler_write_mb_per_s\": " << persisted_store.back() << "}" << std::endl;
  }
  std::cout << "{\"median\": true, \"blocks\": " << blocks << ", \"block_mb\": " << flags.real("block-mb")
            << ", \"rocksdb_put_mb_per_s\": " << tessera::bench::median(put)
            << ", \"checkpoint_store_mb_per_s\": " << tessera::bench::median(store)
            << ", \"persist_mb_per_s\": " << tessera::bench::median(plain)
            << ", \"persist_checkpointed_mb_per_s\": " << tessera::bench::median(persisted)
            << ", \"scheduler_write_mb_per_s\": " << tessera::bench::median(persisted_store) << "}"
            << std::endl;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-checkpoint: " << e.what() << "\n";
  return 1;
}
