// The seed notebook's costly_simulation: sleeps a random time (up to max_sleep_seconds) and returns the
// sum of its parameters. Shared by the example and the benchmark.
#pragma once

#include <atomic>
#include <chrono>
#include <numeric>
#include <random>
#include <tessera/tessera.hpp>
#include <thread>
#include <vector>

namespace example {

inline std::atomic<double> max_sleep_seconds{0.05};

inline double costly_simulation(const std::vector<double>& params) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::this_thread::sleep_for(std::chrono::duration<double>(uniform(rng) * max_sleep_seconds.load()));
  return std::accumulate(params.begin(), params.end(), 0.0);
}
// Compiled into the example program and into its plugin: the version tells a node that both are one
// definition (without it, each module would be its own, and the node would refuse the program's calls).
TESSERA_TASK_VERSION(costly_simulation, "1");

// The same computation as a simulation class, for streams of parameter sets: built once per simulation
// actor (the config may set "max_sleep"), then run for each parameter set of 4 numbers.
struct CostlySimulation {
  explicit CostlySimulation(const tessera::Config& config)
      : max_sleep(config.get<double>("max_sleep", max_sleep_seconds.load())) {}
  double run(const std::vector<double>& params) {
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::this_thread::sleep_for(std::chrono::duration<double>(uniform(rng) * max_sleep));
    return std::accumulate(params.begin(), params.end(), 0.0);
  }
  static constexpr std::size_t arity = 4;
  static constexpr const char* version = "1";  // as costly_simulation's
  double max_sleep;
  std::mt19937_64 rng{std::random_device{}()};
};
TESSERA_SIMULATION(CostlySimulation, "costly_simulation");

// `rows` parameter sets of `cols` uniform numbers in [0, 1), the same for a given seed.
inline std::vector<std::vector<double>> random_rows(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  std::mt19937_64 rng{seed};
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<std::vector<double>> out(rows, std::vector<double>(cols));
  for (auto& row : out)
    for (auto& x : row) x = uniform(rng);
  return out;
}

}  // namespace example
