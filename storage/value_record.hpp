// The layout a value takes as a RocksDB record (spilled chunks, checkpoints): a small prefix (magic,
// frame count, header size, each frame's size), then the Cap'n Proto header and each frame, every part
// starting on an 8-byte boundary. `parts` views the encoding and the value's own buffers, so RocksDB's
// write batch is the only copy made.
#pragma once

#include <rocksdb/slice.h>

#include <cstdint>
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

  // The value a record holds; RecordCorrupt when it does not decode.
  static Value decode(std::string_view record);

 private:
  wire::Encoded encoded_;
  std::string prefix_;
  std::vector<rocksdb::Slice> parts_;
  std::uint64_t size_ = 0;
};

}  // namespace tessera
