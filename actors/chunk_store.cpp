#include "actors/chunk_store.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "actors/allocator_policy.hpp"

namespace tessera {
namespace {

std::atomic<std::uint64_t> g_instances{0};
std::atomic<std::uint64_t> g_live_stores{0};  // workers of this process (each has its store)
// What the limited workers of this process may hold together, and the process's size when the first of
// them started (what a program held before its cluster started is not charged to its workers).
std::atomic<std::uint64_t> g_process_limit{0};
std::atomic<std::uint64_t> g_baseline_rss{0};

std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (read != 2) return 0;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// A spill batch: large enough for RocksDB to write sequentially, small enough that its copies (the
// encoded records, the memtable until flushed) stay a small part of the limit.
std::uint64_t batch_bytes(std::uint64_t limit) {
  return std::clamp<std::uint64_t>(limit / 32, 1ull << 20, 32ull << 20);
}

void put_be(std::string& out, std::uint64_t value, int bytes) {
  for (int shift = 8 * (bytes - 1); shift >= 0; shift -= 8) out += static_cast<char>((value >> shift) & 0xff);
}

}  // namespace

ChunkStore::ChunkStore(MemoryOptions options, std::shared_ptr<ComputePool> pool)
    : options_(std::move(options)), pool_(std::move(pool)), instance_(++g_instances) {
  g_live_stores += 1;
  if (options_.limit > 0) {
    // glibc's adaptive threshold would otherwise serve large chunks from heaps that never shrink, and RSS
    // would keep the high-water mark of every spilled chunk.
    return_large_blocks();
    std::uint64_t expected = 0;
    g_baseline_rss.compare_exchange_strong(expected, resident_bytes());
    g_process_limit += options_.limit;
  }
  counters_.limit = options_.limit;
  // The working sets of this worker's running tasks together stay under its pause threshold.
  if (auto pool = pool_.lock(); pool && options_.limit > 0)
    pool->set_memory_budget(
        static_cast<std::uint64_t>(options_.pause_fraction * static_cast<double>(options_.limit)));
}

ChunkStore::~ChunkStore() {
  g_live_stores -= 1;
  if (options_.limit > 0) g_process_limit -= options_.limit;
}

void ChunkStore::set_name(std::string name) {
  std::lock_guard lock(mutex_);
  name_ = std::move(name);
}

std::string ChunkStore::name() const {
  std::lock_guard lock(mutex_);
  return name_;
}

std::string ChunkStore::disk_key(const ChunkKey& key, std::uint64_t batch) const {
  std::string out;
  out.reserve(30);
  put_be(out, instance_, 8);
  put_be(out, batch, 8);
  put_be(out, key.op, 8);
  put_be(out, key.slot, 4);
  put_be(out, key.part, 2);
  return out;
}

std::uint64_t ChunkStore::process_rss() {
  const std::uint64_t now = resident_bytes(), base = g_baseline_rss.load();
  return now > base ? now - base : 0;
}

std::uint64_t ChunkStore::pause_threshold() const {
  return static_cast<std::uint64_t>(options_.pause_fraction * static_cast<double>(g_process_limit.load()));
}

std::uint64_t ChunkStore::target_threshold() const {
  return static_cast<std::uint64_t>(options_.target_fraction * static_cast<double>(options_.limit));
}

std::uint64_t ChunkStore::spill_goal() const {
  const auto pool = pool_.lock();
  const std::uint64_t claim = pool ? pool->memory_claim() : 0;
  const auto room = static_cast<std::uint64_t>(options_.pause_fraction * static_cast<double>(options_.limit));
  return std::min(target_threshold(), room > claim ? room - claim : 0);
}

bool ChunkStore::put(const ChunkKey& key, Value value) {
  const std::uint64_t bytes = value.payload_bytes();
  std::uint64_t seen = largest_value_.load(std::memory_order_relaxed);
  while (bytes > seen && !largest_value_.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
  // What a job's results of unknown size reserve; grows rarely.
  if (bytes > seen)
    if (auto pool = pool_.lock()) pool->note_value_bytes(bytes);
  std::unique_lock lock(mutex_);
  if (auto old = entries_.find(key); old != entries_.end()) {
    forget(key, old->second);
    entries_.erase(old);
  }
  Entry& entry = entries_[key];
  entry.value = std::move(value);
  entry.bytes = bytes;
  counters_.managed_bytes += bytes;
  if (bytes > 0) entry.lru = lru_.insert(lru_.end(), key);
  publish_held_locked();
  if (options_.limit == 0 || counters_.managed_bytes - pinned_bytes_ <= spill_goal()) return false;
  // Past the limit itself with spilling broken: the next tasks fail now rather than at the next watch.
  if (counters_.managed_bytes > options_.limit && !spill_error_.empty() && refusal_.empty())
    set_refusal_locked(refusal_text(counters_.managed_bytes, "held"));
  lock.unlock();
  // Past the target the pool may have to close now: the spiller may be busy writing for a while.
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  auto last = last_check_ns_.load(std::memory_order_relaxed);
  if (now - last > 1'000'000 && last_check_ns_.compare_exchange_strong(last, now)) check_pressure();
  return true;
}

bool ChunkStore::check_pressure() {
  if (options_.limit == 0) return false;
  const std::uint64_t rss = process_rss(), pause = pause_threshold();
  const bool over = rss > pause;
  Admission admission = Admission::open;
  std::string line;
  {
    std::lock_guard lock(mutex_);
    std::string why;
    if (!spill_error_.empty()) {
      if (over) {
        why = refusal_text(rss, "resident");
      } else if (counters_.managed_bytes > options_.limit) {
        why = refusal_text(counters_.managed_bytes, "held");
      }
    } else if (over) {
      admission = lru_.empty() ? Admission::one_at_a_time : Admission::closed;
    }
    set_refusal_locked(std::move(why));
    const auto now = std::chrono::steady_clock::now();
    if (over != counters_.paused && now - last_log_ > std::chrono::seconds(1)) {
      last_log_ = now;
      char text[256];
      std::snprintf(
          text, sizeof text,
          over ? ": paused: resident memory %.1f MiB is above %.1f MiB (worker.memory_pause_fraction "
                 "%.2f of the limit); no new task starts until it is back under; %.1f MiB in "
                 "memory, %.1f MiB spilled"
               : ": resumed: resident memory %.1f MiB is back under %.1f MiB (worker.memory_pause_fraction "
                 "%.2f of the limit); %.1f MiB in memory, %.1f MiB spilled",
          static_cast<double>(rss) / (1 << 20), static_cast<double>(pause) / (1 << 20),
          options_.pause_fraction, static_cast<double>(counters_.managed_bytes) / (1 << 20),
          static_cast<double>(counters_.spilled_bytes) / (1 << 20));
      line = "[tessera] " + name_ + text;
    }
    counters_.paused = over;
  }
  if (auto pool = pool_.lock()) pool->set_admission(admission);
  if (!line.empty()) std::fprintf(stderr, "%s\n", line.c_str());
  return over;
}

std::string ChunkStore::refusal_text(std::uint64_t bytes, const char* what) const {
  char text[160];
  std::snprintf(
      text, sizeof text, " is over its memory limit (%.1f MiB %s, limit %.1f MiB) and cannot spill: ",
      static_cast<double>(bytes) / (1 << 20), what, static_cast<double>(options_.limit) / (1 << 20));
  return name_ + text + spill_error_;
}

void ChunkStore::forget(const ChunkKey& key, Entry& entry) {
  if (entry.in_memory) {
    if (entry.pins > 0) pinned_bytes_ -= entry.bytes;
    counters_.managed_bytes -= entry.bytes;
    if (entry.bytes > 0) lru_.erase(entry.lru);
  }
  if (entry.on_disk > 0) {
    if (!entry.in_memory) counters_.spilled_bytes -= entry.on_disk;
    pending_delete_bytes_ += entry.on_disk;  // counted as garbage once deleted on disk
    deletes_.push_back(disk_key(key, entry.spill_batch));
  }
}

Value ChunkStore::get(const ChunkKey& key) {
  return read_back(key, true, false);
}
Value ChunkStore::get_pinned(const ChunkKey& key) {
  return read_back(key, true, true);
}
Value ChunkStore::peek(const ChunkKey& key) {
  return read_back(key, false, false);
}

void ChunkStore::unpin(const ChunkKey& key) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.pins == 0) return;  // erased (or replaced) meanwhile
  Entry& entry = it->second;
  if (--entry.pins == 0 && entry.in_memory) {
    pinned_bytes_ -= entry.bytes;
    publish_held_locked();
  }
}

Value ChunkStore::read_back(const ChunkKey& key, bool readmit, bool pin) {
  std::shared_ptr<SpillStore> disk;
  std::string where;
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      auto it = entries_.find(key);
      if (it == entries_.end()) throw std::out_of_range(name_ + " does not hold this result any more");
      Entry& entry = it->second;
      if (entry.in_memory) {
        entry.generation += 1;
        if (entry.bytes > 0) lru_.splice(lru_.end(), lru_, entry.lru);
        if (pin && entry.pins++ == 0) {
          pinned_bytes_ += entry.bytes;
          publish_held_locked();
        }
        return entry.value;
      }
      if (!entry.loading) {
        entry.loading = true;
        where = disk_key(key, entry.spill_batch);
        break;
      }
      // Read back by another thread (the store actor reading ahead, say): one copy comes into memory,
      // not two.
      loaded_.wait(lock);
    }
    disk = spill_store_;
  }
  // Whatever happens below, the read has ended for those waiting on it.
  struct LoadEnds {
    ChunkStore& store;
    const ChunkKey& key;
    ~LoadEnds() {
      {
        std::lock_guard lock(store.mutex_);
        if (auto it = store.entries_.find(key); it != store.entries_.end()) it->second.loading = false;
      }
      store.loaded_.notify_all();
    }
  } load_ends{*this, key};
  const auto start = std::chrono::steady_clock::now();
  Value value;
  try {
    value = disk->read(where);
  } catch (const SpillCorrupt& e) {
    std::lock_guard lock(mutex_);
    counters_.corrupt_records += 1;
    if (auto it = entries_.find(key); it != entries_.end()) {
      forget(key, it->second);
      entries_.erase(it);
    }
    throw ChunkLost(name_ + ": a spilled result came back damaged: " + e.what());
  } catch (const SpillError& e) {
    throw SpillError(name() + ": " + e.what());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::lock_guard lock(mutex_);
  counters_.unspills += 1;
  counters_.unspill_seconds += seconds;
  auto it = entries_.find(key);
  if (it == entries_.end()) return value;  // erased meanwhile: the caller still gets what it asked for
  Entry& entry = it->second;
  counters_.unspilled_total += entry.on_disk;
  if (readmit && !entry.in_memory) {
    entry.value = value;
    entry.in_memory = true;
    entry.generation += 1;
    counters_.managed_bytes += entry.bytes;
    counters_.spilled_bytes -= entry.on_disk;  // still on disk, but held in memory: counted once
    if (entry.bytes > 0) entry.lru = lru_.insert(lru_.end(), key);
  }
  // Pinned only when held in memory: a value only the task holds is counted by its reservation.
  if (pin && entry.in_memory && entry.pins++ == 0) pinned_bytes_ += entry.bytes;
  publish_held_locked();
  return value;
}

bool ChunkStore::read_ahead(const std::vector<ChunkKey>& keys) {
  if (options_.limit == 0) return false;
  std::lock_guard lock(mutex_);
  for (const auto& key : keys)
    if (auto it = entries_.find(key); it != entries_.end() && !it->second.in_memory)
      read_ahead_.push_back(key);
  return !read_ahead_.empty();
}

void ChunkStore::read_ahead_spilled() {
  for (;;) {
    ChunkKey key;
    {
      std::lock_guard lock(mutex_);
      if (read_ahead_.empty()) return;
      key = read_ahead_.front();
      read_ahead_.pop_front();
      auto it = entries_.find(key);
      if (it == entries_.end() || it->second.in_memory) continue;  // released, or read meanwhile
      if (counters_.managed_bytes - pinned_bytes_ + it->second.bytes > spill_goal()) {
        read_ahead_.clear();  // no room now: each task reads its own
        return;
      }
    }
    try {
      read_back(key, true, false);
      read_ahead_count_.fetch_add(1, std::memory_order_relaxed);
    } catch (const std::exception&) {
      // Damaged or unreadable: the task's own read meets it and reports it with the task's name.
    }
  }
}

bool ChunkStore::contains(const ChunkKey& key) const {
  std::lock_guard lock(mutex_);
  return entries_.count(key) > 0;
}

bool ChunkStore::in_memory(const ChunkKey& key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.in_memory;
}

std::uint64_t ChunkStore::bytes(const ChunkKey& key) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  return it == entries_.end() ? 0 : it->second.bytes;
}

bool ChunkStore::erase(const ChunkKey& key) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  forget(key, it->second);
  entries_.erase(it);
  publish_held_locked();
  return !deletes_.empty();
}

bool ChunkStore::erase_operation(OpId op) {
  std::lock_guard lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->first.op == op) {
      forget(it->first, it->second);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  publish_held_locked();
  return !deletes_.empty();
}

std::shared_ptr<SpillStore> ChunkStore::open_spill_store() {
  {
    std::lock_guard lock(mutex_);
    if (spill_store_) return spill_store_;
  }
  if (!options_.open_database) throw SpillError("no directory to spill to");
  auto opened = std::make_shared<SpillStore>(options_.open_database());
  std::lock_guard lock(mutex_);
  spill_store_ = opened;
  return opened;
}

void ChunkStore::set_error(std::string error) {
  std::lock_guard lock(mutex_);
  spill_error_ = std::move(error);
  publish_held_locked();
}

std::string ChunkStore::spill_error() const {
  std::lock_guard lock(mutex_);
  return spill_error_;
}

bool ChunkStore::spill(SpillGoal goal) {
  bool pressure = goal != SpillGoal::target;
  std::vector<std::string> deletes;
  std::uint64_t delete_bytes = 0;
  {
    std::lock_guard lock(mutex_);
    deletes.swap(deletes_);
    delete_bytes = std::exchange(pending_delete_bytes_, 0);
  }
  try {
    std::shared_ptr<SpillStore> disk;
    if (!deletes.empty()) {
      disk = open_spill_store();
      disk->erase(deletes);
      std::lock_guard lock(mutex_);
      deleted_since_reclaim_ += delete_bytes;
      delete_bytes = 0;
    }
    for (;;) {
      // Chooses the least recently used entries, up to one batch.
      struct Candidate {
        ChunkKey key;
        Value value;
        std::uint64_t generation;
      };
      std::vector<Candidate> batch;
      std::vector<ChunkKey> drop_only;  // on disk already: memory is let go without writing
      std::uint64_t batch_number = 0;
      {
        std::lock_guard lock(mutex_);
        batch_number = ++spill_batches_;
        const std::uint64_t goal = pressure ? 0 : spill_goal();
        const std::uint64_t spillable = counters_.managed_bytes - pinned_bytes_;
        std::uint64_t freed = 0, chosen = 0;
        for (auto it = lru_.begin();
             it != lru_.end() && spillable - freed > goal && chosen < batch_bytes(options_.limit); ++it) {
          Entry& entry = entries_.at(*it);
          if (entry.pins > 0) continue;
          freed += entry.bytes;
          if (entry.on_disk > 0) {
            drop_only.push_back(*it);
          } else {
            chosen += entry.bytes;
            batch.push_back(Candidate{*it, entry.value, entry.generation});
          }
        }
        for (const auto& key : drop_only) {
          Entry& entry = entries_.at(key);
          lru_.erase(entry.lru);
          entry.value = Value{};
          entry.in_memory = false;
          counters_.managed_bytes -= entry.bytes;
          counters_.spilled_bytes += entry.on_disk;
        }
        if (!drop_only.empty()) publish_held_locked();
      }
      if (batch.empty()) break;
      if (!disk) disk = open_spill_store();
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::pair<std::string, Value>> values;
      values.reserve(batch.size());
      for (auto& c : batch) values.emplace_back(disk_key(c.key, batch_number), std::move(c.value));
      const auto record_sizes = disk->write_values(values);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      {
        std::lock_guard lock(mutex_);
        counters_.spill_seconds += seconds;
        for (std::size_t i = 0; i < batch.size(); ++i) {
          const auto record_bytes = record_sizes[i];
          counters_.spills += 1;
          counters_.spilled_total += record_bytes;
          auto it = entries_.find(batch[i].key);
          if (it == entries_.end()) {  // erased while it was written
            deletes_.push_back(values[i].first);
            pending_delete_bytes_ += record_bytes;
            continue;
          }
          Entry& entry = it->second;
          entry.on_disk = record_bytes;
          entry.spill_batch = batch_number;
          if (entry.generation != batch[i].generation || !entry.in_memory || entry.pins > 0)
            continue;  // read meanwhile: kept
          lru_.erase(entry.lru);
          entry.value = Value{};
          entry.in_memory = false;
          counters_.managed_bytes -= entry.bytes;
          counters_.spilled_bytes += entry.on_disk;
        }
        spill_error_.clear();
        publish_held_locked();
      }
      // The pool may open again (and the goal go back to the target), or take one task at a time once
      // nothing is left to spill.
      const bool over = check_pressure();
      if (goal == SpillGoal::while_over) pressure = over;
    }

    // Deleted records' space comes back once there is as much garbage as live data (and some), or when
    // nothing live is left.
    bool reclaim = false, clear = false;
    {
      std::lock_guard lock(mutex_);
      // Nothing live on disk any more (no record, not even of a chunk read back into memory): all of it
      // comes back at once, without reading a file.
      clear =
          deleted_since_reclaim_ > 0 && deletes_.empty() &&
          std::none_of(entries_.begin(), entries_.end(), [](const auto& e) { return e.second.on_disk > 0; });
      reclaim = clear ||
                (deleted_since_reclaim_ > (64ull << 20) && deleted_since_reclaim_ > counters_.spilled_bytes);
      if (reclaim) deleted_since_reclaim_ = 0;
    }
    if (reclaim) {
      if (!disk) disk = open_spill_store();
      try {
        if (clear)
          disk->clear();
        else
          disk->reclaim();
      } catch (const SpillError& e) {
        // Space not given back (a damaged file the compaction cannot read, say) is no reason to refuse
        // work: what is live still reads, and the next reclaim tries again.
        std::fprintf(stderr, "[tessera] %s: %s\n", name().c_str(), e.what());
      }
    }
    return true;
  } catch (const std::exception& e) {
    set_error(e.what());
    std::lock_guard lock(mutex_);
    // Deletes that failed are tried again next time.
    deletes_.insert(deletes_.end(), deletes.begin(), deletes.end());
    pending_delete_bytes_ += delete_bytes;
    return false;
  }
}

WorkerMemory ChunkStore::report() const {
  std::lock_guard lock(mutex_);
  WorkerMemory out = counters_;
  out.managed_bytes += static_cast<std::uint64_t>(std::max<std::int64_t>(0, inline_bytes_.load()));
  out.rss = process_rss();
  out.process_rss = resident_bytes();
  out.process_workers = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, g_live_stores.load()));
  out.spill_error = spill_error_;
  return out;
}

void ChunkStore::publish_held_locked() {
  if (options_.limit == 0) return;
  if (auto pool = pool_.lock())
    pool->set_held(counters_.managed_bytes - pinned_bytes_, !spill_error_.empty());
}

void ChunkStore::set_refusal_locked(std::string why) {
  refusal_ = std::move(why);
  refusing_.store(!refusal_.empty(), std::memory_order_release);
}

std::optional<std::string> ChunkStore::refusal() const {
  if (!refusing_.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (refusal_.empty()) return std::nullopt;
  return refusal_;
}

}  // namespace tessera
