// ResultStore: a node's RocksDB store of stream results. Each result is kept under (stream, sequence id),
// at most once: a second write of an id is refused, which is what makes a rerun after a worker failure
// exactly-once. Writes are synced before they return, so a result counts as delivered only once durable;
// reads work while a stream runs and after the node restarts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/stream_record.hpp"
#include "graph/value.hpp"

#include "storage/node_database.hpp"

namespace tessera {

struct StreamInfo {
  std::uint64_t id = 0;
  std::string simulation;
  bool closed = false;
  std::uint64_t pushed = 0;
};

class ResultStore {
 public:
  // Opens (creating it if needed) the store in `directory`. Throws StoreError naming the directory.
  explicit ResultStore(const std::filesystem::path& directory);
  // Keeps its results in the default column family of a node's database shared with its spilled chunks.
  explicit ResultStore(std::shared_ptr<NodeDatabase> database);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  const std::filesystem::path& directory() const { return directory_; }

  // Streams: a new id for a simulation, and its record (pushed count, closed).
  std::uint64_t create_stream(const std::string& simulation);
  void update_stream(const StreamInfo& info);
  std::optional<StreamInfo> stream(std::uint64_t id) const;
  std::vector<StreamInfo> streams() const;

  // Writes the results not stored yet, in one synced batch; returns those it wrote (a result whose id is
  // already stored is a rerun's duplicate and is skipped). One writer per stream at a time. A writer that
  // knows its ids are new (the stream actor answers each id once) passes known_new and skips the reads.
  enum class Check { stored, known_new };
  std::vector<std::uint64_t> put(std::uint64_t stream, const std::vector<StreamResult>& results,
                                 Check check = Check::stored);
  bool contains(std::uint64_t stream, std::uint64_t id) const;
  std::optional<StreamResult> get(std::uint64_t stream, std::uint64_t id) const;
  // Results with first <= id < last, in id order; `visit` returns false to stop.
  void scan(std::uint64_t stream, std::uint64_t first, std::uint64_t last,
            const std::function<bool(const StreamResult&)>& visit) const;
  std::uint64_t count(std::uint64_t stream) const;

 private:
  std::shared_ptr<NodeDatabase> database_;
  std::filesystem::path directory_;
  rocksdb::DB* db_;
};

}  // namespace tessera
