// tessera-bench-streams: a stream of parameter sets through a trivial simulation on an embedded cluster:
// throughput (pushed to every result durable and delivered), latency from push to durable result (p50,
// p99, one set at a time), and peak memory while a producer far faster than the pool pushes a long stream.
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <thread>

#include <tessera/tessera.hpp>

#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

// Trivial: the cost measured is Tessera's, not the simulation's.
struct EchoSimulation {
  explicit EchoSimulation(const tessera::Config&) {}
  double run(double x) { return x; }
};
TESSERA_SIMULATION(EchoSimulation, "echo");

// Ten times slower than the producer can push.
struct SlowEchoSimulation {
  explicit SlowEchoSimulation(const tessera::Config&) {}
  double run(double x) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
    return x;
  }
};
TESSERA_SIMULATION(SlowEchoSimulation, "slow_echo");

// Resident memory now (not the peak): /proc/self/statm counts pages.
double current_rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-streams",
      "a stream of parameter sets through a trivial simulation on an embedded cluster: throughput, latency "
      "and memory. Prints one JSON line per measurement.");
  flags.integer("sets", 1000000, 1, 1000000000, "parameter sets per repetition")
      .integer("workers", 1, 1, 1024, "embedded workers")
      .integer("threads", 2, 1, 1024, "threads per worker")
      .integer("max-in-flight", 65536, 1, 1000000, "parameter sets pushed but not yet answered")
      .integer("repeat", 3, 1, 1000, "repetitions (the median is reported)")
      .integer("latency-samples", 2000, 1, 10000000, "sets timed one at a time")
      .integer("memory-sets", 2000000, 1, 1000000000, "sets of the memory measurement");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  tessera::LocalCluster cluster{{.workers = static_cast<std::uint32_t>(flags.integer("workers")),
                                 .threads_per_worker = static_cast<std::uint32_t>(flags.integer("threads"))}};
  tessera::Client client{cluster};
  {
    // Memory while a producer ten times faster than the pool pushes a long stream: sampled resident
    // memory stays flat (credit bounds what is in flight), whatever the stream's length.
    const double rss_before = current_rss_mb();
    std::atomic<bool> done{false};
    std::atomic<double> rss_max{rss_before};
    std::thread sampler([&] {
      while (!done) {
        rss_max = std::max(rss_max.load(), current_rss_mb());
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a sampling period, not a wait
      }
    });
    const auto m = flags.integer("memory-sets");
    const auto start = std::chrono::steady_clock::now();
    auto stream = client.stream("slow_echo", {.max_in_flight = 4096});
    for (long long i = 0; i < m; ++i) stream.push(double(i));
    stream.close();
    stream.wait();
    done = true;
    sampler.join();
    std::cout << "{\"bench\":\"stream_memory\",\"mode\":\"embedded\",\"sets\":" << m
              << ",\"simulation_us\":20,\"max_in_flight\":4096,\"seconds\":"
              << tessera::bench::seconds_since(start) << ",\"rss_mb_before\":" << rss_before
              << ",\"rss_mb_max\":" << rss_max.load() << "}" << std::endl;
  }
  const auto n = flags.integer("sets");
  const auto max_in_flight = static_cast<std::size_t>(flags.integer("max-in-flight"));
  std::vector<double> runs;
  for (long long r = 0; r <= flags.integer("repeat"); ++r) {
    const auto start = std::chrono::steady_clock::now();
    auto stream = client.stream("echo", {.max_in_flight = max_in_flight});
    for (long long i = 0; i < n; ++i) stream.push(double(i));
    stream.close();
    stream.wait();
    if (stream.completed() != static_cast<std::uint64_t>(n)) throw std::runtime_error("results missing");
    if (r > 0) runs.push_back(tessera::bench::seconds_since(start));  // the first run warms up
  }
  const double s = tessera::bench::median(runs);
  std::cout << "{\"bench\":\"stream\",\"mode\":\"embedded\",\"sets\":" << n
            << ",\"workers\":" << flags.integer("workers") << ",\"threads\":" << flags.integer("threads")
            << ",\"max_in_flight\":" << max_in_flight << ",\"seconds\":" << s
            << ",\"rate\":" << static_cast<long long>(double(n) / s) << "}" << std::endl;

  {
    auto stream = client.stream("echo");
    std::vector<double> latencies;
    for (long long i = 0; i < flags.integer("latency-samples"); ++i) {
      const auto start = std::chrono::steady_clock::now();
      stream.push(double(i));
      if (!stream.next()) throw std::runtime_error("no result");
      latencies.push_back(tessera::bench::seconds_since(start) * 1e6);
    }
    stream.close();
    std::sort(latencies.begin(), latencies.end());
    std::cout << "{\"bench\":\"stream_latency\",\"mode\":\"embedded\",\"samples\":" << latencies.size()
              << ",\"p50_us\":" << latencies[latencies.size() / 2]
              << ",\"p99_us\":" << latencies[latencies.size() * 99 / 100] << "}" << std::endl;
  }

  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-streams: " << e.what() << "\n";
  return 2;
}
