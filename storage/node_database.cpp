#include "storage/node_database.hpp"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>

#include <vector>

namespace tessera {
namespace {

constexpr const char* kSpillFamily = "spill";
constexpr const char* kCheckpointFamily = "checkpoint";

void check(const rocksdb::Status& status, const std::string& what, const std::filesystem::path& dir) {
  if (!status.ok())
    throw StoreError("node database " + dir.string() + ": " + what + ": " + status.ToString());
}

// Spilled chunks are large, written once, read a few times and deleted: no automatic compaction (it
// would rewrite live chunks over and over; SpillStore::reclaim compacts when deletes pile up), a bloom
// filter so a read looks at one file of the many each flush leaves, and no block cache (a chunk read
// back goes to its consumer, not to a cache that would hold a second copy in memory).
rocksdb::ColumnFamilyOptions spill_options() {
  rocksdb::ColumnFamilyOptions options;
  options.disable_auto_compactions = true;
  // A spill batch is flushed as soon as it is written, so the memtable never holds more than one batch.
  options.write_buffer_size = 64ull << 20;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.no_block_cache = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return options;
}

}  // namespace

// Checkpoints are large values written once and kept across runs: values of 64 KiB or more go to blob
// files at flush, so compactions move keys, not chunks, and a bloom filter keeps a miss to one probe.
rocksdb::ColumnFamilyOptions NodeDatabase::checkpoint_options() {
  rocksdb::ColumnFamilyOptions options;
  options.enable_blob_files = true;
  options.min_blob_size = 64 * 1024;
  options.write_buffer_size = 64ull << 20;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return options;
}

NodeDatabase::NodeDatabase(const std::filesystem::path& directory) : directory_(directory) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error)
    throw StoreError("node database " + directory_.string() + ": cannot create it: " + error.message());
  rocksdb::DBOptions options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kSpillFamily, spill_options()},
      {kCheckpointFamily, checkpoint_options()}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  check(rocksdb::DB::Open(options, directory_.string(), families, &handles, &db), "cannot open", directory_);
  db_.reset(db);
  results_ = handles[0];
  spill_ = handles[1];
  checkpoints_ = handles[2];
  // Chunks spilled by an earlier process: their owners are gone.
  check(db_->DropColumnFamily(spill_), "cannot clear old spilled chunks", directory_);
  check(db_->DestroyColumnFamilyHandle(spill_), "cannot clear old spilled chunks", directory_);
  spill_ = nullptr;
  check(db_->CreateColumnFamily(spill_options(), kSpillFamily, &spill_), "cannot create the spill family",
        directory_);
}

NodeDatabase::~NodeDatabase() {
  if (db_) {
    if (checkpoints_) db_->DestroyColumnFamilyHandle(checkpoints_);
    if (spill_) db_->DestroyColumnFamilyHandle(spill_);
    if (results_) db_->DestroyColumnFamilyHandle(results_);
    db_->Close();
  }
}

}  // namespace tessera
