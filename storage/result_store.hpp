// ResultStore: a node's RocksDB store of streams. Each result is kept under (stream, sequence id), at most
// once: a second write of an id is refused, which is what makes a rerun after a worker failure
// exactly-once. Parameter sets are written ahead when a stream accepts them and deleted in the same batch
// that stores their result, so after a restart the sets still written ahead are exactly those to run
// again. Result writes are synced before they return, so a result counts as delivered only once durable;
// reads work while a stream runs and after the node restarts.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/simulation.hpp"
#include "graph/stream_record.hpp"
#include "graph/stream_settings.hpp"
#include "graph/value.hpp"

#include "storage/node_database.hpp"

namespace tessera {

// A stream's record: the settings it was opened with (stored once, so that a restarted node resumes it
// as it was; isolation stored resolved) and its counters (rewritten with each push).
struct StreamInfo {
  std::uint64_t id = 0;
  StreamSettings settings{};
  bool closed = false;       // finished: closed and every accepted set answered
  std::uint64_t pushed = 0;  // parameter sets accepted: ids below this
  bool close_requested = false;
  // Why it was closed before its client's input ended (StreamSettings::input), or lost its client: it
  // is incomplete, and may be resumed. Empty: it was not.
  std::string ended_early{};
  // A program simulation's stream: its records carry a ProgramOutcome, and its result's elements may be
  // named (the declaration's `outputs`; empty: unnamed).
  bool program = false;
  std::vector<std::string> result_names{};
};

// Where an ensemble's generator was when it made a push: its saved state, the stream's ids proposed so
// far (below `asked`), the ids whose results it was told, its own count of sets proposed, which stream id
// is which of its sets (segments: from stream id `first`, its set `second` on), and the ids proposed by a
// state a restart lost (orphans: their results are stored, not told).
struct GeneratorCheckpoint {
  std::string state;
  std::uint64_t asked = 0;
  std::vector<IdRange> told;
  std::uint64_t sequence = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> segments;
  std::vector<IdRange> orphans;
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

  // Streams: a new id (never one used before in this store), and its record (pushed count, closed).
  std::uint64_t create_stream(const std::string& simulation);
  // The same with the settings a restart resumes it with; info.id is ignored.
  std::uint64_t create_stream(StreamInfo info);
  void update_stream(const StreamInfo& info);

  // Writes parameter sets first_id, first_id + 1, ... ahead as one record, with the stream's record
  // (info.pushed says how many are accepted now), in one batch. Not synced: sync() makes every write so
  // far durable, so a stream can accept many pushes per sync.
  // `priorities` and `timeouts` (seconds; 0: the stream's) are each aligned with `parameters`, or empty
  // when every one is 0. An ensemble's push comes with its generator's checkpoint, which replaces the one
  // before in the same batch: a checkpoint's proposals are always accepted.
  void accept(const StreamInfo& info, std::uint64_t first_id, std::span<const Value> parameters,
              std::span<const double> priorities = {}, double accepted_at = 0,
              std::span<const double> timeouts = {}, const GeneratorCheckpoint* checkpoint = nullptr);
  void sync();
  // An ensemble generator's last checkpoint (written with a push).
  std::optional<GeneratorCheckpoint> generator(std::uint64_t stream) const;
  // The pushes written ahead and not yet deleted, in id order, each with its sets that have no stored
  // result.
  struct PendingBatch {
    std::uint64_t first_id = 0;
    std::vector<std::pair<std::uint64_t, Value>> unanswered;
    std::vector<double> priorities{};  // aligned with unanswered; empty when every one is 0
    double accepted_at = 0;            // SetTimeline's pushed for these sets; 0 unknown
    std::vector<double> timeouts{};    // aligned with unanswered; empty when every one is 0
  };
  std::vector<PendingBatch> pending(std::uint64_t stream) const;
  // Deletes written-ahead pushes whose sets are all answered (ones that were answered before a restart).
  void forget_pushes(std::uint64_t stream, std::span<const std::uint64_t> first_ids);
  std::optional<StreamInfo> stream(std::uint64_t id) const;
  std::vector<StreamInfo> streams() const;

  // Writes the results not stored yet, in one synced batch that also deletes the written-ahead pushes
  // `answered` (first ids: pushes these results complete); returns those it wrote (a result whose id is
  // already stored is a rerun's duplicate and is skipped). One
  // writer per stream at a time. A writer that knows its ids are new (the stream actor answers each id once)
  // passes known_new and skips the reads.
  enum class Check { stored, known_new };
  std::vector<std::uint64_t> put(std::uint64_t stream, const std::vector<StreamResult>& results,
                                 Check check = Check::stored, std::span<const std::uint64_t> answered = {});
  bool contains(std::uint64_t stream, std::uint64_t id) const;
  std::optional<StreamResult> get(std::uint64_t stream, std::uint64_t id) const;
  // Results with first <= id < last, in id order; `visit` returns false to stop, and may move from each.
  void scan(std::uint64_t stream, std::uint64_t first, std::uint64_t last,
            const std::function<bool(StreamResult&)>& visit) const;
  std::uint64_t count(std::uint64_t stream) const;
  // Deletes a stream: its record, results, pushes written ahead and generator checkpoint, and compacts
  // their key ranges so the disk space comes back. False when there is no such stream. Its id is never
  // used again. The caller makes sure nothing writes to it any more (a finished stream).
  bool drop_stream(std::uint64_t stream);

 private:
  void read_names(StreamInfo& info) const;
  std::shared_ptr<NodeDatabase> database_;
  std::filesystem::path directory_;
  rocksdb::DB* db_;
};

}  // namespace tessera
