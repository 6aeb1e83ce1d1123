#include "storage/checkpoint_store.hpp"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <zlib.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "messages/results.capnp.h"
#include "storage/value_record.hpp"

namespace tessera {
namespace {

constexpr std::uint32_t kMagic = 0x4b435354;  // "TSCK"
constexpr std::size_t kHeader = 8;            // magic, CRC-32 of the value record
constexpr std::size_t kMinPrefixDigits = 8;

std::string value_key(const std::string& digest) {
  return "v" + digest;
}
std::string info_key(const std::string& digest) {
  return "i" + digest;
}
std::string raw(const TaskDigest& digest) {
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

std::string hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Hex digits to bytes; an odd count keeps its last digit as the high half of a last byte.
std::optional<std::string> unhex(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    int v = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (v < 0) return std::nullopt;
    if (i % 2 == 0) {
      out.push_back(static_cast<char>(v << 4));
    } else {
      out.back() = static_cast<char>(out.back() | v);
    }
  }
  return out;
}

std::uint32_t crc_of(const std::vector<rocksdb::Slice>& parts) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  for (const auto& p : parts) crc = crc32_z(crc, reinterpret_cast<const Bytef*>(p.data()), p.size());
  return static_cast<std::uint32_t>(crc);
}

std::string encode_info(const CheckpointStore::Record& record, std::uint64_t bytes) {
  capnp::MallocMessageBuilder builder;
  auto out = builder.initRoot<wire::CheckpointInfo>();
  out.setFunction(record.function);
  out.setTask(record.task);
  out.setBytes(bytes);
  out.setWrittenMs(std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
  auto words = capnp::messageToFlatArray(builder);
  auto chars = words.asChars();
  return std::string(chars.begin(), chars.end());
}

CheckpointInfo decode_info(const rocksdb::Slice& key, const rocksdb::Slice& bytes) {
  CheckpointInfo info;
  info.key = hex(std::string_view(key.data() + 1, key.size() - 1));
  try {
    wire::HeaderReader reader(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    auto in = reader.root<wire::CheckpointInfo>();
    info.function = in.getFunction();
    info.task = in.getTask();
    info.bytes = in.getBytes();
    info.written_ms = in.getWrittenMs();
  } catch (const std::exception& e) {
    info.function = "(damaged record: " + std::string(e.what()) + ")";
  }
  return info;
}

}  // namespace

std::string to_hex(const TaskDigest& digest) {
  return hex(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

CheckpointStore::CheckpointStore(std::shared_ptr<NodeDatabase> database) : database_(std::move(database)) {
  rocksdb::ReadOptions options;
  std::unique_ptr<rocksdb::Iterator> it(database_->db().NewIterator(options, database_->checkpoints()));
  std::uint64_t n = 0;
  for (it->Seek("i"); it->Valid() && it->key().starts_with("i"); it->Next()) {
    ++n;
    functions_[decode_info(it->key(), it->value()).function] += 1;
  }
  count_ = n;
}

bool CheckpointStore::may_hold(const std::string& function) const {
  if (!may_hold_any()) return false;
  std::lock_guard lock(functions_mutex_);
  return functions_.count(function) > 0;
}

double CheckpointStore::write_seconds() const {
  return static_cast<double>(write_nanoseconds_.load(std::memory_order_relaxed)) / 1e9;
}

void CheckpointStore::write(const std::vector<Record>& records) {
  if (records.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  auto& db = database_->db();
  std::lock_guard lock(mutex_);
  rocksdb::WriteBatch batch;
  std::uint64_t fresh = 0, bytes = 0;
  std::vector<const std::string*> added;
  for (const auto& record : records) {
    const std::string digest = raw(record.digest);
    std::string existing;
    if (db.Get(rocksdb::ReadOptions(), database_->checkpoints(), info_key(digest), &existing).IsNotFound()) {
      ++fresh;
      added.push_back(&record.function);
    }
    const ValueRecord value(record.value);
    char header[kHeader];
    const std::uint32_t crc = crc_of(value.parts());
    std::memcpy(header, &kMagic, 4);
    std::memcpy(header + 4, &crc, 4);
    std::vector<rocksdb::Slice> parts;
    parts.reserve(value.parts().size() + 1);
    parts.emplace_back(header, kHeader);
    parts.insert(parts.end(), value.parts().begin(), value.parts().end());
    const std::string key = value_key(digest);
    const rocksdb::Slice key_slice(key);
    batch.Put(database_->checkpoints(), rocksdb::SliceParts(&key_slice, 1),
              rocksdb::SliceParts(parts.data(), static_cast<int>(parts.size())));
    batch.Put(database_->checkpoints(), info_key(digest), encode_info(record, kHeader + value.size()));
    bytes += kHeader + value.size();
  }
  const auto status = db.Write(rocksdb::WriteOptions(), &batch);
  if (!status.ok()) {
    const std::string reason = status.ToString();
    db.Resume();  // a failed write leaves RocksDB refusing writes until resumed
    throw StoreError("cannot store checkpoints in " + directory().string() + ": " + reason);
  }
  count_ += fresh;
  {
    std::lock_guard functions_lock(functions_mutex_);
    for (const auto* function : added) functions_[*function] += 1;
  }
  written_ += records.size();
  bytes_written_ += bytes;
  write_nanoseconds_ += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

std::optional<Value> CheckpointStore::read(const TaskDigest& digest, std::string* damage) {
  if (!may_hold_any()) return std::nullopt;
  const std::string key = raw(digest);
  rocksdb::ReadOptions options;
  options.verify_checksums = true;
  rocksdb::PinnableSlice record;
  const auto status = database_->db().Get(options, database_->checkpoints(), value_key(key), &record);
  if (status.IsNotFound()) return std::nullopt;
  std::string problem;
  if (!status.ok()) {
    if (!status.IsCorruption())
      throw StoreError("cannot read checkpoint " + to_hex(digest) + " in " + directory().string() + ": " +
                       status.ToString());
    problem = status.ToString();
  } else if (record.size() < kHeader) {
    problem = "the record is cut short";
  } else {
    std::uint32_t magic = 0, crc = 0;
    std::memcpy(&magic, record.data(), 4);
    std::memcpy(&crc, record.data() + 4, 4);
    const std::vector<rocksdb::Slice> body{rocksdb::Slice(record.data() + kHeader, record.size() - kHeader)};
    if (magic != kMagic) {
      problem = "the record has no checkpoint header";
    } else if (crc_of(body) != crc) {
      problem = "its CRC-32 does not match";
    } else {
      try {
        return ValueRecord::decode(std::string_view(record.data() + kHeader, record.size() - kHeader));
      } catch (const RecordCorrupt& e) {
        problem = e.what();
      }
    }
  }
  corrupt_ += 1;
  if (damage)
    *damage =
        "checkpoint " + to_hex(digest) + " in " + directory().string() + " is damaged (" + problem + ")";
  erase({key});
  return std::nullopt;
}

void CheckpointStore::erase(const std::vector<std::string>& digests) {
  std::lock_guard lock(mutex_);
  auto& db = database_->db();
  rocksdb::WriteBatch batch;
  std::uint64_t present = 0;
  std::vector<std::string> functions;
  for (const auto& digest : digests) {
    std::string info;
    if (db.Get(rocksdb::ReadOptions(), database_->checkpoints(), info_key(digest), &info).ok()) {
      ++present;
      const std::string key = info_key(digest);
      functions.push_back(decode_info(rocksdb::Slice(key), rocksdb::Slice(info)).function);
    }
    batch.Delete(database_->checkpoints(), value_key(digest));
    batch.Delete(database_->checkpoints(), info_key(digest));
  }
  const auto status = db.Write(rocksdb::WriteOptions(), &batch);
  if (!status.ok())
    throw StoreError("cannot delete checkpoints in " + directory().string() + ": " + status.ToString());
  count_ -= std::min<std::uint64_t>(present, count_);
  std::lock_guard functions_lock(functions_mutex_);
  for (const auto& function : functions) {
    auto it = functions_.find(function);
    if (it != functions_.end() && --it->second == 0) functions_.erase(it);
  }
}

std::vector<CheckpointInfo> CheckpointStore::list(const std::string& function, const std::string& after,
                                                  std::size_t limit) const {
  std::vector<CheckpointInfo> out;
  const auto start = unhex(after);
  if (!start) throw std::invalid_argument("checkpoint key '" + after + "' is not hexadecimal");
  std::unique_ptr<rocksdb::Iterator> it(
      database_->db().NewIterator(rocksdb::ReadOptions(), database_->checkpoints()));
  const std::string from = info_key(*start);
  for (it->Seek(from); it->Valid() && it->key().starts_with("i") && out.size() < limit; it->Next()) {
    if (!after.empty() && it->key() == rocksdb::Slice(from)) continue;
    auto info = decode_info(it->key(), it->value());
    if (!function.empty() && info.function != function) continue;
    out.push_back(std::move(info));
  }
  return out;
}

std::uint64_t CheckpointStore::drop(const CheckpointSelection& selection) {
  std::vector<std::string> prefixes;
  for (const auto& key : selection.keys) {
    auto bytes = unhex(key);
    if (!bytes || key.size() < kMinPrefixDigits)
      throw std::invalid_argument("checkpoint key '" + key + "' must be at least " +
                                  std::to_string(kMinPrefixDigits) + " hexadecimal digits");
    prefixes.push_back(key);
  }
  std::vector<std::string> doomed;
  std::unique_ptr<rocksdb::Iterator> it(
      database_->db().NewIterator(rocksdb::ReadOptions(), database_->checkpoints()));
  for (it->Seek("i"); it->Valid() && it->key().starts_with("i"); it->Next()) {
    const std::string digest = it->key().ToString().substr(1);
    bool chosen = selection.all;
    if (!chosen && !selection.function.empty())
      chosen = decode_info(it->key(), it->value()).function == selection.function;
    if (!chosen && !prefixes.empty()) {
      const std::string text = hex(digest);
      for (const auto& p : prefixes)
        if (text.compare(0, p.size(), p) == 0) chosen = true;
    }
    if (chosen) doomed.push_back(digest);
  }
  if (!doomed.empty()) erase(doomed);
  return doomed.size();
}

}  // namespace tessera
