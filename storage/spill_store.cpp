#include "storage/spill_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <system_error>

#include "storage/unsynced_file_system.hpp"
#include "storage/value_record.hpp"

namespace tessera {
namespace {

// Spilled chunks are large, written once, read a few times and deleted: no automatic compaction (it
// would rewrite live chunks over and over; reclaim() compacts when deletes pile up), a bloom filter so a
// read looks at one file of the many each spill batch leaves, and no block cache (a chunk read back goes
// to its consumer, not to a cache that would hold a second copy in memory).

// A record is stored as pieces of at most this many bytes, each under the record's key and the piece's
// index. RocksDB copies a value whole into its table builder's block (and a read into the block it
// reads): a 64 MiB chunk spilled as one value took another copy of itself in memory, which is what a
// worker at its limit cannot afford. Piece 0 starts with the record's size. (1 MiB measured best for
// reads of 4 and 64 MiB chunks against 256 KiB, 512 KiB and 4 MiB.) A little under 1 MiB, so that the
// table builder's block buffer (block_size, below) stays under the size a limited worker's allocator maps
// on its own (actors/allocator_policy.hpp): it comes from the heap instead of a fresh mapping faulted in
// page by page for every piece.
constexpr std::uint64_t kPieceBytes = 960ull << 10;
constexpr std::uint64_t kSizeBytes = 8;

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
  // Flushes are not waited on by the device: a spill is scratch space (unsynced_file_system.hpp).
  options.env = unsynced_env();
  options.disable_auto_compactions = true;
  // Spills arrive as table files (write_records); the memtable holds deletes only.
  options.write_buffer_size = 4ull << 20;
  // A file per spill batch: the most recently used stay open (each holds a descriptor).
  options.max_open_files = 256;
  // Chunks are floating-point data that do not compress: compressing them only costs time.
  options.compression = rocksdb::kNoCompression;
  rocksdb::BlockBasedTableOptions table;
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.no_block_cache = true;
  // Each piece is a block of its own. The table builder swaps each finished block for a fresh buffer of
  // block_size: sized for a whole piece, it is never grown (growing a 4 KiB buffer to a piece, then past
  // it for the block's trailer, mapped and faulted in two new buffers per piece).
  table.block_size = kPieceBytes + (32 << 10);
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

void SpillStore::write_records(const std::vector<Pending>& records) {
  if (records.empty()) return;
  // Each record's pieces, as views of its parts (a piece that spans two parts is joined when written).
  struct Piece {
    std::string key;
    std::vector<rocksdb::Slice> slices;
  };
  std::vector<Piece> pieces;
  std::vector<std::string> size_prefixes;
  size_prefixes.reserve(records.size());  // pieces view these strings: no reallocation
  for (const auto& record : records) {
    std::string& size_prefix = size_prefixes.emplace_back();
    for (int shift = 56; shift >= 0; shift -= 8)
      size_prefix += static_cast<char>((record.size >> shift) & 0xff);
    std::size_t part = 0, offset = 0;  // where the next piece starts in the record's parts
    const std::uint32_t count = piece_count(record.size);
    for (std::uint32_t index = 0; index < count; ++index) {
      Piece& piece = pieces.emplace_back();
      piece.key = piece_key(record.key, index);
      std::uint64_t room = kPieceBytes;
      if (index == 0) {
        piece.slices.emplace_back(size_prefix);
        room -= kSizeBytes;
      }
      while (room > 0 && part < record.parts.size()) {
        const std::size_t take = std::min<std::uint64_t>(room, record.parts[part].size() - offset);
        if (take > 0) piece.slices.emplace_back(record.parts[part].data() + offset, take);
        room -= take;
        offset += take;
        if (offset == record.parts[part].size()) {
          ++part;
          offset = 0;
        }
      }
    }
  }
  // A table file takes its keys in order; two records under one key would mix their pieces.
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.key < b.key; });
  for (std::size_t i = 1; i < pieces.size(); ++i)
    if (pieces[i].key == pieces[i - 1].key)
      throw SpillError(failure("spill", "two records of one batch under one key"));

  // Written as a table file of its own and ingested: RocksDB neither copies the values into a write batch
  // and a memtable nor flushes them again, and its table builder holds one piece at a time.
  const auto file = directory_ / ("ingest-" + std::to_string(++files_written_) + ".tmp");
  std::error_code ignored;
  try {
    // The page cache keeps what was written (by default the writer drops it as it goes, and each chunk
    // read back came from the device: reads at 0.6 of RocksDB's own get).
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), rocksdb_options(), nullptr,
                                  /*invalidate_page_cache=*/false);
    auto status = writer.Open(file.string());
    std::string joined;
    for (std::size_t i = 0; status.ok() && i < pieces.size(); ++i) {
      const auto& slices = pieces[i].slices;
      if (slices.size() == 1) {
        status = writer.Put(pieces[i].key, slices.front());
        continue;
      }
      joined.clear();
      for (const auto& slice : slices) joined.append(slice.data(), slice.size());
      status = writer.Put(pieces[i].key, joined);
    }
    if (status.ok()) status = writer.Finish();
    if (!status.ok()) throw SpillError(failure("spill", status.ToString()));
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;             // a link, not a copy
    ingest.snapshot_consistency = false;  // nothing reads a snapshot
    ingest.write_global_seqno = false;    // kept in the manifest: the file is not written again
    ingest.allow_blocking_flush = true;   // deletes of these keys still in the memtable go first
    std::shared_lock lock(db_mutex_);
    auto& store = db();
    status = store.IngestExternalFile({file.string()}, ingest);
    if (status.IsCorruption()) {
      // Ingesting reads the files its key range overlaps, and one of them is damaged (its records are
      // recomputed from lineage as they are read). The batch goes through the memtable instead, which
      // reads no file, a few MiB at a time (its copies stay that small).
      constexpr std::uint64_t kCommitBytes = 8ull << 20;
      rocksdb::WriteBatch batch;
      rocksdb::WriteOptions no_wal;
      no_wal.disableWAL = true;
      std::uint64_t pending = 0;
      status = rocksdb::Status::OK();
      for (std::size_t i = 0; status.ok() && i < pieces.size(); ++i) {
        const rocksdb::Slice key(pieces[i].key);
        batch.Put(rocksdb::SliceParts(&key, 1),
                  rocksdb::SliceParts(pieces[i].slices.data(), static_cast<int>(pieces[i].slices.size())));
        for (const auto& slice : pieces[i].slices) pending += slice.size();
        if (pending >= kCommitBytes || i + 1 == pieces.size()) {
          status = store.Write(no_wal, &batch);
          if (status.ok()) status = store.Flush(rocksdb::FlushOptions());
          batch.Clear();
          pending = 0;
        }
      }
    }
    if (!status.ok()) {
      const std::string reason = status.ToString();
      store.Resume();
      throw SpillError(failure("spill", reason));
    }
  } catch (...) {
    std::filesystem::remove(file, ignored);
    throw;
  }
  std::filesystem::remove(file, ignored);  // its link, where RocksDB left one
  std::lock_guard lock(sizes_mutex_);
  for (const auto& record : records) sizes_[record.key] = record.size;
}

std::vector<std::uint64_t> SpillStore::write_values(
    const std::vector<std::pair<std::string, Value>>& values) {
  std::vector<std::unique_ptr<ValueRecord>> encoded;  // what the parts view, until written
  std::vector<Pending> records;
  std::vector<std::uint64_t> sizes;
  encoded.reserve(values.size());
  records.reserve(values.size());
  sizes.reserve(values.size());
  for (const auto& [key, value] : values) {
    const auto& record = *encoded.emplace_back(std::make_unique<ValueRecord>(value));
    records.push_back(Pending{key, record.parts(), record.size()});
    sizes.push_back(record.size());
  }
  write_records(records);
  return sizes;
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
