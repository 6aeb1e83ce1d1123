// What the dashboard costs and how fast it answers under load.
//   --mode overhead  no-op task maps (and a chain) on a cluster without a dashboard and on one with a
//                    dashboard watched by pollers (every endpoint, as open pages poll), alternating, in
//                    one run: the rates side by side and the loss in percent.
//   --mode load      every JSON endpoint and /metrics polled in turn while a map of --tasks no-op tasks
//                    and a stream of --sets sets run: each endpoint's p50, p99 and max, and the answers'
//                    largest size. With --plot, a figure of the latencies (gnuplot).
// Prints one JSON line per measurement.
// clang-format off
#include <tessera/tessera.hpp>
#include <httplib.h>
// clang-format on

#include <atomic>
#include <iostream>
#include <map>
#include <numeric>
#include <thread>

#include "bench_tasks.hpp"
#include "bench_util.hpp"
#include "cli_options.hpp"
#include "plots/figure.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using bench_tasks::noop;

const std::vector<std::string> kEndpoints = {"/api/status.json",
                                             "/api/workers.json",
                                             "/api/progress.json",
                                             "/api/task-stream.json",
                                             "/api/streams.json",
                                             "/api/glm.json",
                                             "/metrics"};

int port_of(const std::string& link) {
  const auto colon = link.rfind(':');
  return std::stoi(link.substr(colon + 1));
}

// Polls every endpoint in turn until `stop`, `period` between rounds (0: back to back); latencies by
// endpoint, in seconds.
struct Poller {
  std::map<std::string, std::vector<double>> latencies;
  std::map<std::string, std::size_t> largest;
  std::uint64_t failures = 0;
  std::thread thread;
  std::atomic<bool> stop{false};

  Poller(int port, std::chrono::milliseconds period) {
    thread = std::thread([this, port, period] {
      httplib::Client http("127.0.0.1", port);
      http.set_keep_alive(true);
      http.set_tcp_nodelay(true);  // as browsers and Prometheus do
      http.set_read_timeout(10);
      while (!stop) {
        const auto round = Clock::now();
        for (const auto& path : kEndpoints) {
          const auto start = Clock::now();
          auto res = http.Get(path.c_str());
          const double seconds = tessera::bench::seconds_since(start);
          if (!res || res->status != 200) {
            ++failures;
            continue;
          }
          latencies[path].push_back(seconds);
          largest[path] = std::max(largest[path], res->body.size());
        }
        if (period.count() > 0) std::this_thread::sleep_until(round + period);  // the pages' poll period
      }
    });
  }
  void finish() {
    stop = true;
    thread.join();
  }
};

double quantile(std::vector<double> xs, double q) {
  if (xs.empty()) return 0;
  std::sort(xs.begin(), xs.end());
  return xs[std::min(xs.size() - 1, static_cast<std::size_t>(q * static_cast<double>(xs.size())))];
}

double run_map(tessera::Client& client, std::int64_t n) {
  std::vector<std::int64_t> inputs(static_cast<std::size_t>(n));
  std::iota(inputs.begin(), inputs.end(), 0);
  const auto start = Clock::now();
  auto results = client.gather(client.map(noop, inputs));
  const double s = tessera::bench::seconds_since(start);
  if (results.back() != n - 1) throw std::runtime_error("map: wrong result");
  return s;
}

double run_chain(tessera::Client& client, std::int64_t n) {
  const auto start = Clock::now();
  auto link = tessera::delayed(noop)(std::int64_t{0});
  for (std::int64_t i = 1; i < n; ++i) link = tessera::delayed(noop)(link);
  if (client.compute(link) != 0) throw std::runtime_error("chain: wrong result");
  return tessera::bench::seconds_since(start);
}

void wait_idle(tessera::LocalCluster& cluster) {
  while (cluster.status().operations != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

int overhead(const tessera::cli::FlagTable& flags) {
  const auto n = flags.integer("tasks");
  const auto chain = flags.integer("chain");
  const auto threads = static_cast<std::uint32_t>(flags.integer("threads"));
  const auto pollers = flags.integer("pollers");
  std::map<std::string, std::vector<double>> times;  // "map off", "map on", ...
  for (long long r = 0; r < flags.integer("repeat"); ++r) {
    // Alternating which goes first, so that neither gains from a warmer machine.
    for (const bool on : {r % 2 == 1, r % 2 == 0}) {
      tessera::ClusterOptions options{.workers = 1, .threads_per_worker = threads};
      if (on) options.dashboard = "127.0.0.1:0";
      tessera::LocalCluster cluster{options};
      tessera::Client client{cluster};
      std::vector<std::unique_ptr<Poller>> watching;
      if (on)
        for (long long p = 0; p < pollers; ++p)
          watching.push_back(
              std::make_unique<Poller>(port_of(cluster.dashboard_link()), std::chrono::seconds(1)));
      run_map(client, std::min<std::int64_t>(n, 10000));  // warm-up
      wait_idle(cluster);
      times[std::string("map ") + (on ? "on" : "off")].push_back(run_map(client, n));
      wait_idle(cluster);
      times[std::string("chain ") + (on ? "on" : "off")].push_back(run_chain(client, chain));
      for (auto& p : watching) p->finish();
    }
  }
  // What watching costs with nothing to run: the process's CPU per second with and without the pollers,
  // a figure the VM's noise hardly touches.
  for (const bool on : {false, true}) {
    tessera::ClusterOptions options{.workers = 1, .threads_per_worker = threads};
    options.dashboard = "127.0.0.1:0";
    tessera::LocalCluster cluster{options};
    tessera::Client client{cluster};
    run_map(client, 100000);  // the task stream then has runs to show
    wait_idle(cluster);
    std::vector<std::unique_ptr<Poller>> watching;
    if (on)
      for (long long p = 0; p < pollers; ++p)
        watching.push_back(
            std::make_unique<Poller>(port_of(cluster.dashboard_link()), std::chrono::seconds(1)));
    const auto start = Clock::now();
    const double cpu = tessera::bench::cpu_seconds();
    std::this_thread::sleep_for(std::chrono::seconds(10));
    const double used = tessera::bench::cpu_seconds() - cpu;
    const double wall = tessera::bench::seconds_since(start);
    for (auto& p : watching) p->finish();
    std::cout << "{\"bench\":\"dashboard_idle_cpu\",\"pollers\":" << (on ? pollers : 0)
              << ",\"seconds\":" << wall << ",\"cpu_percent_of_one_core\":" << used / wall * 100 << "}"
              << std::endl;
  }
  // Runs on a shared VM drift by 10% between minutes: each repetition runs off and on back to back, and
  // the loss is the median of the paired ratios, with their quartiles as the noise.
  for (const char* shape : {"map", "chain"}) {
    const auto& off = times[std::string(shape) + " off"];
    const auto& on = times[std::string(shape) + " on"];
    std::vector<double> ratios;
    for (std::size_t r = 0; r < off.size(); ++r) ratios.push_back(on[r] / off[r]);
    const auto tasks = std::string(shape) == "map" ? n : chain;
    std::cout << "{\"bench\":\"dashboard_overhead\",\"shape\":\"" << shape << "\",\"tasks\":" << tasks
              << ",\"threads\":" << threads << ",\"pollers\":" << pollers << ",\"repeat\":" << off.size()
              << ",\"rate_off\":" << static_cast<long long>(tasks / tessera::bench::median(off))
              << ",\"rate_on\":" << static_cast<long long>(tasks / tessera::bench::median(on))
              << ",\"loss_percent\":" << (tessera::bench::median(ratios) - 1) * 100
              << ",\"loss_q25_percent\":" << (quantile(ratios, 0.25) - 1) * 100
              << ",\"loss_q75_percent\":" << (quantile(ratios, 0.75) - 1) * 100 << "}" << std::endl;
  }
  return 0;
}

int load(const tessera::cli::FlagTable& flags) {
  const auto n = flags.integer("tasks");
  const auto sets = flags.integer("sets");
  const auto threads = static_cast<std::uint32_t>(flags.integer("threads"));
  tessera::ClusterOptions options{.workers = 1, .threads_per_worker = threads};
  options.dashboard = "127.0.0.1:0";
  tessera::LocalCluster cluster{options};
  tessera::Client client{cluster};
  Poller poller(port_of(cluster.dashboard_link()), std::chrono::milliseconds(0));
  const auto start = Clock::now();
  double map_seconds = 0, stream_seconds = 0;
  std::thread mapper([&] { map_seconds = run_map(client, n); });
  std::thread streamer([&] {
    const auto began = Clock::now();
    auto stream = client.stream("bench_echo", {.max_in_flight = 100000});
    for (std::int64_t i = 0; i < sets; ++i) stream.push(static_cast<double>(i));
    stream.close();
    if (!stream.wait(Clock::now() + std::chrono::hours(1))) throw std::runtime_error("stream: not finished");
    if (stream.completed() != static_cast<std::uint64_t>(sets))
      throw std::runtime_error("stream: results lost");
    stream_seconds = tessera::bench::seconds_since(began);
  });
  mapper.join();
  streamer.join();
  poller.finish();
  const double total = tessera::bench::seconds_since(start);
  tessera::plots::Figure figure;
  figure.title = "Dashboard endpoints while a " + std::to_string(n) + "-task map and a " +
                 std::to_string(sets) + "-set stream run";
  figure.x_label = "answer time (ms)";
  figure.y_label = "fraction of answers at most that long";
  figure.log_x = true;
  for (const auto& path : kEndpoints) {
    auto xs = poller.latencies[path];
    std::sort(xs.begin(), xs.end());
    std::cout << "{\"bench\":\"dashboard_load\",\"endpoint\":\"" << path << "\",\"answers\":" << xs.size()
              << ",\"p50_ms\":" << quantile(xs, 0.5) * 1e3 << ",\"p99_ms\":" << quantile(xs, 0.99) * 1e3
              << ",\"max_ms\":" << (xs.empty() ? 0 : xs.back() * 1e3)
              << ",\"largest_bytes\":" << poller.largest[path] << "}" << std::endl;
    tessera::plots::Series cdf{path, {}, {}, tessera::plots::Series::Style::lines};
    for (std::size_t i = 0; i < xs.size(); ++i) {
      cdf.x.push_back(std::max(xs[i] * 1e3, 1e-3));
      cdf.y.push_back(static_cast<double>(i + 1) / static_cast<double>(xs.size()));
    }
    if (!cdf.x.empty()) figure.series.push_back(std::move(cdf));
  }
  std::cout << "{\"bench\":\"dashboard_load\",\"tasks\":" << n << ",\"sets\":" << sets
            << ",\"threads\":" << threads << ",\"map_seconds\":" << map_seconds
            << ",\"stream_seconds\":" << stream_seconds << ",\"seconds\":" << total
            << ",\"failed_answers\":" << poller.failures
            << ",\"peak_rss_mb\":" << tessera::bench::peak_rss_mb() << "}" << std::endl;
  if (!flags.str("plot").empty()) tessera::plots::write_png(figure, flags.str("plot"));
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-dashboard",
      "what the dashboard costs the task benchmarks, and how fast its endpoints answer "
      "under load. Prints one JSON line per measurement.");
  flags.choice("mode", "overhead", {"overhead", "load"}, "what to measure")
      .integer("tasks", 1000000, 1, 100000000, "tasks of the map")
      .integer("chain", 100000, 1, 10000000, "tasks of the chain (overhead)")
      .integer("sets", 1000000, 1, 100000000, "sets of the stream (load)")
      .integer("threads", 2, 1, 1024, "threads of the one worker")
      .integer("pollers", 5, 0, 64, "pages watching, each polling every endpoint once a second (overhead)")
      .integer("repeat", 5, 1, 1000, "repetitions (overhead; medians are reported)")
      .text("plot", "", "load: write the latencies' figure to this PNG");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  return flags.str("mode") == "overhead" ? overhead(flags) : load(flags);
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-dashboard: " << e.what() << "\n";
  return 2;
}
