#include "storage/spill_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "storage/value_record.hpp"

namespace tessera {

SpillStore::SpillStore(std::shared_ptr<NodeDatabase> database) : database_(std::move(database)) {}

std::string SpillStore::failure(const std::string& what, const std::string& reason) const {
  return "cannot " + what + " in " + directory().string() + ": " + reason;
}

std::string SpillStore::encode(const Value& value) {
  return ValueRecord(value).flat();
}

Value SpillStore::decode(const std::string& record) {
  try {
    return ValueRecord::decode(record);
  } catch (const RecordCorrupt& e) {
    throw SpillCorrupt(std::string("spilled ") + e.what());
  }
}

std::vector<std::uint64_t> SpillStore::write_values(
    const std::vector<std::pair<std::string, Value>>& values) {
  rocksdb::WriteBatch batch;
  std::vector<std::uint64_t> sizes;
  sizes.reserve(values.size());
  for (const auto& [key, value] : values) {
    const ValueRecord record(value);
    const rocksdb::Slice key_slice(key);
    batch.Put(database_->spill(), rocksdb::SliceParts(&key_slice, 1),
              rocksdb::SliceParts(record.parts().data(), static_cast<int>(record.parts().size())));
    sizes.push_back(record.size());
  }
  commit(batch);
  return sizes;
}

void SpillStore::write(const std::vector<std::pair<std::string, std::string>>& records) {
  rocksdb::WriteBatch batch;
  for (const auto& [key, record] : records) batch.Put(database_->spill(), key, record);
  commit(batch);
}

void SpillStore::commit(rocksdb::WriteBatch& batch) {
  auto& db = database_->db();
  rocksdb::WriteOptions options;
  options.disableWAL = true;
  auto status = db.Write(options, &batch);
  if (status.ok()) status = db.Flush(rocksdb::FlushOptions(), database_->spill());
  if (!status.ok()) {
    // A failed write leaves RocksDB read-only until resumed; the next spill tries again.
    const std::string reason = status.ToString();
    db.Resume();
    throw SpillError(failure("spill", reason));
  }
}

Value SpillStore::read(const std::string& key) const {
  rocksdb::ReadOptions options;
  options.verify_checksums = true;
  options.fill_cache = false;
  std::string record;
  const auto status = database_->db().Get(options, database_->spill(), key, &record);
  if (status.IsCorruption()) throw SpillCorrupt(failure("read a spilled chunk", status.ToString()));
  if (status.IsNotFound()) throw SpillError(failure("find a spilled chunk", "it is not there"));
  if (!status.ok()) throw SpillError(failure("read a spilled chunk", status.ToString()));
  return decode(record);
}

void SpillStore::erase(const std::vector<std::string>& keys) {
  rocksdb::WriteBatch batch;
  for (const auto& key : keys) batch.Delete(database_->spill(), key);
  rocksdb::WriteOptions options;
  options.disableWAL = true;
  const auto status = database_->db().Write(options, &batch);
  if (!status.ok()) throw SpillError(failure("delete spilled chunks", status.ToString()));
}

void SpillStore::reclaim() {
  auto& db = database_->db();
  auto status = db.Flush(rocksdb::FlushOptions(), database_->spill());
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  if (status.ok()) status = db.CompactRange(options, database_->spill(), nullptr, nullptr);
  if (!status.ok()) {
    const std::string reason = status.ToString();
    db.Resume();  // a failed compaction leaves RocksDB refusing writes until resumed
    throw SpillError(failure("reclaim spilled chunks' space", reason));
  }
}

}  // namespace tessera
