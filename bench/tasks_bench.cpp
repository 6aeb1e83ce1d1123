// tessera-bench-tasks: throughput of no-op tasks through the whole runtime (submission, placement,
// compute pool, results back to the client), in four graph shapes.
//   --mode map      one client.map of N tasks, then gather
//   --mode delayed  N independent delayed calls, one compute
//   --mode chain    a chain of N delayed calls, each depending on the previous one
//   --mode tree     N leaves reduced pairwise (about 2N tasks)
// --fusion off sends every delayed call as a task of its own (the chain then measures continuations).
// --memory-phases on (map): instead of the timed runs, one map whose heap held per task is reported while
// its tasks wait behind two that block, once they have all finished, and once gathered.
#include <malloc.h>

#include <atomic>
#include <iostream>
#include <numeric>
#include <tessera/tessera.hpp>
#include <thread>

#include "bench_tasks.hpp"
#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

using bench_tasks::noop;
std::int64_t add(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(add);

// Tasks that wait until the gate opens: with the compute threads held by them, the rest stay queued.
std::atomic<bool> g_gate_open{true};
std::int64_t gated(std::int64_t x) {
  g_gate_open.wait(false);
  return x;
}
TESSERA_TASK(gated);

// Bytes the allocator has handed out and not taken back (its arenas and its mmapped blocks).
double heap_in_use() {
  const struct mallinfo2 info = ::mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd);
}

// The heap per task in three phases of one map of n tasks, as one JSON line. Per task: (phase - before) / n,
// where before is the heap with the inputs already made.
void report_memory_phases(tessera::LocalCluster& cluster, tessera::Client& client, std::int64_t n) {
  std::vector<std::int64_t> inputs(static_cast<std::size_t>(n));
  std::iota(inputs.begin(), inputs.end(), 0);
  while (cluster.status().operations != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::malloc_trim(0);
  const double before = heap_in_use();
  g_gate_open = false;
  auto futures = client.map(gated, inputs);
  // Queued: every task known to the scheduler and unfinished; the compute threads wait at the gate.
  while (cluster.status().tasks_pending < static_cast<std::uint64_t>(n))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const double queued = heap_in_use();
  g_gate_open = true;
  g_gate_open.notify_all();
  for (auto& f : futures) f.wait();
  const double finished = heap_in_use();
  auto results = client.gather(futures);
  if (results.back() != n - 1) throw std::runtime_error("memory phases: wrong result");
  const double gathered = heap_in_use();
  const auto per_task = [&](double phase) { return (phase - before) / static_cast<double>(n); };
  std::cout << "{\"bench\":\"task_memory\",\"mode\":\"map\",\"tasks\":" << n
            << ",\"heap_mb_before\":" << before / 1e6 << ",\"queued_bytes_per_task\":" << per_task(queued)
            << ",\"finished_bytes_per_task\":" << per_task(finished)
            << ",\"gathered_bytes_per_task\":" << per_task(gathered)
            << ",\"peak_rss_mb\":" << tessera::bench::peak_rss_mb() << "}" << std::endl;
}

// Runs one repetition and returns (seconds, tasks run); checks the answer so nothing is skipped.
std::pair<double, std::int64_t> run_once(tessera::Client& client, const std::string& mode, std::int64_t n) {
  using tessera::delayed;
  if (mode == "map") {
    std::vector<std::int64_t> inputs(static_cast<std::size_t>(n));
    std::iota(inputs.begin(), inputs.end(), 0);
    const auto start = std::chrono::steady_clock::now();
    auto results = client.gather(client.map(noop, inputs));
    const double s = tessera::bench::seconds_since(start);
    if (results.back() != n - 1) throw std::runtime_error("map: wrong result");
    return {s, n};
  }
  if (mode == "delayed") {
    const auto start = std::chrono::steady_clock::now();
    std::vector<tessera::Delayed<std::int64_t>> lazy;
    lazy.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) lazy.push_back(delayed(noop)(i));
    auto results = client.compute(lazy);
    const double s = tessera::bench::seconds_since(start);
    if (results.back() != n - 1) throw std::runtime_error("delayed: wrong result");
    return {s, n};
  }
  if (mode == "chain") {
    const auto start = std::chrono::steady_clock::now();
    auto x = delayed(noop)(std::int64_t{0});
    for (std::int64_t i = 1; i < n; ++i) x = delayed(add)(x, std::int64_t{1});
    const auto result = client.compute(x);
    const double s = tessera::bench::seconds_since(start);
    if (result != n - 1) throw std::runtime_error("chain: wrong result");
    return {s, n};
  }
  if (mode == "tree") {
    const auto start = std::chrono::steady_clock::now();
    std::vector<tessera::Delayed<std::int64_t>> level;
    level.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) level.push_back(delayed(noop)(i));
    std::int64_t tasks = n;
    while (level.size() > 1) {
      std::vector<tessera::Delayed<std::int64_t>> next;
      for (std::size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(delayed(add)(level[i], level[i + 1]));
      if (level.size() % 2) next.push_back(level.back());
      tasks += static_cast<std::int64_t>(level.size() / 2);
      level = std::move(next);
    }
    const auto result = client.compute(level.front());
    const double s = tessera::bench::seconds_since(start);
    if (result != n * (n - 1) / 2) throw std::runtime_error("tree: wrong result");
    return {s, tasks};
  }
  throw std::invalid_argument("unknown --mode " + mode + " (map, delayed, chain or tree)");
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-tasks",
      "throughput of no-op tasks through the whole runtime, in four graph shapes. Prints one JSON line.");
  flags.choice("mode", "map", {"map", "delayed", "chain", "tree"}, "the graph's shape")
      .integer("tasks", 1000000, 1, 100000000, "tasks per repetition")
      .integer("workers", 1, 1, 1024, "embedded workers")
      .integer("threads", 2, 1, 1024, "threads per worker")
      .integer("repeat", 3, 1, 1000, "repetitions (the median is reported)")
      .choice("fusion", "on", {"on", "off"}, "the graph optimizer's fusion (GraphOptimizations)")
      .choice("memory-phases", "off", {"off", "on"},
              "(map) instead of the timed runs, one map of --tasks whose heap per task is reported while "
              "queued (behind two tasks that block), finished and gathered");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const auto mode = flags.str("mode");
  const auto n = flags.integer("tasks");
  const auto workers = static_cast<std::uint32_t>(flags.integer("workers"));
  const auto threads = static_cast<std::uint32_t>(flags.integer("threads"));
  tessera::LocalCluster cluster{{.workers = workers, .threads_per_worker = threads}};
  const bool fuse = flags.str("fusion") == "on";
  tessera::Client client =
      tessera::Client{cluster}.with(tessera::GraphOptimizations{.fuse = fuse, .fuse_diamonds = fuse});
  run_once(client, mode, std::min<std::int64_t>(n, 10000));  // warm-up
  if (flags.str("memory-phases") == "on") {
    // Alone in its process: a timed run before it would still be letting go of its memory.
    if (mode != "map") throw std::invalid_argument("--memory-phases on needs --mode map, not " + mode);
    report_memory_phases(cluster, client, n);
    return 0;
  }
  std::vector<double> times;
  std::int64_t tasks = 0;
  for (long long r = 0; r < flags.integer("repeat"); ++r) {
    // Each repetition starts once the previous one's results have been released everywhere.
    while (cluster.status().operations != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto [s, t] = run_once(client, mode, n);
    times.push_back(s);
    tasks = t;
  }
  const double s = tessera::bench::median(times);
  std::cout << "{\"bench\":\"tasks\",\"mode\":\"" << mode << "\",\"fusion\":" << (fuse ? "true" : "false")
            << ",\"tasks\":" << tasks << ",\"workers\":" << workers << ",\"threads\":" << threads
            << ",\"seconds\":" << s << ",\"rate\":" << static_cast<long long>(tasks / s)
            << ",\"peak_rss_mb\":" << tessera::bench::peak_rss_mb() << "}" << std::endl;
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-tasks: " << e.what() << "\n";
  return 2;
}
