// tessera-bench-sims: the seed notebook's workload, 500 simulations sleeping random() * S seconds on
// 10 workers x 4 threads, timed through map + gather, delayed + compute, and a bag of 100 partitions.
#include <iostream>

#include "../examples/embarrassingly_parallel/simulation.hpp"
#include "bench_util.hpp"
#include "cli_options.hpp"

int main(int argc, char** argv) try {
  using example::costly_simulation;
  tessera::cli::FlagTable flags("tessera-bench-sims",
                                "the seed notebook's workload timed through map + gather, delayed + compute "
                                "and a bag. Prints one JSON line per API.");
  flags.integer("tasks", 500, 1, 10000000, "simulations")
      .integer("workers", 10, 1, 1024, "embedded workers")
      .integer("threads", 4, 1, 1024, "threads per worker")
      .real("max-sleep", 0.05, 0, 60, "seconds a simulation sleeps at most")
      .integer("repeat", 5, 1, 1000, "repetitions (the median is reported)")
      .integer("partitions", 100, 1, 10000000, "the bag's partitions");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const auto n = static_cast<std::size_t>(flags.integer("tasks"));
  const auto workers = static_cast<std::uint32_t>(flags.integer("workers"));
  const auto threads = static_cast<std::uint32_t>(flags.integer("threads"));
  example::max_sleep_seconds = flags.real("max-sleep");
  const auto params = example::random_rows(n, 4, 0);
  tessera::LocalCluster cluster{{.workers = workers, .threads_per_worker = threads}};
  tessera::Client client{cluster};

  auto time = [&](auto&& body) {
    body();  // warm-up
    std::vector<double> runs;
    for (long long r = 0; r < flags.integer("repeat"); ++r) {
      const auto start = std::chrono::steady_clock::now();
      body();
      runs.push_back(tessera::bench::seconds_since(start));
    }
    return runs;
  };
  auto report = [&](const std::string& api, const std::vector<double>& runs) {
    std::cout << "{\"bench\":\"sims\",\"api\":\"" << api << "\",\"tasks\":" << n << ",\"workers\":" << workers
              << ",\"threads\":" << threads << ",\"max_sleep\":" << flags.real("max-sleep")
              << ",\"ideal_seconds\":" << n * flags.real("max-sleep") / 2 / (workers * threads)
              << ",\"seconds\":" << tessera::bench::median(runs)
              << ",\"min_seconds\":" << *std::min_element(runs.begin(), runs.end())
              << ",\"max_seconds\":" << *std::max_element(runs.begin(), runs.end()) << "}" << std::endl;
  };
  report("map", time([&] { client.gather(client.map(costly_simulation, params)); }));
  report("delayed", time([&] {
           std::vector<tessera::Delayed<double>> lazy;
           for (const auto& p : params) lazy.push_back(tessera::delayed(costly_simulation)(p));
           client.compute(lazy);
         }));
  const auto partitions = static_cast<std::uint32_t>(flags.integer("partitions"));
  report("bag", time([&] {
           tessera::Bag<std::vector<double>>::from_sequence(params, partitions)
               .map(costly_simulation)
               .compute(client);
         }));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-sims: " << e.what() << "\n";
  return 2;
}
