// The layout a value takes as a RocksDB record (spilled chunks, checkpoints): a small prefix (magic,
// frame count, header size, each frame's size), then the Cap'n Proto header and each frame, every part
// starting on an 8-byte boundary. `parts` views the encoding and the value's own buffers, so RocksDB's
// write batch is the only copy made.
#pragma once

#include <rocksdb/slice.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/value.hpp"
#include "messages/wire_codec.hpp"

namespace tessera {

// A record that does not decode: cut short, a wrong magic, too many frames, or a malformed header.
class RecordCorrupt : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ValueRecord {
 public:
  explicit ValueRecord(const Value& value);
  ValueRecord(const ValueRecord&) = delete;
  ValueRecord& operator=(const ValueRecord&) = delete;

  const std::vector<rocksdb::Slice>& parts() const { return parts_; }
  std::uint64_t size() const { return size_; }
  // The record as one string (a copy).
  std::string flat() const;

  // The value a record holds; RecordCorrupt when it does not decode. With an `owner` keeping the record's
  // bytes alive, large frames on a kAdoptAlignment boundary become the value's storage as they are (no
  // copy); the others are copied.
  static Value decode(std::string_view record, std::shared_ptr<const void> owner = nullptr);
  // Where the first frame starts in a record that begins with `start`; nullopt when `start` is too short
  // to tell or the record has no frame. A reader places the record so that this offset is aligned.
  static std::optional<std::uint64_t> first_frame_offset(std::string_view start);
  // A chunk's elements are adopted from a record only at this alignment, the one every chunk allocated in
  // memory has: vectorized kernels peel to it, and a sum over the same numbers at another alignment
  // rounds differently (a spilled chunk read back must give the results it gave before).
  static constexpr std::size_t kAdoptAlignment = 16;

 private:
  wire::Encoded encoded_;
  std::string prefix_;
  std::vector<rocksdb::Slice> parts_;
  std::uint64_t size_ = 0;
};

}  // namespace tessera
