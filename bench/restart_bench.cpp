// tessera-bench-restart: a scheduler process with a data_dir and worker processes on 127.0.0.1, and a
// client in this process streaming --sets parameter sets; once a quarter of them are stored the scheduler
// is killed with SIGKILL and started again from the same config and data_dir. Measures, per run, the time
// from the restarted process's start to the first result stored after it (reaching the client), and to
// the stream's end; checks every id came back once. Prints one JSON line per run and one with medians.
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "../tests/support/node_process.hpp"
#include "bench_util.hpp"
#include "cli_options.hpp"

namespace {

using Clock = std::chrono::steady_clock;

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
    throw std::runtime_error("no free port");
  socklen_t size = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  const int port = ntohs(address.sin_port);
  close(fd);
  return port;
}

}  // namespace

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-restart",
      "a stream across a scheduler killed with SIGKILL and restarted from its data_dir: "
      "time to the first new stored result and to the stream's end. One JSON line per run.");
  flags.integer("sets", 100000, 1, 100000000, "parameter sets per run")
      .integer("repeat", 5, 1, 1000, "runs, each with a kill (medians reported)")
      .integer("worker-processes", 2, 1, 64, "worker processes")
      .integer("threads", 2, 1, 1024, "threads per worker")
      .integer("pause-us", 20, 0, 1000000, "microseconds each parameter set takes")
      .text("node", TESSERA_NODE_BINARY, "the tessera-node binary")
      .text("plugin", TESSERA_BENCH_PLUGIN, "the benchmark plugin the nodes load");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const std::string plugins = "[plugins]\npaths = [\"" + flags.str("plugin") + "\"]\n";
  const auto data_dir =
      std::filesystem::temp_directory_path() / ("tessera-bench-restart-" + std::to_string(getpid()));
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  const std::string scheduler_config =
      "[node]\nname = \"bench-scheduler\"\nrole = \"scheduler\"\ndata_dir = \"" + data_dir.string() +
      "\"\n[scheduler]\nlisten = \"" + endpoint + "\"\n" + plugins;
  auto scheduler =
      std::make_unique<tessera::testing::NodeProcess>(scheduler_config, false, flags.str("node"));
  std::vector<std::unique_ptr<tessera::testing::NodeProcess>> workers;
  for (long long i = 0; i < flags.integer("worker-processes"); ++i)
    workers.push_back(std::make_unique<tessera::testing::NodeProcess>(
        "[node]\nname = \"bench-worker-" + std::to_string(i) +
            "\"\nrole = \"worker\"\n[worker]\nscheduler = \"" + endpoint +
            "\"\nthreads_per_worker = " + std::to_string(flags.integer("threads")) + "\n" + plugins,
        false, flags.str("node")));
  tessera::ConnectOptions connect;
  connect.name = "bench-restart";
  tessera::Client client(endpoint, connect);
  const auto sets = static_cast<std::uint64_t>(flags.integer("sets"));
  std::vector<double> to_first, to_end, starts;
  for (long long run = 0; run < flags.integer("repeat"); ++run) {
    tessera::StreamOptions options;
    options.config.set("pause_us", tessera::to_value(static_cast<std::int64_t>(flags.integer("pause-us"))));
    auto stream = client.stream("bench_echo", std::move(options));
    std::mutex mutex;
    std::atomic<std::uint64_t> answered{0};
    std::atomic<bool> restarted{false};
    Clock::time_point restart_at{}, first_after{};
    stream.on_result([&](const tessera::StreamRecord&) {
      answered += 1;
      if (restarted.load()) {
        std::lock_guard lock(mutex);
        if (first_after == Clock::time_point{}) first_after = Clock::now();
      }
    });
    const auto started = Clock::now();
    std::thread saboteur([&] {
      while (answered.load() < sets / 4) std::this_thread::sleep_for(std::chrono::microseconds(200));
      scheduler->kill_hard();
      const auto restart = Clock::now();
      scheduler = std::make_unique<tessera::testing::NodeProcess>(scheduler_config, false, flags.str("node"));
      {
        std::lock_guard lock(mutex);
        restart_at = restart;
      }
      restarted = true;
    });
    for (std::uint64_t i = 0; i < sets; ++i) stream.push(double(i));
    stream.close();
    stream.wait();
    const auto ended = Clock::now();
    saboteur.join();
    if (stream.completed() != sets) throw std::runtime_error("results missing after the restart");
    std::lock_guard lock(mutex);
    const double first = std::chrono::duration<double>(first_after - restart_at).count();
    const double end = std::chrono::duration<double>(ended - restart_at).count();
    to_first.push_back(first);
    to_end.push_back(end);
    starts.push_back(std::chrono::duration<double>(restart_at - started).count());
    std::cout << "{\"bench\":\"restart\",\"run\":" << run << ",\"sets\":" << sets
              << ",\"killed_after_s\":" << starts.back() << ",\"restart_to_first_result_s\":" << first
              << ",\"restart_to_end_s\":" << end << "}" << std::endl;
  }
  std::cout << "{\"bench\":\"restart\",\"runs\":" << to_first.size() << ",\"sets\":" << sets
            << ",\"pause_us\":" << flags.integer("pause-us") << ",\"worker_processes\":" << workers.size()
            << ",\"threads\":" << flags.integer("threads")
            << ",\"median_restart_to_first_result_s\":" << tessera::bench::median(to_first)
            << ",\"median_restart_to_end_s\":" << tessera::bench::median(to_end) << "}" << std::endl;
  workers.clear();
  scheduler.reset();
  std::filesystem::remove_all(data_dir);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-restart: " << e.what() << "\n";
  return 1;
}
