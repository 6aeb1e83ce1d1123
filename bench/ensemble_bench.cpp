// tessera-bench-ensemble: what supervision costs a stream. "floor": N sets of S ms (a sleep) on K
// simulation actors, against the floor N * S / K (Ray Tune publishes 715 s for 10,000 one-second trials on
// 16 CPUs against a 625 s floor: +14%). "trivial": sets that cost nothing, so the figure is the price of
// feeding a child process per simulation actor. One JSON line per isolation.
#include <iostream>
#include <thread>

#include <tessera/tessera.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

struct Sleeper {
  explicit Sleeper(const tessera::Config& config)
      : pause(std::chrono::microseconds(config.get<std::int64_t>("sleep_us", 20000))) {}
  double run(double x) {
    std::this_thread::sleep_for(pause);
    return x;
  }
  std::chrono::microseconds pause;
};
TESSERA_SIMULATION(Sleeper, "bench_sleeper");

struct Increment {
  explicit Increment(const tessera::Config&) {}
  double run(double x) { return x + 1; }
};
TESSERA_SIMULATION(Increment, "bench_increment");

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-ensemble",
      "a stream's overhead against its floor, and its trivial-set rate, under thread "
      "and process isolation. Prints one JSON line per measurement.");
  flags.choice("mode", "floor", {"floor", "trivial"}, "floor: sleeping sets against N*S/K; trivial: sets/s")
      .integer("sets", 2000, 1, 100000000, "parameter sets")
      .real("sleep-ms", 20, 0, 60000, "floor: milliseconds each set sleeps")
      .integer("slots", 4, 1, 1024, "simulation actors (and compute threads) on the one worker")
      .choice("isolation", "both", {"thread", "process", "both"}, "which isolations to time")
      .integer("repeat", 1, 1, 1000, "repetitions (the median is reported)");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const std::string mode = flags.str("mode");
  const auto sets = static_cast<std::uint64_t>(flags.integer("sets"));
  const auto slots = static_cast<std::uint32_t>(flags.integer("slots"));
  const double sleep_ms = flags.real("sleep-ms");
  tessera::LocalCluster cluster{{.workers = 1, .threads_per_worker = slots}};
  tessera::Client client{cluster};

  const auto run = [&](tessera::Isolation isolation) {
    tessera::StreamOptions options;
    options.isolation = isolation;
    options.pool_size = slots;
    options.max_in_flight = 1 << 16;
    options.config.set("sleep_us", tessera::to_value(static_cast<std::int64_t>(sleep_ms * 1000)));
    auto stream = client.stream(mode == "floor" ? "bench_sleeper" : "bench_increment", std::move(options));
    std::uint64_t failed = 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < sets; ++i) stream.push(double(i));
    stream.close();
    for (const auto& r : stream.results()) failed += r.failed ? 1 : 0;
    const double seconds = tessera::bench::seconds_since(start);
    if (failed) throw std::runtime_error(std::to_string(failed) + " sets failed");
    return seconds;
  };
  std::vector<tessera::Isolation> isolations;
  if (flags.str("isolation") != "process") isolations.push_back(tessera::Isolation::thread);
  if (flags.str("isolation") != "thread") isolations.push_back(tessera::Isolation::process);
  for (auto isolation : isolations) {
    std::vector<double> runs;
    for (long long r = 0; r < flags.integer("repeat"); ++r) runs.push_back(run(isolation));
    const double seconds = tessera::bench::median(runs);
    std::cout << "{\"bench\":\"ensemble\",\"mode\":\"" << mode << "\",\"isolation\":\""
              << tessera::isolation_name(isolation) << "\",\"sets\":" << sets << ",\"slots\":" << slots;
    if (mode == "floor") {
      const double floor = double(sets) * sleep_ms / 1000 / slots;
      std::cout << ",\"sleep_ms\":" << sleep_ms << ",\"floor_seconds\":" << floor
                << ",\"seconds\":" << seconds << ",\"overhead_percent\":" << (seconds / floor - 1) * 100;
    } else {
      std::cout << ",\"seconds\":" << seconds << ",\"sets_per_second\":" << double(sets) / seconds;
    }
    std::cout << "}" << std::endl;
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-ensemble: " << e.what() << "\n";
  return 2;
}
