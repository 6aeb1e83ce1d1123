// Memory-bounded workers in one process: a worker's chunk store accounts every result, spills the least
// recently used past its target to RocksDB and reads them back; workloads holding four times the limit
// give the unlimited run's results within baseline + 1.25 x the limit of resident memory; an unwritable
// data directory fails tasks with a clear error instead of the process, and a damaged spilled record is
// computed again from lineage.
#include <gtest/gtest.h>
#include <unistd.h>

#include <Eigen/Dense>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <random>
#include <tessera/array.hpp>
#include <tessera/linalg.hpp>
#include <tessera/tessera.hpp>

#include "actors/chunk_store.hpp"
#include "storage/result_store.hpp"
#include "storage/spill_store.hpp"
#include "support/scratch_dir.hpp"
#include "test_util.hpp"

namespace memory_tasks {

// A 4 MiB block of doubles, made on the worker.
std::vector<double> block(std::int64_t i) {
  std::vector<double> out(512 * 1024);
  for (std::size_t k = 0; k < out.size(); ++k)
    out[k] = static_cast<double>(i) + 1e-6 * static_cast<double>(k);
  return out;
}
TESSERA_TASK(block);

double block_total(const std::vector<double>& xs) {
  return std::accumulate(xs.begin(), xs.end(), 0.0);
}
TESSERA_TASK(block_total);

double plus(double a, double b) {
  return a + b;
}
TESSERA_TASK(plus);

}  // namespace memory_tasks

namespace {

namespace fs = std::filesystem;
using tessera::testing::eventually;
using tessera::testing::ScratchDir;

constexpr std::uint64_t MiB = 1ull << 20;
#ifdef TESSERA_SANITIZED
// A sanitizer's shadow memory and quarantine are most of the resident memory: a bound on it would measure
// the sanitizer. Everything else is checked; the bounds are checked in the plain build.
constexpr bool kRssIsOurs = false;
#else
constexpr bool kRssIsOurs = true;
#endif

std::uint64_t status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(std::strlen(field)));
  return 0;
}

// Peak resident memory from now on: the kernel's high-water mark, reset here.
struct PeakRss {
  std::uint64_t baseline;
  PeakRss() {
    std::ofstream("/proc/self/clear_refs") << "5";
    baseline = status_kib("VmRSS:") * 1024;
  }
  std::uint64_t above_baseline() const {
    const std::uint64_t peak = status_kib("VmHWM:") * 1024;
    return peak > baseline ? peak - baseline : 0;
  }
};

tessera::ClusterOptions limited(std::uint64_t limit, const fs::path& dir, std::uint32_t workers = 1) {
  tessera::ClusterOptions options;
  options.workers = workers;
  options.threads_per_worker = 2;
  options.memory_limit = limit;
  options.data_dir = dir.string();
  return options;
}

tessera::WorkerMemory total_memory(const tessera::SchedulerStatus& status) {
  tessera::WorkerMemory total;
  for (const auto& m : status.memory) {
    total.managed_bytes += m.managed_bytes;
    total.spilled_bytes += m.spilled_bytes;
    total.spills += m.spills;
    total.unspills += m.unspills;
    total.corrupt_records += m.corrupt_records;
    if (!m.spill_error.empty()) total.spill_error = m.spill_error;
  }
  return total;
}

// ---- The chunk store alone, with a real RocksDB ----

tessera::Value megabytes_of(double fill, std::size_t mib) {
  return tessera::Value(std::vector<double>(mib * MiB / sizeof(double), fill));
}

// ---- Admission: a compute job starts when its reservation fits the budget ----

// A job that records that it ran and then waits until released (or its deadline passes).
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    changed.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex);
    changed.wait_for(lock, std::chrono::seconds(20), [&] { return open; });
  }
};

// (What a job touches is declared before the pool: the pool's threads are joined before it ends.)
TEST(ComputePoolAdmission, JobsWhoseReservationsTogetherExceedTheBudgetRunOneAfterTheOther) {
  Gate first_may_end;
  std::atomic<bool> first_running{false}, second_saw_first_running{false}, second_ran{false};
  auto pool = std::make_shared<tessera::ComputePool>(2);
  pool->set_memory_budget(100);
  pool->submit(
      [&] {
        first_running = true;
        first_may_end.wait();
        first_running = false;
      },
      60);
  ASSERT_TRUE(eventually([&] { return first_running.load(); }));
  pool->submit(
      [&] {
        second_saw_first_running = first_running.load();
        second_ran = true;
      },
      60);
  // The running job's and the waiting one's: what spilling makes room for.
  ASSERT_TRUE(eventually([&] { return pool->memory_claim() == 120u; }));
  first_may_end.release();
  ASSERT_TRUE(eventually([&] { return second_ran.load(); }));
  EXPECT_FALSE(second_saw_first_running.load()) << "60 + 60 bytes ran together under a budget of 100";
}

TEST(ComputePoolAdmission, JobsThatFitTogetherRunSideBySide) {
  Gate both_started;
  std::atomic<int> started{0};
  auto pool = std::make_shared<tessera::ComputePool>(2);
  pool->set_memory_budget(100);
  for (int i = 0; i < 2; ++i)
    pool->submit(
        [&] {
          if (++started == 2) both_started.release();
          both_started.wait();
        },
        40);
  // Each waits for the other: they only end in time when both run at once.
  EXPECT_TRUE(eventually([&] { return started.load() == 2; }));
}

// The first tasks of an operation without inputs: their results' size is the largest value seen, from
// when they start, and grows while they run; one seen before they start is what they wait for.
TEST(ComputePoolAdmission, ResultsOfUnknownSizeReserveTheLargestValueSeenAndGrowWithIt) {
  Gate may_end;
  std::atomic<bool> first_running{false}, second_ran{false};
  auto pool = std::make_shared<tessera::ComputePool>(2);
  pool->set_memory_budget(100);
  pool->note_value_bytes(2);  // a small warm-up value
  pool->submit(
      [&] {
        first_running = true;
        may_end.wait();
      },
      0, 1);
  ASSERT_TRUE(eventually([&] { return first_running.load(); }));
  EXPECT_EQ(pool->memory_claim(), 2u);
  // Its result turns out to be 60 bytes (a job ended with one that large): the running job's claim
  // grows with it, and a second such job waits, since 60 + 60 exceed the budget.
  pool->note_value_bytes(60);
  EXPECT_EQ(pool->memory_claim(), 60u);
  pool->submit([&] { second_ran = true; }, 0, 1);
  ASSERT_TRUE(eventually([&] { return pool->memory_claim() == 120u; }));
  EXPECT_FALSE(second_ran.load());
  may_end.release();
  EXPECT_TRUE(eventually([&] { return second_ran.load(); }));
  EXPECT_TRUE(eventually([&] { return pool->memory_claim() == 0u; }));
}

TEST(ComputePoolAdmission, HeldBytesMakeAJobWaitUntilSpilledAndAHandedOverResultCountsUntilReleased) {
  std::atomic<bool> ran{false}, second{false}, third{false};
  auto pool = std::make_shared<tessera::ComputePool>(2);
  pool->set_memory_budget(100);
  // Nothing runs, but the store holds 70 bytes it can spill: a job of 60 waits for the spill.
  pool->set_held(70, false);
  pool->submit([&] { ran = true; }, 60);
  ASSERT_TRUE(eventually([&] { return pool->memory_claim() == 60; }));
  EXPECT_FALSE(ran.load());
  pool->set_held(30, false);  // spilled down: 30 + 60 fit
  ASSERT_TRUE(eventually([&] { return ran.load(); }));

  // A result handed over (between its job's end and the store's put) counts like a running job.
  auto token = tessera::ComputePool::hand_over(pool, 50);
  ASSERT_NE(token, nullptr);
  pool->submit([&] { second = true; }, 30);  // 30 held + 50 handed over + 30 > 100
  ASSERT_TRUE(eventually([&] { return pool->memory_claim() == 30; }));
  EXPECT_FALSE(second.load());
  token.reset();
  EXPECT_TRUE(eventually([&] { return second.load(); }));

  // Spilling that fails cannot make room: with nothing running, the job starts (and its tasks are refused
  // with the store's reason) instead of waiting for ever.
  pool->set_held(1000, true);
  pool->submit([&] { third = true; }, 10);
  EXPECT_TRUE(eventually([&] { return third.load(); }));
}

TEST(ChunkStore, APinnedEntryIsNotSpilledAndRunningReservationsLowerTheGoal) {
  Gate may_end;
  std::atomic<bool> running{false};
  ScratchDir dir{"tessera-memory-test"};
  auto database = std::make_shared<tessera::NodeDatabase>(dir.path());
  auto pool = std::make_shared<tessera::ComputePool>(1);
  tessera::MemoryOptions options;
  options.limit = 40 * MiB;
  options.open_database = [database] { return database; };
  tessera::ChunkStore store(options, pool);
  EXPECT_EQ(pool->memory_budget(), 32 * MiB);  // pause_fraction 0.8 of the limit
  EXPECT_EQ(store.spill_goal(), 24 * MiB);     // target_fraction 0.6, nothing reserved
  const tessera::ChunkKey a{1, 0}, b{1, 1}, c{1, 2};
  store.put(a, megabytes_of(1, 8));
  store.put(b, megabytes_of(2, 8));
  store.put(c, megabytes_of(3, 8));
  (void)store.get_pinned(a);  // a task runs on a, least recently used before this read
  store.get(c);
  store.spill(tessera::SpillGoal::everything);
  EXPECT_TRUE(store.in_memory(a)) << "spilling a value a running task holds frees nothing";
  EXPECT_FALSE(store.in_memory(b));
  EXPECT_FALSE(store.in_memory(c));
  store.unpin(a);
  store.spill(tessera::SpillGoal::everything);
  EXPECT_FALSE(store.in_memory(a));
  EXPECT_EQ(store.get(b).as_doubles().front(), 2.0);

  // A job waiting with a reservation of 20 MiB leaves room for 12 MiB of held values.
  pool->submit(
      [&] {
        running = true;
        may_end.wait();
      },
      20 * MiB);
  ASSERT_TRUE(eventually([&] { return running.load(); }));
  EXPECT_EQ(store.spill_goal(), 12 * MiB);
  may_end.release();
}

TEST(ChunkStore, SpillsTheLeastRecentlyUsedPastItsTargetAndReadsThemBack) {
  ScratchDir dir{"tessera-memory-test"};
  auto database = std::make_shared<tessera::NodeDatabase>(dir.path());
  tessera::ChunkStore store(
      {.limit = 10 * MiB, .target_fraction = 0.5, .pause_fraction = 0.8, .open_database = [&] {
         return database;
       }});
  bool over = false;
  for (int i = 0; i < 8; ++i) over = store.put({1, static_cast<std::uint32_t>(i)}, megabytes_of(i, 1));
  EXPECT_TRUE(over);  // 8 MiB held, the target is 5 MiB
  EXPECT_EQ(store.report().managed_bytes, 8 * MiB);
  store.get({1, 0});  // the oldest is used again: it stays
  ASSERT_TRUE(store.spill(tessera::SpillGoal::target));
  auto report = store.report();
  EXPECT_LE(report.managed_bytes, 5 * MiB);
  EXPECT_EQ(report.spills, 3u);  // 1, 2 and 3 went (down to the target); 0 was read again
  EXPECT_GT(report.spilled_bytes, 3 * MiB);
  // Read back exactly, from disk, and counted.
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(store.get({1, static_cast<std::uint32_t>(i)}).as_doubles(),
              std::vector<double>(MiB / sizeof(double), i));
  report = store.report();
  EXPECT_EQ(report.unspills, 3u);
  EXPECT_EQ(report.managed_bytes, 8 * MiB);
  EXPECT_EQ(report.spilled_bytes, 0u);  // all in memory again (their copies on disk are not counted twice)
  // Erased while spilled: gone from disk too.
  ASSERT_TRUE(store.spill(tessera::SpillGoal::everything));
  EXPECT_EQ(store.report().managed_bytes, 0u);
  store.erase_operation(1);
  ASSERT_TRUE(store.spill(tessera::SpillGoal::target));
  report = store.report();
  EXPECT_EQ(report.managed_bytes + report.spilled_bytes, 0u);
  EXPECT_THROW(store.get({1, 0}), std::out_of_range);
}

// Spilled inputs of a waiting task are read back ahead of it, in the order asked, as far as they fit
// under the spill goal; what does not fit stays on disk for the task to read itself.
TEST(ChunkStore, SpilledInputsAreReadAheadOnlyIntoRoom) {
  ScratchDir dir{"tessera-memory-test"};
  auto database = std::make_shared<tessera::NodeDatabase>(dir.path());
  tessera::ChunkStore store(
      {.limit = 10 * MiB, .target_fraction = 0.5, .pause_fraction = 0.8, .open_database = [&] {
         return database;
       }});
  for (int i = 0; i < 8; ++i) store.put({1, static_cast<std::uint32_t>(i)}, megabytes_of(i, 1));
  ASSERT_TRUE(store.spill(tessera::SpillGoal::everything));
  EXPECT_FALSE(store.read_ahead({}));
  // Three fit the 5 MiB goal with one more in memory; the fifth does not, nor what comes after it.
  store.get({1, 7});
  ASSERT_TRUE(store.read_ahead({{1, 0}, {1, 7}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}}));
  store.read_ahead_spilled();
  EXPECT_EQ(store.read_ahead_count(), 4u);  // 0 to 3 (7 was in memory already)
  for (std::uint32_t i : {0u, 1u, 2u, 3u}) EXPECT_TRUE(store.in_memory({1, i})) << i;
  for (std::uint32_t i : {4u, 5u, 6u}) EXPECT_FALSE(store.in_memory({1, i})) << i;
  EXPECT_LE(store.report().managed_bytes, 5 * MiB);
  EXPECT_EQ(store.get({1, 2}).as_doubles().front(), 2.0);
  // Nothing left asked for: the task reads the rest itself.
  store.read_ahead_spilled();
  EXPECT_EQ(store.read_ahead_count(), 4u);
  EXPECT_EQ(store.get({1, 5}).as_doubles().front(), 5.0);
}

TEST(ChunkStore, ADirectoryThatCannotBeWrittenIsAClearErrorAndNothingIsLost) {
  tessera::ChunkStore store(
      {.limit = 4 * MiB, .target_fraction = 0.5, .pause_fraction = 0.8, .open_database = [] {
         return std::make_shared<tessera::NodeDatabase>("/proc/tessera-no-spill");
       }});
  store.set_name("worker 3 ('w')");
  for (int i = 0; i < 5; ++i) store.put({2, static_cast<std::uint32_t>(i)}, megabytes_of(i, 1));
  EXPECT_FALSE(store.refusal());  // over the limit, but spilling has not failed yet
  EXPECT_FALSE(store.spill(tessera::SpillGoal::target));
  EXPECT_NE(store.spill_error().find("/proc/tessera-no-spill"), std::string::npos) << store.spill_error();
  // Holding more than the limit with nowhere to spill: new tasks are refused, naming why.
  store.check_pressure();
  ASSERT_TRUE(store.refusal());
  const auto error = *store.refusal();
  EXPECT_NE(error.find("worker 3 ('w')"), std::string::npos) << error;
  EXPECT_NE(error.find("/proc/tessera-no-spill"), std::string::npos) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  for (int i = 0; i < 5; ++i)  // still in memory
    EXPECT_EQ(store.get({2, static_cast<std::uint32_t>(i)}).as_doubles().front(), i);
}

// Damages the table files of every spill store under a node directory.
int damage_table_files(const fs::path& dir) {
  int damaged = 0;
  if (!fs::exists(dir / "spill")) return 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "spill")) {
    if (entry.path().extension() != ".sst") continue;
    const auto size = fs::file_size(entry.path());
    std::fstream file(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    for (std::uint64_t at = 4096; at + 64 < size; at += 256 * 1024) {
      file.seekp(static_cast<std::streamoff>(at));
      file.write("damaged by the test, damaged by the test, damaged by the test!!", 64);
    }
    ++damaged;
  }
  return damaged;
}

TEST(ChunkStore, ADamagedRecordIsLostNotMisread) {
  ScratchDir dir{"tessera-memory-test"};
  auto database = std::make_shared<tessera::NodeDatabase>(dir.path());
  tessera::ChunkStore store(
      {.limit = 10 * MiB, .target_fraction = 0.5, .pause_fraction = 0.8, .open_database = [&] {
         return database;
       }});
  for (int i = 0; i < 4; ++i) store.put({1, static_cast<std::uint32_t>(i)}, megabytes_of(i, 1));
  ASSERT_TRUE(store.spill(tessera::SpillGoal::everything));
  ASSERT_GT(damage_table_files(dir.path()), 0);
  EXPECT_THROW(store.get({1, 0}), tessera::ChunkLost);
  EXPECT_EQ(store.report().corrupt_records, 1u);
  EXPECT_FALSE(store.contains({1, 0}));  // gone: its producer must run again
}

// A compaction that reads a damaged file fails, and costs nothing else: spills go on in the same store,
// the node's results store still takes writes, and clear() starts the store again without reading the
// damaged file.
TEST(SpillStore, ADamagedFileFailsItsCompactionOnlyAndClearDropsIt) {
  ScratchDir dir{"tessera-memory-test"};
  auto database = std::make_shared<tessera::NodeDatabase>(dir.path());
  tessera::ResultStore results(database);
  tessera::SpillStore spills(database);
  std::vector<std::pair<std::string, tessera::Value>> first;
  for (int i = 0; i < 4; ++i) first.emplace_back("a" + std::to_string(i), megabytes_of(i, 1));
  spills.write_values(first);
  spills.erase({"a3"});  // garbage for the compaction to drop: it must read the rest
  ASSERT_GT(damage_table_files(dir.path()), 0);
  EXPECT_THROW(spills.read("a0"), tessera::SpillCorrupt);
  try {
    spills.reclaim();
    FAIL() << "a compaction over a damaged file succeeded";
  } catch (const tessera::SpillError& e) {
    EXPECT_NE(std::string(e.what()).find(spills.directory().string()), std::string::npos) << e.what();
  }
  std::vector<std::pair<std::string, tessera::Value>> second;
  second.emplace_back("b0", megabytes_of(7, 1));
  EXPECT_NO_THROW(spills.write_values(second));
  EXPECT_EQ(spills.read("b0").as_doubles().front(), 7.0);
  // Keys amid the damaged file's: ingesting reads that file, and the spill still goes through.
  std::vector<std::pair<std::string, tessera::Value>> amid;
  amid.emplace_back("a10", megabytes_of(8, 1));
  amid.emplace_back("a20", megabytes_of(9, 1));
  EXPECT_NO_THROW(spills.write_values(amid));
  EXPECT_EQ(spills.read("a10").as_doubles().front(), 8.0);
  EXPECT_EQ(spills.read("a20").as_doubles().front(), 9.0);
  const auto stream = results.create_stream("after-damage");
  EXPECT_EQ(results.put(stream, {{.id = 0, .value = tessera::Value(1.0)}}).size(), 1u);

  spills.clear();
  EXPECT_EQ(damage_table_files(dir.path()), 0);  // every table file is gone
  EXPECT_THROW(spills.read("b0"), tessera::SpillError);
  EXPECT_NO_THROW(spills.write_values(second));
  EXPECT_EQ(spills.read("b0").as_doubles().front(), 7.0);
  EXPECT_NO_THROW(spills.reclaim());
}

// Spills arrive as table files ingested after the deletes before them: a key erased and spilled again
// reads the new record, a key spilled twice the later one, and a batch naming one key twice is refused.
TEST(SpillStore, AKeySpilledAgainReadsItsNewRecord) {
  ScratchDir dir{"tessera-memory-test"};
  tessera::SpillStore spills(std::make_shared<tessera::NodeDatabase>(dir.path()));
  const auto spill = [&](const std::string& key, double first, std::size_t megabytes) {
    std::vector<std::pair<std::string, tessera::Value>> batch;
    batch.emplace_back(key, megabytes_of(first, megabytes));
    spills.write_values(batch);
  };
  spill("k", 1, 3);
  spill("other", 5, 1);
  spills.erase({"k"});
  spill("k", 2, 2);  // fewer pieces than before: none of the old ones may be read
  auto value = spills.read("k");
  EXPECT_EQ(value.as_doubles().front(), 2.0);
  EXPECT_EQ(value.payload_bytes(), megabytes_of(2, 2).payload_bytes());
  spill("k", 3, 1);
  EXPECT_EQ(spills.read("k").as_doubles().front(), 3.0);
  EXPECT_EQ(spills.read("other").as_doubles().front(), 5.0);

  std::vector<std::pair<std::string, tessera::Value>> twice;
  twice.emplace_back("dup", megabytes_of(4, 1));
  twice.emplace_back("dup", megabytes_of(6, 1));
  try {
    spills.write_values(twice);
    FAIL() << "a batch naming one key twice was written";
  } catch (const tessera::SpillError& e) {
    EXPECT_NE(std::string(e.what()).find("under one key"), std::string::npos) << e.what();
  }
  EXPECT_THROW(spills.read("dup"), tessera::SpillError);  // nothing of it is there
  EXPECT_EQ(spills.read("k").as_doubles().front(), 3.0);
}

// ---- Workloads four times the limit, against the unlimited run ----

struct ArrayAnswers {
  double sum_x, sum_y;
  Eigen::MatrixXd xty;
  bool operator==(const ArrayAnswers&) const = default;
};

// x: random rows x 64 in chunks of 2 MiB, persisted; y derived from it, persisted; their sums and x^T y.
// (A product task takes 8 pairs of chunks at once: two of them running must fit in the limit's slack.)
ArrayAnswers array_workload(tessera::Client& client, std::int64_t rows) {
  tessera::ArrayOptions options;
  options.chunks = {4096, 64};
  options.seed = 11;
  auto x = tessera::Array::random({rows, 64}, options).persist(client);
  auto y = (x * 2.0 + 1.0).sqrt().persist(client);
  ArrayAnswers out;
  out.sum_x = x.sum().compute_scalar(client);
  out.sum_y = y.sum().compute_scalar(client);
  out.xty = x.T().dot(y).compute(client);
  return out;
}

TEST(MemoryLimit, ArraysFourTimesTheLimitGiveTheUnlimitedResultsWithinTheBound) {
  constexpr std::uint64_t limit = 128 * MiB;
  constexpr std::int64_t rows = 4 * limit / (64 * sizeof(double));  // x alone is 4x the limit, y too
  ScratchDir dir{"tessera-memory-test"};
  ArrayAnswers bounded;
  std::uint64_t peak = 0;
  {
    PeakRss rss;
    tessera::LocalCluster cluster(limited(limit, dir.path()));
    tessera::Client client(cluster);
    bounded = array_workload(client, rows);
    peak = rss.above_baseline();
    ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spills > 0; }));
    const auto memory = total_memory(cluster.status());
    EXPECT_GT(memory.unspills, 0u);
    EXPECT_GT(memory.spilled_bytes, limit);  // most of x and y live on disk
    EXPECT_TRUE(memory.spill_error.empty()) << memory.spill_error;
  }
  tessera::LocalCluster unlimited({.workers = 1, .threads_per_worker = 2});
  tessera::Client client(unlimited);
  EXPECT_EQ(array_workload(client, rows), bounded);
  if (kRssIsOurs) {
    EXPECT_LE(peak, limit + limit / 4) << "peak RSS above the baseline: " << peak / MiB << " MiB";
  }
}

// Chunks a quarter of the limit (64 MiB chunks under 256 MiB, scaled down): a product task takes one
// pair (fan-in sized by bytes), and admission keeps what the tasks hold plus what the store holds under the
// pause threshold. In one graph, as Dask computes it.
ArrayAnswers large_chunk_workload(tessera::Client& client, std::int64_t rows, std::int64_t chunk_rows) {
  tessera::ArrayOptions options;
  options.chunks = {chunk_rows, 512};
  options.seed = 3;
  auto x = tessera::Array::random({rows, 512}, options).persist(client);
  auto y = (x * 2.0 + 1.0).sqrt().persist(client);
  const auto answers = tessera::compute(client, {x.sum(), y.sum(), x.T().dot(y)});
  return ArrayAnswers{answers[0](0, 0), answers[1](0, 0), answers[2]};
}

TEST(MemoryLimit, ChunksAQuarterOfTheLimitGiveTheUnlimitedResultsWithinTheBound) {
  constexpr std::uint64_t limit = 128 * MiB;
  constexpr std::int64_t chunk_rows = 8192;                          // 32 MiB chunks
  constexpr std::int64_t rows = 2 * limit / (512 * sizeof(double));  // x and y twice the limit each
  ScratchDir dir{"tessera-memory-test"};
  ArrayAnswers bounded;
  std::uint64_t peak = 0;
  {
    tessera::LocalCluster cluster(limited(limit, dir.path()));
    tessera::Client client(cluster);
    large_chunk_workload(client, 4 * 1024, 1024);  // the worker's start: its kernels used once
    PeakRss rss;
    bounded = large_chunk_workload(client, rows, chunk_rows);
    peak = rss.above_baseline();
    ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spills > 0; }));
    EXPECT_TRUE(total_memory(cluster.status()).spill_error.empty());
  }
  tessera::LocalCluster unlimited({.workers = 1, .threads_per_worker = 2});
  tessera::Client client(unlimited);
  EXPECT_EQ(large_chunk_workload(client, rows, chunk_rows), bounded);
  if (kRssIsOurs) {
    EXPECT_LE(peak, limit + limit / 4) << "peak RSS above the worker's start: " << peak / MiB << " MiB";
  }
}

TEST(MemoryLimit, ATaskWhoseInputsAloneExceedTheLimitFailsNamingItsSizeTheLimitAndTheKey) {
  constexpr std::uint64_t limit = 64 * MiB;
  ScratchDir dir{"tessera-memory-test"};
  tessera::LocalCluster cluster(limited(limit, dir.path()));
  tessera::Client client(cluster);
  tessera::ArrayOptions options;
  options.chunks = {2560, 2048};  // one chunk of 40 MiB each: a product's pair is 80 MiB
  options.seed = 9;
  auto x = tessera::Array::random({2560, 2048}, options);
  options.seed = 10;
  auto y = tessera::Array::random({2560, 2048}, options);
  try {
    (void)x.T().dot(y).compute(client);
    FAIL() << "a task holding 80 MiB of inputs ran under a 64 MiB limit";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("80.0 MiB"), std::string::npos) << what;
    EXPECT_NE(what.find("64.0 MiB"), std::string::npos) << what;
    EXPECT_NE(what.find("worker.memory_limit"), std::string::npos) << what;
  }
  // The worker goes on, and answers as an unlimited one does.
  const double bounded_sum = x.sum().compute_scalar(client);
  tessera::LocalCluster unlimited({.workers = 1, .threads_per_worker = 2});
  tessera::Client unlimited_client(unlimited);
  EXPECT_EQ(bounded_sum, x.sum().compute_scalar(unlimited_client));
}

TEST(MemoryLimit, FuturesAndABagFourTimesTheLimitGiveTheUnlimitedResults) {
  constexpr std::uint64_t limit = 128 * MiB;
  constexpr std::int64_t blocks = 128;  // 4 MiB each: 512 MiB held
  std::vector<std::int64_t> ids(blocks);
  std::iota(ids.begin(), ids.end(), 0);
  const auto run = [&](tessera::Client& client) {
    auto held = client.map(memory_tasks::block, ids);
    auto totals = client.gather(client.map(memory_tasks::block_total, held));
    // One block back to the client: a held result is fetched when asked for.
    const auto first = held[5].result();
    auto bag = tessera::Bag<std::int64_t>::from_sequence(ids, 64)
                   .map(memory_tasks::block)
                   .map(memory_tasks::block_total);
    const double bag_total = client.compute(bag.fold(memory_tasks::plus, 0.0));
    return std::make_tuple(totals, first, bag_total);
  };
  ScratchDir dir{"tessera-memory-test"};
  std::uint64_t peak = 0;
  std::tuple<std::vector<double>, std::vector<double>, double> bounded;
  {
    PeakRss rss;
    tessera::LocalCluster cluster(limited(limit, dir.path()));
    tessera::Client client(cluster);
    bounded = run(client);
    peak = rss.above_baseline();
    ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spills > 0; }));
  }
  tessera::LocalCluster unlimited({.workers = 1, .threads_per_worker = 2});
  tessera::Client client(unlimited);
  EXPECT_EQ(run(client), bounded);
  EXPECT_EQ(std::get<1>(bounded), memory_tasks::block(5));
  if (kRssIsOurs) {
    EXPECT_LE(peak, limit + limit / 4) << "peak RSS above the baseline: " << peak / MiB << " MiB";
  }
}

// Two partitions, each mapped to 64 blocks of 4 MiB: every partition is four times the limit. Fused, a
// map-map-fold pipeline runs item by item (stream_fold), holding one block at a time.
TEST(MemoryLimit, ABagFoldWhosePartitionsAreSeveralTimesTheLimitHoldsOneItemAtATime) {
  constexpr std::uint64_t limit = 64 * MiB;
  std::vector<std::int64_t> ids(128);
  std::iota(ids.begin(), ids.end(), 0);
  const auto pipeline = tessera::Bag<std::int64_t>::from_sequence(ids, 2)
                            .map(memory_tasks::block)
                            .map(memory_tasks::block_total);
  const auto total = pipeline.fold(memory_tasks::plus, 0.0);
  ScratchDir dir{"tessera-memory-test"};
  double bounded = 0;
  std::uint64_t peak = 0;
  {
    tessera::LocalCluster cluster(limited(limit, dir.path()));
    tessera::Client client(cluster);
    (void)client.compute(tessera::Bag<std::int64_t>::from_sequence({0, 1}, 2)
                             .map(memory_tasks::block)
                             .map(memory_tasks::block_total)
                             .fold(memory_tasks::plus, 0.0));  // the worker's start: its tasks run once
    PeakRss rss;
    bounded = client.compute(total);
    peak = rss.above_baseline();
  }
  // Each partition folded in order from 0, then the two partials added: as the worker computes it.
  double first = 0, second = 0;
  for (std::int64_t i = 0; i < 64; ++i) first += memory_tasks::block_total(memory_tasks::block(i));
  for (std::int64_t i = 64; i < 128; ++i) second += memory_tasks::block_total(memory_tasks::block(i));
  EXPECT_EQ(bounded, first + second);
  if (kRssIsOurs) {
    // A block or two per thread; a partition at a time would be 256 MiB.
    EXPECT_LE(peak, limit / 2) << "peak RSS above the worker's start: " << peak / MiB << " MiB";
  }
}

TEST(MemoryLimit, TsqrAndSvdWhoseLeavesExceedTheLimit) {
  constexpr std::uint64_t limit = 64 * MiB;
  constexpr std::int64_t rows = 4 * limit / (32 * sizeof(double));
  const auto run = [&](tessera::Client& client) {
    tessera::ArrayOptions options;
    options.chunks = {16384, 32};  // 4 MiB leaves
    options.seed = 5;
    auto a = tessera::Array::random({rows, 32}, options).persist(client);
    auto qr = tessera::linalg::tsqr(a);
    auto svd = tessera::linalg::svd(a);
    const Eigen::MatrixXd r = qr.r.compute(client);
    const double q_sum = qr.q.sum().compute_scalar(client);
    const Eigen::VectorXd s = svd.s.compute_vector(client);
    return std::make_tuple(r, q_sum, s);
  };
  ScratchDir dir{"tessera-memory-test"};
  std::tuple<Eigen::MatrixXd, double, Eigen::VectorXd> bounded;
  {
    tessera::LocalCluster cluster(limited(limit, dir.path()));
    tessera::Client client(cluster);
    bounded = run(client);
    ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spills > 0; }));
  }
  tessera::LocalCluster unlimited({.workers = 1, .threads_per_worker = 2});
  tessera::Client client(unlimited);
  // Equal to round-off: LAPACK's blocked kernels round differently with their buffers' alignment, and a
  // leaf read back from disk lives in another buffer than the one it was made in.
  const auto [r, q_sum, s] = run(client);
  const auto& [bounded_r, bounded_q_sum, bounded_s] = bounded;
  EXPECT_LT((r - bounded_r).cwiseAbs().maxCoeff(), 1e-9 * r.cwiseAbs().maxCoeff());
  EXPECT_NEAR(q_sum, bounded_q_sum, 1e-9 * std::abs(q_sum));
  EXPECT_LT((s - bounded_s).cwiseAbs().maxCoeff(), 1e-9 * s.maxCoeff());
}

TEST(MemoryLimit, ARetiringWorkerHandsOverItsSpilledResults) {
  constexpr std::uint64_t limit = 32 * MiB;
  ScratchDir dir{"tessera-memory-test"};
  tessera::LocalCluster cluster(limited(limit, dir.path(), 2));
  tessera::Client client(cluster);
  std::vector<std::int64_t> ids(32);  // 128 MiB over two workers: most of it spilled
  std::iota(ids.begin(), ids.end(), 0);
  auto held = client.map(memory_tasks::block, ids);
  for (const auto& f : held) ASSERT_TRUE(f.wait_for(std::chrono::seconds(60)));
  ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spilled_bytes > 32 * MiB; }));
  cluster.scale(1);  // the newest worker leaves: what it held, spilled or not, moves to the other
  ASSERT_TRUE(
      eventually([&] { return cluster.status().workers == 1 && cluster.status().retiring_workers == 0; }));
  const auto totals = client.gather(client.map(memory_tasks::block_total, held));
  for (std::size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(totals[i], memory_tasks::block_total(memory_tasks::block(ids[i]))) << i;
}

// The bytes in the spill stores' table files under a node directory (RocksDB may delete one meanwhile).
std::uint64_t table_bytes(const fs::path& dir) {
  std::uint64_t total = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(dir / "spill", error), end; !error && it != end;
       it.increment(error)) {
    if (it->path().extension() != ".sst") continue;
    std::error_code gone;
    const auto size = fs::file_size(it->path(), gone);
    if (!gone) total += size;
  }
  return total;
}

TEST(MemoryLimit, ResultsReleasedWhileSpilledAreDeletedAndTheirSpaceComesBack) {
  constexpr std::uint64_t limit = 32 * MiB;
  ScratchDir dir{"tessera-memory-test"};
  tessera::LocalCluster cluster(limited(limit, dir.path()));
  tessera::Client client(cluster);
  std::vector<std::int64_t> ids(48);  // 192 MiB
  std::iota(ids.begin(), ids.end(), 0);
  {
    auto held = client.map(memory_tasks::block, ids);
    for (const auto& f : held) ASSERT_TRUE(f.wait_for(std::chrono::seconds(60)));
    ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spilled_bytes > 128 * MiB; }));
    EXPECT_GT(table_bytes(dir.path()), 128 * MiB);
  }
  // Under a sanitizer the deletes and the last compaction run several times slower.
  const auto patience = kRssIsOurs ? std::chrono::seconds(20) : std::chrono::seconds(120);
  ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spilled_bytes == 0; }, patience));
  // Compacted away: all of it in the plain build; under a sanitizer the last compaction can lag.
  const std::uint64_t left = kRssIsOurs ? 16 * MiB : 96 * MiB;
  EXPECT_TRUE(eventually([&] { return table_bytes(dir.path()) < left; }, patience))
      << table_bytes(dir.path());
}

// ---- Faults ----

TEST(MemoryLimit, AnUnwritableDataDirFailsTasksNamingWorkerPathAndReasonAndTheWorkerStaysUp) {
  constexpr std::uint64_t limit = 32 * MiB;
  tessera::LocalCluster cluster(limited(limit, "/proc/tessera-cannot-spill"));
  tessera::Client client(cluster);
  std::vector<std::int64_t> ids(64);  // 256 MiB if every block were kept
  std::iota(ids.begin(), ids.end(), 0);
  std::string failure;
  {
    auto held = client.map(memory_tasks::block, ids);
    for (auto& f : held) {
      try {
        f.result();
      } catch (const tessera::TaskFailed& e) {
        failure = e.what();
      }
    }
    ASSERT_FALSE(failure.empty()) << "every block was kept in memory: nothing refused";
    ASSERT_TRUE(eventually([&] { return !total_memory(cluster.status()).spill_error.empty(); }));
    EXPECT_NE(failure.find("worker 0"), std::string::npos) << failure;
    EXPECT_NE(failure.find("/proc/tessera-cannot-spill"), std::string::npos) << failure;
    EXPECT_NE(failure.find("No such file or directory"), std::string::npos) << failure;
    const auto memory = total_memory(cluster.status());
    EXPECT_NE(memory.spill_error.find("/proc/tessera-cannot-spill"), std::string::npos) << memory.spill_error;
  }
  // The futures are gone, their memory with them: the same worker computes again (once it has seen its
  // memory go down; under a sanitizer resident memory does not, so that is checked in the plain build).
  if (!kRssIsOurs) return;
  const double expected = memory_tasks::block_total(memory_tasks::block(2));
  EXPECT_TRUE(eventually(
      [&] {
        try {
          return client.submit(memory_tasks::block_total, client.submit(memory_tasks::block, std::int64_t{2}))
                     .result() == expected;
        } catch (const tessera::TaskFailed&) {
          return false;
        }
      },
      std::chrono::seconds(10)));
}

TEST(MemoryLimit, ADamagedSpilledRecordIsComputedAgainFromLineage) {
  constexpr std::uint64_t limit = 32 * MiB;
  ScratchDir dir{"tessera-memory-test"};
  tessera::LocalCluster cluster(limited(limit, dir.path()));
  tessera::Client client(cluster);
  std::vector<std::int64_t> ids(32);  // 128 MiB held: most of it spilled
  std::iota(ids.begin(), ids.end(), 0);
  auto held = client.map(memory_tasks::block, ids);
  for (const auto& f : held) ASSERT_TRUE(f.wait_for(std::chrono::seconds(60)));
  ASSERT_TRUE(eventually([&] { return total_memory(cluster.status()).spilled_bytes > 64 * MiB; }));
  ASSERT_GT(damage_table_files(dir.path()), 0) << "no table files in " << dir.path();
  const auto totals = client.gather(client.map(memory_tasks::block_total, held));
  for (std::size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(totals[i], memory_tasks::block_total(memory_tasks::block(ids[i]))) << i;
  // Counted where status shows it (reported every 0.5 s).
  EXPECT_TRUE(eventually([&] { return total_memory(cluster.status()).corrupt_records > 0; }));
  EXPECT_GT(cluster.status().tasks_recomputed, 0u);
}

TEST(MemoryLimit, OptionsOutOfRangeAreRefusedByName) {
  for (double bad :
       {0.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    tessera::ClusterOptions options;
    options.memory_target_fraction = bad;
    try {
      tessera::LocalCluster cluster(options);
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("memory_target_fraction"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
