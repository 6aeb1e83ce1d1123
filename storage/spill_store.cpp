#include "storage/spill_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <mutex>
#include <system_error>

#include "storage/value_record.hpp"

namespace tessera {
namespace {

// Spilled chunks are large, written once, read a few times and deleted: no automatic compaction (it
// would rewrite live chunks over and over; reclaim() compacts when deletes pile up), a bloom filter so a
// read looks at one file of the many each flush leaves, and no block cache (a chunk read back goes to its
// consumer, not to a cache that would hold a second copy in memory).
}  // namespace

rocksdb::Options SpillStore::rocksdb_options() {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.error_if_exists = true;
  // A failed compaction or flush is returned to the caller, not latched as a background error that
  // would refuse every later spill.
  options.paranoid_checks = false;
  options.disable_auto_compactions = true;
  // A spill batch is flushed as soon as it is written, so the memtable never holds more than one batch.
  options.write_buffer_size = 64ull << 20;
  options.max_open_files = 256;
  // Chunks are floating-point data that do not compress: compressing them only costs time.
  options.compression = rocksdb::kNoCompression;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.no_block_cache = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return options;
}

SpillStore::SpillStore(std::shared_ptr<NodeDatabase> database)
    : database_(std::move(database)), directory_(database_->new_spill_directory()) {
  open();
}

SpillStore::~SpillStore() {
  if (db_) db_->Close();
  db_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(directory_, ignored);
}

void SpillStore::open() {
  std::error_code error;
  std::filesystem::remove_all(directory_, error);
  if (!error) std::filesystem::create_directories(directory_.parent_path(), error);
  if (error) throw SpillError(failure("prepare the spill directory", error.message()));
  rocksdb::DB* db = nullptr;
  const auto status = rocksdb::DB::Open(rocksdb_options(), directory_.string(), &db);
  if (!status.ok()) throw SpillError(failure("open the spill store", status.ToString()));
  db_.reset(db);
}

rocksdb::DB& SpillStore::db() const {
  if (!db_) throw SpillError(failure("use the spill store", "it could not be opened again after clear()"));
  return *db_;
}

std::string SpillStore::failure(const std::string& what, const std::string& reason) const {
  return "cannot " + what + " in " + directory_.string() + ": " + reason;
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
    batch.Put(rocksdb::SliceParts(&key_slice, 1),
              rocksdb::SliceParts(record.parts().data(), static_cast<int>(record.parts().size())));
    sizes.push_back(record.size());
  }
  commit(batch);
  return sizes;
}

void SpillStore::write(const std::vector<std::pair<std::string, std::string>>& records) {
  rocksdb::WriteBatch batch;
  for (const auto& [key, record] : records) batch.Put(key, record);
  commit(batch);
}

void SpillStore::commit(rocksdb::WriteBatch& batch) {
  std::shared_lock lock(db_mutex_);
  auto& store = db();
  rocksdb::WriteOptions options;
  options.disableWAL = true;
  auto status = store.Write(options, &batch);
  if (status.ok()) status = store.Flush(rocksdb::FlushOptions());
  if (!status.ok()) {
    // A failed write can leave RocksDB read-only until resumed; the next spill tries again.
    const std::string reason = status.ToString();
    store.Resume();
    throw SpillError(failure("spill", reason));
  }
}

Value SpillStore::read(const std::string& key) const {
  rocksdb::ReadOptions options;
  options.verify_checksums = true;
  options.fill_cache = false;
  std::string record;
  rocksdb::Status status;
  {
    std::shared_lock lock(db_mutex_);
    auto& store = db();
    status = store.Get(options, store.DefaultColumnFamily(), key, &record);
  }
  if (status.IsCorruption()) throw SpillCorrupt(failure("read a spilled chunk", status.ToString()));
  if (status.IsNotFound()) throw SpillError(failure("find a spilled chunk", "it is not there"));
  if (!status.ok()) throw SpillError(failure("read a spilled chunk", status.ToString()));
  return decode(record);
}

void SpillStore::erase(const std::vector<std::string>& keys) {
  rocksdb::WriteBatch batch;
  for (const auto& key : keys) batch.Delete(key);
  rocksdb::WriteOptions options;
  options.disableWAL = true;
  std::shared_lock lock(db_mutex_);
  const auto status = db().Write(options, &batch);
  if (!status.ok()) throw SpillError(failure("delete spilled chunks", status.ToString()));
}

void SpillStore::reclaim() {
  std::shared_lock lock(db_mutex_);
  auto& store = db();
  auto status = store.Flush(rocksdb::FlushOptions());
  rocksdb::CompactRangeOptions options;
  options.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  if (status.ok()) status = store.CompactRange(options, nullptr, nullptr);
  if (!status.ok()) {
    const std::string reason = status.ToString();
    store.Resume();
    throw SpillError(failure("reclaim spilled chunks' space", reason));
  }
}

void SpillStore::clear() {
  std::unique_lock lock(db_mutex_);
  if (db_) db_->Close();
  db_.reset();
  open();
}

}  // namespace tessera
