// tessera-bench-remote: a client in this process and tessera-node processes on 127.0.0.1 (started here
// from generated configs that load the benchmark plugin). Topology "processes" (default): a scheduler
// process and --worker-processes worker processes; "both": one node with a scheduler and its workers.
// Measures no-op task throughput through client.map, the latency of one tiny submit + result (p50, p99),
// and (processes) the rate at which 8 MiB chunks move between worker processes.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>

#include "../tests/support/node_process.hpp"
#include "bench_tasks.hpp"
#include "bench_util.hpp"
#include "cli_options.hpp"

int main(int argc, char** argv) try {
  tessera::cli::FlagTable flags(
      "tessera-bench-remote",
      "a client in this process and tessera-node processes on 127.0.0.1: no-op task throughput, submit "
      "latency and (processes) chunk transfer rates. Prints one JSON line per measurement.");
  flags
      .choice("topology", "processes", {"processes", "both"},
              "a scheduler process and worker processes, or one node with both")
      .integer("tasks", 1000000, 1, 100000000, "no-op tasks per repetition")
      .integer("worker-processes", 2, 1, 64, "worker processes (topology processes)")
      .integer("workers", 1, 1, 1024, "workers (topology both)")
      .integer("threads", 2, 1, 1024, "threads per worker")
      .integer("repeat", 3, 1, 1000, "repetitions (the median is reported)")
      .integer("latency-samples", 2000, 1, 10000000, "submits timed one at a time")
      .integer("chunks", 64, 1, 100000, "8 MiB chunks moved between worker processes")
      .choice("transfer", "chunk", {"chunk", "vector"},
              "what the 8 MiB moved are: array chunks (a received one keeps its frame), or "
              "std::vector<double> values (copied out of the frame)")
      .integer("stream-sets", 1000000, 1, 100000000, "parameter sets of the remote stream")
      .text("scheduler", "",
            "measure an existing cluster at this address instead of starting nodes (e.g. one across "
            "network namespaces: bench/netns/run.sh)")
      .text("client-config", "", "with --scheduler: the client's CURVE keys (as tessera --client-config)")
      .integer("expect-workers", 2, 0, 1024,
               "with --scheduler: worker processes it has (2 or more: the chunk transfers run)")
      .choice("idle-threads", "wait", {"wait", "poll"}, "the nodes' scheduler.idle_threads")
      .choice("worker-listen", "tcp", {"tcp", "tcp-only", "ipc"},
              "(topology processes) the worker processes' worker.listen, where peers send them chunks: "
              "tcp://127.0.0.1:0 (with worker.same_host_ipc's socket file beside it, which these same-host "
              "workers pick), tcp-only (the same with worker.same_host_ipc = false) or ipc://* (a socket "
              "file of its own in the temporary directory)")
      .text("node", TESSERA_NODE_BINARY, "the tessera-node binary")
      .text("plugin", TESSERA_BENCH_PLUGIN, "the benchmark plugin the nodes load");
  if (const auto exit_code = flags.parse(argc, argv)) return *exit_code;
  const std::string topology = flags.str("topology");
  if (topology != "processes" && topology != "both")
    throw std::runtime_error("--topology must be processes or both, not " + topology);
  const std::string plugins = "[plugins]\npaths = [\"" + flags.str("plugin") + "\"]\n";
  const std::string idle = "idle_threads = \"" + flags.str("idle-threads") + "\"\n";
  std::unique_ptr<tessera::testing::NodeProcess> scheduler;
  std::vector<std::unique_ptr<tessera::testing::NodeProcess>> workers;
  const std::string existing = flags.str("scheduler");
  if (!existing.empty()) {
    // Nothing started here: the shape is the existing cluster's.
  } else if (topology == "both") {
    scheduler = std::make_unique<tessera::testing::NodeProcess>(
        "[node]\nname = \"bench\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n" + idle +
            "[worker]\nworkers = " + std::to_string(flags.integer("workers")) +
            "\nthreads_per_worker = " + std::to_string(flags.integer("threads")) + "\n" + plugins,
        false, flags.str("node"));
  } else {
    scheduler = std::make_unique<tessera::testing::NodeProcess>(
        "[node]\nname = \"bench-scheduler\"\nrole = "
        "\"scheduler\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n" +
            idle + plugins,
        false, flags.str("node"));
    for (long long i = 0; i < flags.integer("worker-processes"); ++i) {
      const std::string name = "bench-worker-" + std::to_string(i);
      // ipc://*: a socket file in a directory of its own under $TMPDIR, removed when the node stops.
      const std::string listen = flags.str("worker-listen") == "ipc" ? "ipc://*" : "tcp://127.0.0.1:0";
      const std::string same_host = flags.str("worker-listen") == "tcp-only" ? "same_host_ipc = false\n" : "";
      workers.push_back(std::make_unique<tessera::testing::NodeProcess>(
          "[node]\nname = \"" + name + "\"\nrole = \"worker\"\n[scheduler]\n" + idle +
              "[worker]\nscheduler = \"" + scheduler->endpoint() + "\"\nlisten = \"" + listen + "\"\n" +
              same_host + "threads_per_worker = " + std::to_string(flags.integer("threads")) + "\n" + plugins,
          false, flags.str("node")));
    }
  }
  const std::size_t worker_processes =
      existing.empty() ? workers.size() : static_cast<std::size_t>(flags.integer("expect-workers"));
  const std::string shape =
      "\"topology\":\"" + (existing.empty() ? topology : std::string("existing")) +
      "\",\"worker_processes\":" + std::to_string(worker_processes) +
      (existing.empty() ? ",\"threads\":" + std::to_string(flags.integer("threads")) +
                              ",\"idle_threads\":\"" + flags.str("idle-threads") + "\"" +
                              ",\"worker_listen\":\"" + flags.str("worker-listen") + "\""
                        : std::string());
  tessera::cli::KeyOptions keys;
  keys.client_config = flags.str("client-config");
  tessera::Client client(existing.empty() ? scheduler->endpoint() : existing,
                         keys.connect_options("tessera-bench-remote"));
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
  std::cout << "{\"bench\":\"remote_tasks\",\"mode\":\"map\",\"tasks\":" << n << "," << shape
            << ",\"seconds\":" << s << ",\"rate\":" << static_cast<long long>(static_cast<double>(n) / s)
            << "}" << std::endl;

  std::vector<double> latencies;
  for (long long i = 0; i < flags.integer("latency-samples"); ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (client.submit(bench_tasks::noop, i).result() != i) throw std::runtime_error("wrong result");
    latencies.push_back(tessera::bench::seconds_since(start) * 1e6);
  }
  std::sort(latencies.begin(), latencies.end());
  std::cout << "{\"bench\":\"remote_latency\"," << shape << ",\"samples\":" << latencies.size()
            << ",\"p50_us\":" << latencies[latencies.size() / 2]
            << ",\"p99_us\":" << latencies[latencies.size() * 99 / 100] << "}" << std::endl;

  if (worker_processes >= 2) {
    // Chunks spread over the workers; each consumer reads two, and counts the bytes that crossed.
    const auto chunks = flags.integer("chunks");
    std::vector<std::int64_t> ids(static_cast<std::size_t>(chunks));
    std::iota(ids.begin(), ids.end(), 0);
    const bool as_chunks = flags.str("transfer") == "chunk";
    // Each consumer reads made[i] and made[i + n/2 + 1].
    const auto pair_up = [](const auto& made, auto& firsts, auto& seconds) {
      for (std::size_t i = 0; i < made.size(); ++i) {
        firsts.push_back(made[i]);
        seconds.push_back(made[(i + made.size() / 2 + 1) % made.size()]);
      }
    };
    std::vector<tessera::Future<std::vector<double>>> vector_firsts, vector_seconds;
    std::vector<tessera::Future<tessera::Value>> chunk_firsts, chunk_seconds;
    if (as_chunks) {
      auto made = client.map(bench_tasks::stamped_array_chunk, ids);
      for (auto& f : made) f.wait();
      pair_up(made, chunk_firsts, chunk_seconds);
    } else {
      auto made = client.map(bench_tasks::stamped_chunk, ids);
      for (auto& f : made) f.wait();
      pair_up(made, vector_firsts, vector_seconds);
    }
    std::vector<double> rates, crossed_totals, transfer_times;
    for (long long r = 0; r < flags.integer("repeat"); ++r) {
      const auto start = std::chrono::steady_clock::now();
      auto crossed =
          as_chunks ? client.gather(client.map(bench_tasks::crossed_chunk_bytes, chunk_firsts, chunk_seconds))
                    : client.gather(client.map(bench_tasks::crossed_bytes, vector_firsts, vector_seconds));
      const double elapsed = tessera::bench::seconds_since(start);
      std::int64_t total = 0;
      for (auto c : crossed) {
        if (c < 0) throw std::runtime_error("a chunk arrived damaged");
        total += c;
      }
      rates.push_back(static_cast<double>(total) / elapsed / (1 << 30));
      crossed_totals.push_back(static_cast<double>(total));
      transfer_times.push_back(elapsed);
    }
    std::cout << "{\"bench\":\"chunk_transfer\"," << shape << ",\"transfer\":\"" << flags.str("transfer")
              << "\",\"chunk_bytes\":" << (8 << 20) << ",\"consumers\":" << chunks
              << ",\"crossed_bytes\":" << tessera::bench::median(crossed_totals)
              << ",\"seconds\":" << tessera::bench::median(transfer_times)
              << ",\"gib_per_s\":" << tessera::bench::median(rates) << "}" << std::endl;
  }
  {
    // A stream of trivial parameter sets: pushed by this client, run on the workers, each result stored
    // (synced) in the scheduler's RocksDB store before it comes back.
    const auto sets = flags.integer("stream-sets");
    std::vector<double> stream_times;
    for (long long r = 0; r <= flags.integer("repeat"); ++r) {
      const auto start = std::chrono::steady_clock::now();
      auto stream = client.stream("bench_echo", {.max_in_flight = 65536});
      stream.on_result([](const tessera::StreamRecord&) {});
      for (long long i = 0; i < sets; ++i) stream.push(double(i));
      stream.close();
      stream.wait();
      if (stream.completed() != static_cast<std::uint64_t>(sets))
        throw std::runtime_error("stream results missing");
      if (r > 0) stream_times.push_back(tessera::bench::seconds_since(start));
    }
    const double ss = tessera::bench::median(stream_times);
    std::cout << "{\"bench\":\"stream\",\"mode\":\"remote\"," << shape << ",\"sets\":" << sets
              << ",\"seconds\":" << ss << ",\"rate\":" << static_cast<long long>(double(sets) / ss) << "}"
              << std::endl;
    auto stream = client.stream("bench_echo");
    std::vector<double> push_to_durable;
    for (long long i = 0; i < flags.integer("latency-samples"); ++i) {
      const auto start = std::chrono::steady_clock::now();
      stream.push(double(i));
      if (!stream.next()) throw std::runtime_error("no stream result");
      push_to_durable.push_back(tessera::bench::seconds_since(start) * 1e6);
    }
    stream.close();
    std::sort(push_to_durable.begin(), push_to_durable.end());
    std::cout << "{\"bench\":\"stream_latency\",\"mode\":\"remote\"," << shape
              << ",\"samples\":" << push_to_durable.size()
              << ",\"p50_us\":" << push_to_durable[push_to_durable.size() / 2]
              << ",\"p99_us\":" << push_to_durable[push_to_durable.size() * 99 / 100] << "}" << std::endl;
  }

  return 0;
} catch (const std::exception& e) {
  std::cerr << "tessera-bench-remote: " << e.what() << "\n";
  return 2;
}
