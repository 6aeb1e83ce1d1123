// tessera-bench-memory: memory-bounded workers, against the machine's own disk limit in the same run.
//   workload: x, a random rows x 64 array persisted; y = sqrt(2x + 1) persisted; their sums and x^T y, on
//             one worker with --memory-limit (x and y are each --times the limit); time, peak resident
//             memory above the worker's start (running, its kernels used once) and above the process's,
//             spills and their MB/s, and the answers (to compare with
//             Dask's on the same workload, bench/compare/compare_memory.py).
//   disk:     RocksDB's own put (no WAL, flushed per batch and synced by the device, as RocksDB does) and get
//   of --value-mib
//             values, beside the SpillStore's write and read of the same chunks (encoding and decoding
//             included, as the chunk store spills and reads them back).
// Prints one JSON line per measurement.
#include <unistd.h>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <tessera/array.hpp>
#include <tessera/tessera.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"
#include "storage/spill_store.hpp"

namespace {

using namespace tessera;
namespace fs = std::filesystem;

std::uint64_t status_bytes(const char* field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(std::strlen(field))) * 1024;
  return 0;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("tessera-bench-memory-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

void workload(const cli::FlagTable& flags) {
  const std::uint64_t limit = static_cast<std::uint64_t>(flags.integer("memory-limit-mib")) << 20;
  const std::int64_t chunk_rows = flags.integer("chunk-rows");
  const std::int64_t cols = flags.integer("cols");
  const auto rows = static_cast<std::int64_t>(static_cast<std::uint64_t>(flags.integer("times")) * limit /
                                              (static_cast<std::uint64_t>(cols) * sizeof(double)));
  TempDir dir;
  std::ofstream("/proc/self/clear_refs") << "5";  // the peak from here on
  const std::uint64_t process_start = status_bytes("VmRSS:");
  ClusterOptions options;
  options.workers = 1;
  options.threads_per_worker = static_cast<std::uint32_t>(flags.integer("threads"));
  options.memory_limit = limit;
  options.data_dir = dir.path.string();
  const auto start = std::chrono::steady_clock::now();
  LocalCluster cluster(options);
  Client client(cluster);
  // The worker's start: running, its kernels used once (BLAS sets up its buffers on first use), as a
  // worker process is when it takes its first graph.
  {
    ArrayOptions small;
    small.chunks = {256, cols};
    auto w = Array::random({1024, cols}, small);
    (void)tessera::compute(client, {w.sum(), w.T().dot(w)});
  }
  const std::uint64_t startup_peak = status_bytes("VmHWM:");
  std::ofstream("/proc/self/clear_refs") << "5";
  const std::uint64_t baseline = status_bytes("VmRSS:");
  ArrayOptions array_options;
  array_options.chunks = {chunk_rows, cols};
  array_options.seed = 11;
  double sum_x = 0, sum_y = 0, trace = 0;
  {
    auto x = Array::random({rows, cols}, array_options).persist(client);
    auto y = (x * 2.0 + 1.0).sqrt().persist(client);
    // In one graph, as Dask's side computes them: each chunk is read once for all three.
    const auto answers = tessera::compute(client, {x.sum(), y.sum(), x.T().dot(y)});
    sum_x = answers[0](0, 0);
    sum_y = answers[1](0, 0);
    trace = answers[2].trace();
  }
  const double seconds = bench::seconds_since(start);
  const std::uint64_t run_peak = status_bytes("VmHWM:");
  const std::uint64_t peak = run_peak - baseline;
  const std::uint64_t process_peak = std::max(startup_peak, run_peak) - process_start;
  // Reported every 0.5 s by the worker's store actor, which may still be deleting and compacting what the
  // run released.
  WorkerMemory memory;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (memory.spills == 0 && std::chrono::steady_clock::now() < deadline) {
    const auto status = cluster.status();
    if (!status.memory.empty()) memory = status.memory.front();
    if (memory.spills == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the next report
  }
  std::printf(
      "{\"bench\":\"memory_workload\",\"system\":\"tessera\",\"memory_limit_mib\":%llu,\"times\":%llu,"
      "\"rows\":%lld,\"cols\":%lld,\"chunk_rows\":%lld,\"chunk_mib\":%.1f,\"threads\":%llu,\"seconds\":%.3f,"
      "\"peak_rss_above_start_mib\":%.1f,\"worker_start_mib\":%.1f,\"peak_rss_above_process_start_mib\":%.1f,"
      "\"bound_mib\":%.1f,\"completed\":true,\"spills\":%llu,\"unspills\":%llu,\"spilled_mb\":%.1f,"
      "\"spill_mb_per_s\":%.1f,\"unspill_mb_per_s\":%.1f,\"sum_x\":%.10e,\"sum_y\":%.10e,\"trace_xty\":%.10e}"
      "\n",
      static_cast<unsigned long long>(limit >> 20), static_cast<unsigned long long>(flags.integer("times")),
      static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(chunk_rows),
      static_cast<double>(chunk_rows * cols * 8) / (1 << 20),
      static_cast<unsigned long long>(flags.integer("threads")), seconds,
      static_cast<double>(peak) / (1 << 20), static_cast<double>(baseline - process_start) / (1 << 20),
      static_cast<double>(process_peak) / (1 << 20), 1.25 * static_cast<double>(limit >> 20),
      static_cast<unsigned long long>(memory.spills), static_cast<unsigned long long>(memory.unspills),
      static_cast<double>(memory.spilled_total) / 1e6, memory.spill_mb_per_second(),
      memory.unspill_mb_per_second(), sum_x, sum_y, trace);
}

void disk(const cli::FlagTable& flags) {
  const std::size_t value_bytes = static_cast<std::size_t>(flags.integer("value-mib")) << 20;
  const std::size_t count = (static_cast<std::size_t>(flags.integer("disk-mib")) << 20) / value_bytes;
  TempDir dir;
  auto database = std::make_shared<NodeDatabase>(dir.path);
  rocksdb::DB* raw_db = nullptr;
  // The spill store's options, with the default file system: RocksDB's own put waits for the device at
  // each flush, where a spill does not (storage/unsynced_file_system.hpp).
  auto raw_options = SpillStore::rocksdb_options();
  raw_options.env = rocksdb::Env::Default();
  if (const auto status = rocksdb::DB::Open(raw_options, (dir.path / "raw").string(), &raw_db); !status.ok())
    throw std::runtime_error("cannot open " + (dir.path / "raw").string() + ": " + status.ToString());
  std::unique_ptr<rocksdb::DB> raw_store(raw_db);
  auto& db = *raw_store;
  Eigen::MatrixXd chunk = Eigen::MatrixXd::Random(static_cast<Eigen::Index>(value_bytes / (64 * 8)), 64);
  const Value value(backends::Chunk::dense(chunk));
  const std::string raw = SpillStore::encode(value);
  const auto key = [](const char* prefix, std::size_t i) { return std::string(prefix) + std::to_string(i); };
  // RocksDB alone: the same options as spills (no WAL, a flush per two values).
  auto start = std::chrono::steady_clock::now();
  rocksdb::WriteOptions no_wal;
  no_wal.disableWAL = true;
  for (std::size_t i = 0; i < count; ++i) {
    db.Put(no_wal, key("raw", i), raw);
    if (i % 2 == 1) db.Flush(rocksdb::FlushOptions());
  }
  db.Flush(rocksdb::FlushOptions());
  const double put_seconds = bench::seconds_since(start);
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  start = std::chrono::steady_clock::now();
  // Each value into memory of its own, as a reader that keeps what it reads (a spill read gives a chunk).
  for (std::size_t i = 0; i < count; ++i) {
    std::string out;
    db.Get(read, db.DefaultColumnFamily(), key("raw", i), &out);
  }
  const double get_seconds = bench::seconds_since(start);
  // The SpillStore: encoding, the write and flush; the read and decoding.
  SpillStore store(database);
  start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < count; i += 2) {
    std::vector<std::pair<std::string, Value>> batch;
    for (std::size_t j = i; j < std::min(count, i + 2); ++j) batch.emplace_back(key("spill", j), value);
    (void)store.write_values(batch);  // as the chunk store spills: from the value's own buffers
  }
  const double write_seconds = bench::seconds_since(start);
  // Reads start with what was written on the device, as RocksDB's own get did: the kernel's writeback of
  // the unsynced spill files would otherwise run beside them.
  ::sync();
  start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < count; ++i) (void)store.read(key("spill", i));
  const double read_seconds = bench::seconds_since(start);
  const double mb = static_cast<double>(count * raw.size()) / 1e6;
  std::printf(
      "{\"bench\":\"spill_disk\",\"value_mib\":%llu,\"values\":%zu,\"rocksdb_put_mb_per_s\":%.0f,"
      "\"rocksdb_get_mb_per_s\":%.0f,\"spill_write_mb_per_s\":%.0f,\"spill_read_mb_per_s\":%.0f,"
      "\"write_fraction_of_rocksdb\":%.2f,\"read_fraction_of_rocksdb\":%.2f}\n",
      static_cast<unsigned long long>(flags.integer("value-mib")), count, mb / put_seconds, mb / get_seconds,
      mb / write_seconds, mb / read_seconds, put_seconds / write_seconds, get_seconds / read_seconds);
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-memory",
      "memory-bounded workers: a workload holding --times its memory limit (time, peak RSS, spills), and "
      "spill write/read speed beside RocksDB's own put/get. Prints one JSON line per measurement.");
  flags.choice("mode", "all", {"all", "workload", "disk"}, "what to measure")
      .integer("memory-limit-mib", 256, 16, 1 << 20, "the worker's memory_limit, MiB")
      .integer("times", 4, 1, 64, "x and y are each this many times the limit")
      .integer("chunk-rows", 8192, 64, 1 << 24, "rows per chunk")
      .integer("cols", 64, 1, 1 << 16, "columns of x and y (float64)")
      .integer("threads", 2, 1, 1024, "compute threads")
      .integer("value-mib", 4, 1, 256, "disk: the size of each value, MiB")
      .integer("disk-mib", 512, 16, 1 << 20, "disk: how much to write and read, MiB")
      .integer("repeat", 1, 1, 100, "runs of each measurement (a line each)");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const std::string mode = flags.str("mode");
  for (long long run = 0; run < flags.integer("repeat"); ++run) {
    if (mode == "all" || mode == "disk") disk(flags);
    if (mode == "all" || mode == "workload") workload(flags);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "tessera-bench-memory: %s\n", e.what());
  return 1;
}
