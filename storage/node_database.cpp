#include "storage/node_database.hpp"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>

#include <algorithm>
#include <vector>

namespace tessera {
namespace {

// Where spilled chunks lived before they had RocksDB instances of their own: dropped on open.
constexpr const char* kLegacySpillFamily = "spill";
constexpr const char* kCheckpointFamily = "checkpoint";
constexpr const char* kSpillDirectory = "spill";

void check(const rocksdb::Status& status, const std::string& what, const std::filesystem::path& dir) {
  if (!status.ok())
    throw StoreError("node database " + dir.string() + ": " + what + ": " + status.ToString());
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
  std::vector<std::string> existing;
  const bool legacy_spill = rocksdb::DB::ListColumnFamilies(options, directory_.string(), &existing).ok() &&
                            std::find(existing.begin(), existing.end(), kLegacySpillFamily) != existing.end();
  std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {kCheckpointFamily, checkpoint_options()}};
  if (legacy_spill) families.push_back({kLegacySpillFamily, rocksdb::ColumnFamilyOptions()});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  check(rocksdb::DB::Open(options, directory_.string(), families, &handles, &db), "cannot open", directory_);
  db_.reset(db);
  results_ = handles[0];
  checkpoints_ = handles[1];
  if (legacy_spill) {
    check(db_->DropColumnFamily(handles[2]), "cannot drop the old spill family", directory_);
    check(db_->DestroyColumnFamilyHandle(handles[2]), "cannot drop the old spill family", directory_);
  }
  // Chunks spilled by an earlier process: their owners are gone. Safe now that this process holds the
  // database's lock.
  std::filesystem::remove_all(directory_ / kSpillDirectory, error);
  if (error)
    throw StoreError("node database " + directory_.string() +
                     ": cannot clear old spilled chunks: " + error.message());
}

std::filesystem::path NodeDatabase::new_spill_directory() {
  return directory_ / kSpillDirectory / std::to_string(spill_directories_.fetch_add(1) + 1);
}

NodeDatabase::~NodeDatabase() {
  if (db_) {
    if (checkpoints_) db_->DestroyColumnFamilyHandle(checkpoints_);
    if (results_) db_->DestroyColumnFamilyHandle(results_);
    db_->Close();
  }
}

}  // namespace tessera
