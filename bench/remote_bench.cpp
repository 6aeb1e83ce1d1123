// tessera-bench-remote: a client in this process, a tessera-node process on 127.0.0.1 (started here,
// from a generated config that loads the benchmark plugin): no-op task throughput through client.map and
// the latency of one tiny submit + result (p50, p99).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "bench_tasks.hpp"
#include "bench_util.hpp"

int main(int argc, char** argv) try {
  tessera::bench::Flags flags(argc, argv,
                              {{"tasks", "1000000"},
                               {"workers", "1"},
                               {"threads", "2"},
                               {"repeat", "3"},
                               {"latency-samples", "2000"},
                               {"node", TESSERA_NODE_BINARY},
                               {"plugin", TESSERA_BENCH_PLUGIN}});
  namespace fs = std::filesystem;
  const fs::path config =
      fs::temp_directory_path() / ("tessera-bench-remote-" + std::to_string(getpid()) + ".toml");
  std::ofstream(config)
      << "[node]\nname = \"bench\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      << "[worker]\nworkers = " << flags.integer("workers")
      << "\nthreads_per_worker = " << flags.integer("threads") << "\n[plugins]\npaths = [\""
      << flags.str("plugin") << "\"]\n";
  int out[2];
  if (pipe(out) != 0) throw std::runtime_error("pipe failed");
  const pid_t node = fork();
  if (node == 0) {
    dup2(out[1], STDOUT_FILENO);
    execl(flags.str("node").c_str(), flags.str("node").c_str(), "--config", config.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  FILE* node_out = fdopen(out[0], "r");
  char line[512];
  if (!fgets(line, sizeof line, node_out)) throw std::runtime_error("tessera-node did not start");
  std::string text = line;
  const auto at = text.find("tcp://");
  const std::string endpoint = text.substr(at, text.find(' ', at) - at);
  {
    tessera::Client client(endpoint);
    const auto n = flags.integer("tasks");
    std::vector<std::int64_t> inputs(static_cast<std::size_t>(n));
    std::iota(inputs.begin(), inputs.end(), 0);
    client.gather(client.map(bench_tasks::noop, std::vector<std::int64_t>(1000, 1)));  // warm-up
    std::vector<double> times;
    for (long long r = 0; r < flags.integer("repeat"); ++r) {
      const auto start = std::chrono::steady_clock::now();
      auto results = client.gather(client.map(bench_tasks::noop, inputs));
      times.push_back(tessera::bench::seconds_since(start));
      if (results.back() != n - 1) throw std::runtime_error("wrong result");
    }
    const double s = tessera::bench::median(times);
    std::cout << "{\"bench\":\"remote_tasks\",\"mode\":\"map\",\"tasks\":" << n
              << ",\"workers\":" << flags.integer("workers") << ",\"threads\":" << flags.integer("threads")
              << ",\"seconds\":" << s << ",\"rate\":" << static_cast<long long>(static_cast<double>(n) / s)
              << "}" << std::endl;
    std::vector<double> latencies;
    for (long long i = 0; i < flags.integer("latency-samples"); ++i) {
      const auto start = std::chrono::steady_clock::now();
      if (client.submit(bench_tasks::noop, i).result() != i) throw std::runtime_error("wrong result");
      latencies.push_back(tessera::bench::seconds_since(start) * 1e6);
    }
    std::sort(latencies.begin(), latencies.end());
    std::cout << "{\"bench\":\"remote_latency\",\"samples\":" << latencies.size()
              << ",\"p50_us\":" << latencies[latencies.size() / 2]
              << ",\"p99_us\":" << latencies[latencies.size() * 99 / 100] << "}" << std::endl;
  }
  kill(node, SIGTERM);
  int status = 0;
  waitpid(node, &status, 0);
  fs::remove(config);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-remote: " << e.what() << "\n";
  return 2;
}
