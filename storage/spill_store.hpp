// SpillStore: the chunks a worker moved out of memory, as records in the "spill" column family of its
// node's database. A record is the value's Cap'n Proto header and its frames laid end to end; RocksDB's
// block checksums guard it on disk, and the decoder still treats it as hostile. Writes skip the WAL (a
// spilled chunk does not outlive its process) and are flushed at once, so the memtable never becomes a
// second copy of what was spilled. Not thread-safe: one spilling thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "graph/value.hpp"
#include "storage/node_database.hpp"

namespace rocksdb {
class WriteBatch;
}

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
  explicit SpillStore(std::shared_ptr<NodeDatabase> database);

  const std::filesystem::path& directory() const { return database_->directory(); }

  // The record a value is spilled as, and the value a record holds.
  static std::string encode(const Value& value);
  static Value decode(const std::string& record);

  // Writes records (key, encoded value) and flushes them to disk before returning.
  void write(const std::vector<std::pair<std::string, std::string>>& records);
  // Writes values as records straight from their buffers (no encoded copy first), flushes them, and
  // returns each record's size.
  std::vector<std::uint64_t> write_values(const std::vector<std::pair<std::string, Value>>& values);
  // Reads one record back; SpillCorrupt when its checksum fails or it does not decode, SpillError when
  // the disk refuses, and SpillError naming the key when it is not there.
  Value read(const std::string& key) const;
  void erase(const std::vector<std::string>& keys);
  // Rewrites the spill family without its deleted records, so their disk space comes back.
  void reclaim();

 private:
  std::string failure(const std::string& what, const std::string& reason) const;
  void commit(rocksdb::WriteBatch& batch);  // without the WAL, then flushed
  std::shared_ptr<NodeDatabase> database_;
};

}  // namespace tessera
