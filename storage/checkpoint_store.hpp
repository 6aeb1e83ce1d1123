// CheckpointStore: task results kept as checkpoints in the "checkpoint" column family of the scheduler
// node's database, under the task's digest (TaskDigests: the same function over the same inputs has the
// same digest in every run and client). Per checkpoint two records, written in one batch: `v` + digest
// holds a CRC-32 of the value record and the record (ValueRecord), `i` + digest what `list` shows. Writes
// go through the WAL unsynced: a killed process keeps them, a power cut may lose the last ones, which
// are then computed again. Reads verify RocksDB's block checksums and the CRC; a record that fails
// either is deleted and counted, and its task is computed again. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/checkpoint_info.hpp"
#include "graph/value.hpp"
#include "storage/node_database.hpp"

namespace tessera {

using TaskDigest = std::array<std::uint8_t, 32>;
std::string to_hex(const TaskDigest& digest);

class CheckpointStore {
 public:
  explicit CheckpointStore(std::shared_ptr<NodeDatabase> database);

  struct Record {
    TaskDigest digest;
    std::string function;
    std::string task;
    Value value;
  };
  // Stores records (one write batch). Throws StoreError naming the directory and RocksDB's reason.
  void write(const std::vector<Record>& records);
  // The stored value, or nullopt when there is none. A damaged record (checksum, CRC, decoding) is
  // deleted, counted in corrupt(), reported through `damage` (what and where), and answered nullopt.
  std::optional<Value> read(const TaskDigest& digest, std::string* damage = nullptr);

  // Checkpoints in key order after the key `after` (hex; empty: from the first), at most `limit`, of
  // `function` only when it is not empty.
  std::vector<CheckpointInfo> list(const std::string& function = {}, const std::string& after = {},
                                   std::size_t limit = SIZE_MAX) const;
  // Deletes the selected checkpoints; returns how many. A key prefix under 8 hex digits, or one that is
  // not hex, is std::invalid_argument naming it.
  std::uint64_t drop(const CheckpointSelection& selection);

  bool may_hold_any() const { return count_.load(std::memory_order_relaxed) > 0; }
  // Whether any checkpoint of `function` is stored: tasks of other functions are not even keyed.
  bool may_hold(const std::string& function) const;
  std::uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  std::uint64_t written() const { return written_.load(std::memory_order_relaxed); }
  std::uint64_t bytes_written() const { return bytes_written_.load(std::memory_order_relaxed); }
  double write_seconds() const;
  std::uint64_t corrupt() const { return corrupt_.load(std::memory_order_relaxed); }
  const std::filesystem::path& directory() const { return database_->directory(); }

 private:
  void erase(const std::vector<std::string>& digests);  // raw digests (32 bytes each)
  std::shared_ptr<NodeDatabase> database_;
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> written_{0}, bytes_written_{0}, corrupt_{0};
  std::atomic<std::uint64_t> write_nanoseconds_{0};
  std::mutex mutex_;  // writes and deletes, so that count_ and functions_ stay exact
  // functions_ alone: may_hold (the scheduler's, for every task it could restore) never waits behind a
  // write to disk.
  mutable std::mutex functions_mutex_;
  std::unordered_map<std::string, std::uint64_t> functions_;  // records per function
};

}  // namespace tessera
