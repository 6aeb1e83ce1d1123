// tessera-bench-fusion: the graph optimizer's effect, before and after, on four graphs: tasks run (the
// scheduler's tasks_done) and seconds, with fusion on (the default) and off, in the same run.
//   delayed  N independent y = twice(exp(x) - 1/x) diamonds on x = twice(i): 5 tasks each
//   bag      a bag of N items in N/10 partitions: map, filter, map, fold, then the combine tree
//   array    ((x + 1) * 2 - x).sum(0) over an N x 100 array in chunks of 100 rows
//   chain    a chain of N dependent delayed calls
#include <cmath>
#include <iostream>
#include <tessera/array.hpp>
#include <tessera/tessera.hpp>
#include <thread>

#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

using tessera::delayed;

double twice(double x) {
  return 2 * x;
}
TESSERA_TASK(twice);
double expo(double x) {
  return std::exp(x);
}
TESSERA_TASK(expo);
double recip(double x) {
  return 1 / x;
}
TESSERA_TASK(recip);
double minus(double a, double b) {
  return a - b;
}
TESSERA_TASK(minus);
std::int64_t next(std::int64_t x) {
  return x + 1;
}
TESSERA_TASK(next);
bool odd(std::int64_t x) {
  return x % 2 != 0;
}
TESSERA_TASK(odd);
std::int64_t total(std::int64_t a, std::int64_t b) {
  return a + b;
}
TESSERA_TASK(total);

// Runs one repetition: its seconds, from building the graph to the answer, checked.
double run_once(tessera::Client& client, const std::string& graph, std::int64_t n) {
  const auto start = std::chrono::steady_clock::now();
  if (graph == "delayed") {
    std::vector<tessera::Delayed<double>> ys;
    ys.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 1; i <= n; ++i) {
      auto x = delayed(twice)(static_cast<double>(i) * 1e-6);
      ys.push_back(delayed(twice)(delayed(minus)(delayed(expo)(x), delayed(recip)(x))));
    }
    const auto out = client.compute(ys);
    const double x = 2e-6 * static_cast<double>(n);
    if (std::abs(out.back() - 2 * (std::exp(x) - 1 / x)) > 1e-9 * std::abs(out.back()))
      throw std::runtime_error("delayed: wrong result");
  } else if (graph == "bag") {
    std::vector<std::int64_t> items(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) items[static_cast<std::size_t>(i)] = i;
    const auto partitions = static_cast<std::uint32_t>(std::max<std::int64_t>(1, n / 10));
    auto bag = tessera::Bag<std::int64_t>::from_sequence(items, partitions).map(next).filter(odd).map(next);
    const auto sum = client.compute(bag.fold(total, std::int64_t{0}));
    std::int64_t expected = 0;
    for (std::int64_t i = 0; i < n; ++i)
      if ((i + 1) % 2) expected += i + 2;
    if (sum != expected) throw std::runtime_error("bag: wrong result");
  } else if (graph == "array") {
    auto x = tessera::Array::ones({n, 100}, {.chunks = {100, 100}});
    const Eigen::VectorXd out = ((x + 1.0) * 2.0 - x).sum(0).compute_vector(client);
    if (out.size() != 100 || std::abs(out[0] - 3.0 * static_cast<double>(n)) > 1e-6)
      throw std::runtime_error("array: wrong result");
  } else if (graph == "chain") {
    auto x = delayed(next)(std::int64_t{0});
    for (std::int64_t i = 1; i < n; ++i) x = delayed(next)(x);
    if (client.compute(x) != n) throw std::runtime_error("chain: wrong result");
  } else {
    throw std::invalid_argument("unknown --graph " + graph + " (delayed, bag, array or chain)");
  }
  return tessera::bench::seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-fusion", "tasks and seconds of four graphs with fusion on and off. Prints JSON lines.");
  flags.choice("graph", "delayed", {"delayed", "bag", "array", "chain"}, "the graph")
      .integer("size", 20000, 1, 100000000, "diamonds, bag items, array rows or chain steps")
      .integer("workers", 1, 1, 1024, "embedded workers")
      .integer("threads", 2, 1, 1024, "threads per worker")
      .integer("repeat", 3, 1, 1000, "repetitions (the median is reported)");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const auto graph = flags.str("graph");
  const auto n = flags.integer("size");
  const auto workers = static_cast<std::uint32_t>(flags.integer("workers"));
  const auto threads = static_cast<std::uint32_t>(flags.integer("threads"));
  tessera::LocalCluster cluster{{.workers = workers, .threads_per_worker = threads}};
  for (const bool fuse : {false, true}) {
    tessera::Client client =
        tessera::Client{cluster}.with(tessera::GraphOptimizations{.fuse = fuse, .fuse_diamonds = fuse});
    run_once(client, graph, std::min<std::int64_t>(n, 1000));  // warm-up
    std::vector<double> times;
    std::uint64_t tasks = 0;
    for (long long r = 0; r < flags.integer("repeat"); ++r) {
      while (cluster.status().operations != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const auto before = cluster.status().tasks_done;
      times.push_back(run_once(client, graph, n));
      tasks = cluster.status().tasks_done - before;
    }
    const double s = tessera::bench::median(times);
    std::cout << "{\"bench\":\"fusion\",\"graph\":\"" << graph << "\",\"size\":" << n
              << ",\"fusion\":" << (fuse ? "true" : "false") << ",\"tasks\":" << tasks
              << ",\"workers\":" << workers << ",\"threads\":" << threads << ",\"seconds\":" << s << "}"
              << std::endl;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-fusion: " << e.what() << "\n";
  return 2;
}
