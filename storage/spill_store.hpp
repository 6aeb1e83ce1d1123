// SpillStore: the chunks a worker moved out of memory, as records in a RocksDB instance of their own
// under its node's directory (NodeDatabase::new_spill_directory). A record is the value's Cap'n Proto
// header and its frames laid end to end; RocksDB's block checksums guard it on disk, and the decoder
// still treats it as hostile. A batch of spills is written as a table file and ingested, so neither a
// write batch nor the memtable becomes a second copy of what was spilled, and nothing waits for the
// device (a spilled chunk does not outlive its process: unsynced_file_system.hpp).
//
// Why an instance of its own: a damaged spill file must cost only the chunks in it. In the node's shared
// database a compaction that read one left RocksDB with an unrecoverable background error, and every
// later write, results and checkpoints included, failed. Here paranoid checks are off (a failed
// compaction is reported, not latched) and clear() drops every file without reading one.
//
// One spilling thread writes, erases, reclaims and clears; reads may come from any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <rocksdb/slice.h>

#include "graph/value.hpp"
#include "storage/node_database.hpp"

namespace rocksdb {
class DB;
struct Options;
}  // namespace rocksdb

namespace tessera {

// A spill or read that the disk refused (unwritable, full, gone); the text names the path and the reason.
class SpillError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A spilled record that came back damaged: its checksum failed, or it does not decode.
class SpillCorrupt : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class SpillStore {
 public:
  // Opens a new, empty store in a directory of its own under `database`'s (kept open meanwhile, so its
  // lock keeps other processes out); throws SpillError naming the directory.
  explicit SpillStore(std::shared_ptr<NodeDatabase> database);
  ~SpillStore();  // closes the store and removes its directory
  SpillStore(const SpillStore&) = delete;
  SpillStore& operator=(const SpillStore&) = delete;

  const std::filesystem::path& directory() const { return directory_; }

  // The options a store is opened with (a benchmark compares RocksDB's own put under the same ones).
  static rocksdb::Options rocksdb_options();

  // The record a value is spilled as, as one string (a benchmark puts it to RocksDB directly).
  static std::string encode(const Value& value);

  // Writes values as records straight from their buffers (no encoded copy first), as one table file
  // ingested before returning, and returns each record's size.
  std::vector<std::uint64_t> write_values(const std::vector<std::pair<std::string, Value>>& values);
  // Reads one record back; SpillCorrupt when its checksum fails or it does not decode, SpillError when
  // the disk refuses, and SpillError naming the key when it is not there.
  Value read(const std::string& key) const;
  void erase(const std::vector<std::string>& keys);
  // Rewrites the store without its deleted records, so their disk space comes back. Reads every live
  // record, so a damaged file makes it fail (SpillError); the store stays usable.
  void reclaim();
  // Drops every record, reading none (a damaged file included), and starts empty: for when nothing on
  // disk is live any more.
  void clear();

 private:
  void open();
  rocksdb::DB& db() const;  // SpillError when clear() could not open it again
  std::string failure(const std::string& what, const std::string& reason) const;
  // A record to write: the concatenation of `parts`, `size` bytes.
  struct Pending {
    std::string key;
    std::vector<rocksdb::Slice> parts;
    std::uint64_t size = 0;
  };
  // Writes records as pieces into one table file and ingests it; SpillError when the disk refuses.
  void write_records(const std::vector<Pending>& records);
  void erase_pieces(const std::vector<std::pair<std::string, std::uint64_t>>& records);

  std::shared_ptr<NodeDatabase> database_;
  std::filesystem::path directory_;
  // Shared by every use of db_, exclusive while clear() replaces it.
  mutable std::shared_mutex db_mutex_;
  std::unique_ptr<rocksdb::DB> db_;
  // The size of each record written and not erased (how many pieces to delete): the spilling thread's.
  mutable std::mutex sizes_mutex_;
  std::unordered_map<std::string, std::uint64_t> sizes_;
  std::uint64_t files_written_ = 0;  // names the next table file to ingest
};

}  // namespace tessera
