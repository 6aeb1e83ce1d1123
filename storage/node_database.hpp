// NodeDatabase: a node's RocksDB, with a column family per concern: the default one for stream results
// (ResultStore) and "checkpoint" for task results stored as checkpoints (CheckpointStore). RocksDB locks
// its directory, so a process opens it once and the stores share it. Chunks spilled past a memory target
// live beside it, each SpillStore in a RocksDB instance of its own under spill/ (see spill_store.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
struct ColumnFamilyOptions;
}  // namespace rocksdb

namespace tessera {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class NodeDatabase {
 public:
  // Opens (creating it if needed) the database in `directory`. Spilled chunks left by an earlier run are
  // deleted: nothing refers to them any more. Throws StoreError naming the directory and RocksDB's reason.
  explicit NodeDatabase(const std::filesystem::path& directory);
  ~NodeDatabase();
  NodeDatabase(const NodeDatabase&) = delete;
  NodeDatabase& operator=(const NodeDatabase&) = delete;

  const std::filesystem::path& directory() const { return directory_; }
  rocksdb::DB& db() { return *db_; }
  rocksdb::ColumnFamilyHandle* results() const { return results_; }
  // A directory no other SpillStore of this process uses, under spill/ (removed when the database opens).
  std::filesystem::path new_spill_directory();
  rocksdb::ColumnFamilyHandle* checkpoints() const { return checkpoints_; }
  // The checkpoint family's options (a benchmark compares RocksDB's own put under the same ones).
  static rocksdb::ColumnFamilyOptions checkpoint_options();

 private:
  std::filesystem::path directory_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* results_ = nullptr;  // owned by db_
  std::atomic<std::uint64_t> spill_directories_{0};
  rocksdb::ColumnFamilyHandle* checkpoints_ = nullptr;
};

}  // namespace tessera
