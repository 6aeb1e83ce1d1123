#include "storage/spill_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <system_error>

#include "storage/value_record.hpp"

namespace tessera {
namespace {

// Spilled chunks are large, written once, read a few times and deleted: no automatic compaction (it
// would rewrite live chunks over and over; reclaim() compacts when deletes pile up), a bloom filter so a
// read looks at one file of the many each flush leaves, and no block cache (a chunk read back goes to its
// consumer, not to a cache that would hold a second copy in memory).

// A record is stored as pieces of at most this many bytes, each under the record's key and the piece's
// index. RocksDB copies a value whole into its write batch, its memtable and its table builder's block
// (and a read into the block it reads): a 64 MiB chunk spilled as one value took three more copies of
// itself in memory at once, which is what a worker at its limit cannot afford. Piece 0 starts with the
// record's size.
constexpr std::uint64_t kPieceBytes = 1ull << 20;
constexpr std::uint64_t kSizeBytes = 8;
// A write batch is committed and flushed once it holds this much: RocksDB's copies stay this small.
constexpr std::uint64_t kCommitBytes = 8ull << 20;

std::string piece_key(const std::string& key, std::uint32_t piece) {
  std::string out = key;
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((piece >> shift) & 0xff);
  return out;
}

std::uint32_t piece_count(std::uint64_t size) {
  const std::uint64_t first = kPieceBytes - kSizeBytes;
  return 1 + static_cast<std::uint32_t>(size <= first ? 0 : (size - first + kPieceBytes - 1) / kPieceBytes);
}
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
  options.write_buffer_size = 2 * kCommitBytes;
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

void SpillStore::put_pieces(rocksdb::WriteBatch& batch, std::uint64_t& pending, const std::string& key,
                            const std::vector<rocksdb::Slice>& parts, std::uint64_t size) {
  std::string size_prefix;
  for (int shift = 56; shift >= 0; shift -= 8) size_prefix += static_cast<char>((size >> shift) & 0xff);
  std::size_t part = 0, offset = 0;  // where the next piece starts in `parts`
  const std::uint32_t count = piece_count(size);
  std::vector<rocksdb::Slice> slices;
  for (std::uint32_t piece = 0; piece < count; ++piece) {
    slices.clear();
    std::uint64_t room = kPieceBytes;
    if (piece == 0) {
      slices.emplace_back(size_prefix);
      room -= kSizeBytes;
    }
    while (room > 0 && part < parts.size()) {
      const std::size_t take = std::min<std::uint64_t>(room, parts[part].size() - offset);
      if (take > 0) slices.emplace_back(parts[part].data() + offset, take);
      room -= take;
      offset += take;
      if (offset == parts[part].size()) {
        ++part;
        offset = 0;
      }
    }
    const std::string name = piece_key(key, piece);
    const rocksdb::Slice key_slice(name);
    batch.Put(rocksdb::SliceParts(&key_slice, 1),
              rocksdb::SliceParts(slices.data(), static_cast<int>(slices.size())));
    pending += kPieceBytes - room;
    if (pending >= kCommitBytes) {
      commit(batch);
      batch.Clear();
      pending = 0;
    }
  }
}

std::vector<std::uint64_t> SpillStore::write_values(
    const std::vector<std::pair<std::string, Value>>& values) {
  rocksdb::WriteBatch batch;
  std::uint64_t pending = 0;
  std::vector<std::uint64_t> sizes;
  sizes.reserve(values.size());
  std::vector<std::pair<std::string, std::uint64_t>> written;
  try {
    for (const auto& [key, value] : values) {
      const ValueRecord record(value);
      written.emplace_back(key, record.size());
      put_pieces(batch, pending, key, record.parts(), record.size());
      sizes.push_back(record.size());
    }
    if (pending > 0) commit(batch);
  } catch (const SpillError&) {
    // Pieces of records that were not written whole are garbage: dropped if the disk lets us.
    try {
      erase_pieces(written);
    } catch (const SpillError&) {
    }
    throw;
  }
  std::lock_guard lock(sizes_mutex_);
  for (const auto& [key, size] : written) sizes_[key] = size;
  return sizes;
}

void SpillStore::write(const std::vector<std::pair<std::string, std::string>>& records) {
  rocksdb::WriteBatch batch;
  std::uint64_t pending = 0;
  for (const auto& [key, record] : records) {
    put_pieces(batch, pending, key, {rocksdb::Slice(record)}, record.size());
    std::lock_guard lock(sizes_mutex_);
    sizes_[key] = record.size();
  }
  if (pending > 0) commit(batch);
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
  std::uint64_t written = 0;  // the record's size as written: a first piece claiming another is damaged
  {
    std::lock_guard lock(sizes_mutex_);
    if (auto it = sizes_.find(key); it != sizes_.end()) written = it->second;
  }
  // The pieces are gathered into one buffer that the decoded value keeps as its storage: a chunk read
  // back is one copy from RocksDB's blocks, not a record and then a value.
  std::shared_ptr<char[]> buffer;
  char* record = nullptr;  // in buffer, placed so that the first frame starts on a 64-byte boundary
  std::uint64_t size = 0, filled = 0;
  {
    std::shared_lock lock(db_mutex_);
    auto& store = db();
    rocksdb::PinnableSlice piece;
    for (std::uint32_t index = 0; index == 0 || filled < size; ++index) {
      piece.Reset();
      const auto status = store.Get(options, store.DefaultColumnFamily(), piece_key(key, index), &piece);
      if (status.IsCorruption()) throw SpillCorrupt(failure("read a spilled chunk", status.ToString()));
      if (status.IsNotFound()) {
        if (index == 0) throw SpillError(failure("find a spilled chunk", "it is not there"));
        throw SpillCorrupt(failure("read a spilled chunk", "piece " + std::to_string(index) + " is missing"));
      }
      if (!status.ok()) throw SpillError(failure("read a spilled chunk", status.ToString()));
      const char* data = piece.data();
      std::size_t length = piece.size();
      if (index == 0) {
        if (length < kSizeBytes)
          throw SpillCorrupt(failure("read a spilled chunk", "its first piece is cut short"));
        for (std::uint64_t i = 0; i < kSizeBytes; ++i) size = size << 8 | static_cast<unsigned char>(data[i]);
        if ((written > 0 && size != written) || piece_count(size) > (1u << 24))
          throw SpillCorrupt(failure(
              "read a spilled chunk",
              "it claims " + std::to_string(size) + " bytes, " + std::to_string(written) + " were written"));
        data += kSizeBytes;
        length -= kSizeBytes;
        constexpr std::uint64_t kAlign = 64;
        buffer = std::make_shared_for_overwrite<char[]>(size + kAlign);
        const auto frame = ValueRecord::first_frame_offset(std::string_view(data, length)).value_or(0);
        const auto address = reinterpret_cast<std::uintptr_t>(buffer.get()) + frame;
        record = buffer.get() + (kAlign - address % kAlign) % kAlign;
      }
      if (length > size - filled)
        throw SpillCorrupt(failure("read a spilled chunk", "its pieces hold more than its size"));
      std::memcpy(record + filled, data, length);
      filled += length;
      if (length == 0 && filled < size)
        throw SpillCorrupt(failure("read a spilled chunk", "piece " + std::to_string(index) + " is empty"));
    }
  }
  try {
    return ValueRecord::decode(std::string_view(record, size), std::move(buffer));
  } catch (const RecordCorrupt& e) {
    throw SpillCorrupt(std::string("spilled ") + e.what());
  }
}

void SpillStore::erase_pieces(const std::vector<std::pair<std::string, std::uint64_t>>& records) {
  rocksdb::WriteBatch batch;
  for (const auto& [key, size] : records)
    for (std::uint32_t piece = 0; piece < piece_count(size); ++piece) batch.Delete(piece_key(key, piece));
  rocksdb::WriteOptions options;
  options.disableWAL = true;
  std::shared_lock lock(db_mutex_);
  const auto status = db().Write(options, &batch);
  if (!status.ok()) throw SpillError(failure("delete spilled chunks", status.ToString()));
}

void SpillStore::erase(const std::vector<std::string>& keys) {
  std::vector<std::pair<std::string, std::uint64_t>> records;
  {
    std::lock_guard lock(sizes_mutex_);
    for (const auto& key : keys)
      if (auto it = sizes_.find(key); it != sizes_.end()) records.emplace_back(key, it->second);
  }
  erase_pieces(records);
  std::lock_guard lock(sizes_mutex_);
  for (const auto& key : keys) sizes_.erase(key);
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
  {
    std::lock_guard sizes_lock(sizes_mutex_);
    sizes_.clear();
  }
  open();
}

}  // namespace tessera
