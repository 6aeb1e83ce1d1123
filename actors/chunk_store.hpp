// ChunkStore: every result (and every input copy from another worker) a worker holds, with exact
// accounting of the bytes each keeps alive. Past the memory target the least recently used move to the
// node's RocksDB (SpillStore) and come back when read. The worker's chunk store actor
// (chunk_store_actor.hpp) does the spilling, deleting and watching of memory on its own thread; operation
// actors and compute threads put, read and erase here directly. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/compute_pool.hpp"
#include "graph/operation.hpp"
#include "graph/value.hpp"
#include "scheduling/status.hpp"
#include "storage/spill_store.hpp"

namespace tessera {

// What a store entry is: a task's result (part kResultPart) or the input copy that arrived for one
// column of a task from another worker (part = the column).
inline constexpr std::uint16_t kResultPart = 0xffff;
// Values smaller than this stay with their slot: counted here, never spilled (a record costs more).
inline constexpr std::uint64_t kInlineBytes = 1024;
struct ChunkKey {
  OpId op = 0;
  std::uint32_t slot = 0;
  std::uint16_t part = kResultPart;
  bool operator==(const ChunkKey&) const = default;
};

// How a worker bounds its memory. The fractions are of `limit`; RSS counts from the process's resident
// size when its first limited worker started, and a process with several workers pauses against the sum
// of their limits.
struct MemoryOptions {
  std::uint64_t limit = 0;       // bytes; 0: nothing spills, nothing pauses
  double target_fraction = 0.6;  // managed bytes above this spill, least recently used first
  double pause_fraction = 0.8;   // RSS above this: the worker starts no new task until back under
  // Opens the node's database on the first spill (a temporary directory unless data_dir is set).
  std::function<std::shared_ptr<NodeDatabase>()> open_database;
};

// A held result that cannot be read back: its spilled record failed its checksum or did not decode.
class ChunkLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How far a spill goes: down to the target; everything while memory is above the pause fraction (back
// to the target once it is under); or everything.
enum class SpillGoal : std::uint8_t { target, while_over, everything };

class ChunkStore {
 public:
  // `pool`: the worker's compute pool, closed while memory is above the pause fraction (may be null).
  explicit ChunkStore(MemoryOptions options, std::shared_ptr<ComputePool> pool = nullptr);
  ~ChunkStore();
  ChunkStore(const ChunkStore&) = delete;
  ChunkStore& operator=(const ChunkStore&) = delete;

  // Named in errors, e.g. "worker 2 ('node-a')"; set when the worker learns its id.
  void set_name(std::string name);
  std::string name() const;
  const MemoryOptions& options() const { return options_; }

  // Takes a value; a key already held is replaced. Returns true when memory is now above the target and
  // the store actor should spill.
  bool put(const ChunkKey& key, Value value);
  // The value under `key`, read back from disk if it was spilled (and kept in memory again, as recently
  // used). Throws ChunkLost for a damaged record, SpillError when the disk refuses, std::out_of_range for a
  // key not held.
  Value get(const ChunkKey& key);
  // As get, for a task about to run on it: the entry is pinned (never chosen for spilling: writing it
  // would free nothing while the task holds it) until unpin().
  Value get_pinned(const ChunkKey& key);
  void unpin(const ChunkKey& key);
  // As get, but a spilled value is not taken back into memory: for sending it to another worker.
  Value peek(const ChunkKey& key);
  bool contains(const ChunkKey& key) const;
  // Whether the value under `key` is in memory now (false when only on disk, or not held).
  bool in_memory(const ChunkKey& key) const;
  // What the value under `key` keeps alive in memory when held there (0 for a key not held).
  std::uint64_t bytes(const ChunkKey& key) const;
  // Lets go of one entry, or of every entry of an operation; what was on disk is deleted by the store
  // actor. Returns true when there is disk work for it.
  bool erase(const ChunkKey& key);
  bool erase_operation(OpId op);
  // Asks for the spilled ones among `keys` to be read back ahead of the task that will use them (by the
  // store actor: read_ahead_spilled). Returns true when there is such work.
  bool read_ahead(const std::vector<ChunkKey>& keys);
  // The store actor's, after spilling: reads back what read_ahead asked for, in the order asked, while it
  // fits under the spill goal (reading ahead never makes the store spill); what does not fit is left
  // to the task's own read. A record that cannot be read is left to it too, to report.
  void read_ahead_spilled();
  // How many values were read back ahead of their task (for tests and benchmarks).
  std::uint64_t read_ahead_count() const { return read_ahead_count_.load(std::memory_order_relaxed); }
  // Small values kept outside the store, in their slots: counted in the managed bytes all the same.
  void count_inline(std::int64_t bytes) { inline_bytes_.fetch_add(bytes, std::memory_order_relaxed); }

  // The store actor's work, on its thread: deletes, then spills least recently used first as far as
  // `goal` says, then reclaims deleted space when enough was deleted. Returns false when a spill failed
  // (spill_error() says why).
  bool spill(SpillGoal goal);
  std::string spill_error() const;

  // Resident bytes of this process above its start, and the limit a pause compares them against.
  static std::uint64_t process_rss();
  std::uint64_t pause_threshold() const;
  std::uint64_t target_threshold() const;
  // What spilling brings the unpinned bytes in memory down to: the target, less what the running (and
  // the next waiting) compute jobs reserve beyond the pause threshold's room.
  std::uint64_t spill_goal() const;
  WorkerMemory report() const;
  // Why tasks must fail instead of starting: memory is above the pause fraction (or what it holds above
  // the limit) and spilling fails, so waiting would never end. nullopt otherwise; cheap to ask then.
  std::optional<std::string> refusal() const;
  // Samples resident memory and sets the pool's admission: closed above the pause fraction while
  // something is left to spill, one task at a time once nothing is, open below it (or when spilling
  // fails: then tasks are refused with the reason). Logs a pause and its end. Returns whether over.
  bool check_pressure();

 private:
  struct KeyHash {
    std::size_t operator()(const ChunkKey& k) const {
      return std::hash<std::uint64_t>()(k.op * 0x9e3779b97f4a7c15ULL ^
                                        (std::uint64_t{k.slot} << 16 | k.part));
    }
  };
  struct Entry {
    Value value;                    // empty when only on disk
    std::uint64_t bytes = 0;        // what the value keeps alive in memory
    std::uint64_t on_disk = 0;      // its record's bytes, when a copy is on disk
    std::uint64_t spill_batch = 0;  // the batch its record was written in (part of the record's key)
    bool in_memory = true;
    std::uint64_t generation = 0;  // bumped on every read, so a spill can tell it was used meanwhile
    std::uint32_t pins = 0;        // tasks running on it
    bool loading = false;          // being read back: another read waits for it (loaded_) instead
    std::list<ChunkKey>::iterator lru;
  };
  // A record's key: the store's instance, the spill batch, then the chunk's key. Batches count up, so
  // each batch's table file lies above every file before it and ingesting it reads none of them (with
  // chunk keys first, each ingest read a block of every file its range crossed: a tenth of a spilling
  // worker's time).
  std::string disk_key(const ChunkKey& key, std::uint64_t batch) const;
  Value read_back(const ChunkKey& key, bool readmit, bool pin);
  void forget(const ChunkKey& key, Entry& entry);  // with mutex_ held
  std::shared_ptr<SpillStore> open_spill_store();  // on first use; only the store actor's thread
  void set_error(std::string error);
  void set_refusal_locked(std::string why);  // with mutex_ held
  // Tells the pool what could be spilled (managed, not pinned) and whether spilling fails; with mutex_ held.
  void publish_held_locked();
  std::string refusal_text(std::uint64_t bytes, const char* what) const;

  const MemoryOptions options_;
  // Weak: a compute job may hold the last reference to this store, and the pool must not end on its own
  // thread.
  const std::weak_ptr<ComputePool> pool_;
  std::atomic<std::int64_t> last_check_ns_{0};  // put() samples memory at most once a millisecond
  std::chrono::steady_clock::time_point last_log_{};
  const std::uint64_t instance_;  // separates the keys of workers sharing one process's database
  mutable std::mutex mutex_;
  std::condition_variable loaded_;  // an entry's read back ended (Entry::loading)
  std::string name_ = "worker";
  std::unordered_map<ChunkKey, Entry, KeyHash> entries_;
  std::list<ChunkKey> lru_;           // entries in memory with bytes, least recently used first
  std::vector<std::string> deletes_;  // disk records of erased entries, for the store actor
  std::deque<ChunkKey> read_ahead_;   // spilled entries a waiting task will read, for the store actor
  std::atomic<std::uint64_t> read_ahead_count_{0};
  std::atomic<std::uint64_t> largest_value_{0};  // put here so far (ComputePool::note_value_bytes)
  std::uint64_t pending_delete_bytes_ = 0;       // of deletes_, not applied on disk yet
  std::uint64_t deleted_since_reclaim_ = 0;      // deleted on disk since the last reclaim
  std::uint64_t spill_batches_ = 0;              // batches written, with mutex_ held
  WorkerMemory counters_;
  std::uint64_t pinned_bytes_ = 0;  // of entries in memory with pins
  std::string spill_error_;
  std::string refusal_;
  std::atomic<bool> refusing_{false};
  std::atomic<std::int64_t> inline_bytes_{0};
  std::shared_ptr<SpillStore> spill_store_;  // set once, under mutex_, before anything is spilled
};

}  // namespace tessera
