#include "storage/spill_store.hpp"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstring>

#include "messages/wire_codec.hpp"

namespace tessera {
namespace {

constexpr std::uint32_t kMagic = 0x4c505354;  // "TSPL"
constexpr std::size_t kMaxFrames = 1u << 20;

std::size_t padded(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

template <class T>
void put_raw(std::string& out, std::size_t& at, T value) {
  std::memcpy(out.data() + at, &value, sizeof value);
  at += sizeof value;
}
template <class T>
T get_raw(const std::string& in, std::size_t& at) {
  if (in.size() < at + sizeof(T)) throw SpillCorrupt("spilled record is cut short");
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

}  // namespace

SpillStore::SpillStore(std::shared_ptr<NodeDatabase> database) : database_(std::move(database)) {}

std::string SpillStore::failure(const std::string& what, const std::string& reason) const {
  return "cannot " + what + " in " + directory().string() + ": " + reason;
}

// Layout: magic, frame count, header bytes, each frame's bytes; then the header and each frame, every
// part starting on an 8-byte boundary.
std::string SpillStore::encode(const Value& value) {
  auto encoded = wire::encode_value_message(value);
  const auto header = encoded.header_bytes();
  const auto& frames = encoded.attachments.frames;
  std::size_t size = 16 + 8 * frames.size() + padded(header.size());
  for (const auto& f : frames) size += padded(f.size());
  std::string out(size, '\0');
  std::size_t at = 0;
  put_raw(out, at, kMagic);
  put_raw(out, at, static_cast<std::uint32_t>(frames.size()));
  put_raw(out, at, static_cast<std::uint64_t>(header.size()));
  for (const auto& f : frames) put_raw(out, at, static_cast<std::uint64_t>(f.size()));
  std::memcpy(out.data() + at, header.data(), header.size());
  at += padded(header.size());
  for (const auto& f : frames) {
    if (!f.empty()) std::memcpy(out.data() + at, f.data(), f.size());
    at += padded(f.size());
  }
  return out;
}

Value SpillStore::decode(const std::string& record) {
  std::size_t at = 0;
  if (get_raw<std::uint32_t>(record, at) != kMagic)
    throw SpillCorrupt("spilled record has no Tessera header");
  const auto frame_count = get_raw<std::uint32_t>(record, at);
  if (frame_count > kMaxFrames) throw SpillCorrupt("spilled record claims too many frames");
  const auto header_bytes = get_raw<std::uint64_t>(record, at);
  std::vector<std::uint64_t> sizes(frame_count);
  for (auto& s : sizes) s = get_raw<std::uint64_t>(record, at);
  const auto view = [&](std::uint64_t n) {
    if (n > record.size() || at > record.size() - n) throw SpillCorrupt("spilled record is cut short");
    std::span<const std::byte> part(reinterpret_cast<const std::byte*>(record.data()) + at, n);
    at += padded(n);
    return part;
  };
  const auto header = view(header_bytes);
  std::vector<std::span<const std::byte>> frames;
  frames.reserve(frame_count);
  for (auto s : sizes) frames.push_back(view(s));
  try {
    return wire::decode_value_message(header, frames);
  } catch (const wire::WireError& e) {
    throw SpillCorrupt(std::string("spilled record does not decode: ") + e.what());
  }
}

std::vector<std::uint64_t> SpillStore::write_values(
    const std::vector<std::pair<std::string, Value>>& values) {
  static const char zeros[8] = {};
  rocksdb::WriteBatch batch;
  std::vector<std::uint64_t> sizes;
  sizes.reserve(values.size());
  for (const auto& [key, value] : values) {
    auto encoded = wire::encode_value_message(value);
    const auto header = encoded.header_bytes();
    const auto& frames = encoded.attachments.frames;
    // The same layout as encode(), given to RocksDB in parts: its batch is the only copy made.
    std::string prefix(16 + 8 * frames.size(), '\0');
    std::size_t at = 0;
    put_raw(prefix, at, kMagic);
    put_raw(prefix, at, static_cast<std::uint32_t>(frames.size()));
    put_raw(prefix, at, static_cast<std::uint64_t>(header.size()));
    for (const auto& f : frames) put_raw(prefix, at, static_cast<std::uint64_t>(f.size()));
    std::vector<rocksdb::Slice> parts;
    parts.reserve(2 + 2 * frames.size() + 1);
    std::uint64_t size = prefix.size();
    const auto add = [&](const void* data, std::size_t n) {
      parts.emplace_back(static_cast<const char*>(data), n);
      if (padded(n) != n) parts.emplace_back(zeros, padded(n) - n);
      size += padded(n);
    };
    parts.emplace_back(prefix);
    add(header.data(), header.size());
    for (const auto& f : frames) add(f.data(), f.size());
    const rocksdb::Slice key_slice(key);
    batch.Put(database_->spill(), rocksdb::SliceParts(&key_slice, 1),
              rocksdb::SliceParts(parts.data(), static_cast<int>(parts.size())));
    sizes.push_back(size);
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
