// tessera-bench-tasks: throughput of no-op tasks through the whole runtime (submission, placement,
// compute pool, results back to the client), in four graph shapes.
//   --mode map      one client.map of N tasks, then gather
//   --mode delayed  N independent delayed calls, one compute
//   --mode chain    a chain of N delayed calls, each depending on the previous one
//   --mode tree     N leaves reduced pairwise (about 2N tasks)
// --fusion off sends every delayed call as a task of its own (the chain then measures continuations).
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
      .choice("fusion", "on", {"on", "off"}, "the graph optimizer's fusion (GraphOptimizations)");
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
