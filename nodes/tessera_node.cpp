// tessera-node --config FILE.toml: one program for every role of a Tessera process: "scheduler" (accepts
// clients and worker processes), "worker" (joins a scheduler) or "both" (a scheduler and its workers in
// this process, accepting remote clients: the embedded default).
#include <dlfcn.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "actors/embedded_cluster.hpp"
#include "backends/dispatch.hpp"
#include "nodes/node_config.hpp"
#include "nodes/scheduler_gateway.hpp"
#include "nodes/worker_node.hpp"

namespace {

constexpr const char* kUsage =
    "usage: tessera-node --config FILE.toml\n"
    "       tessera-node --help\n\n"
    "Starts a Tessera node. On a bad config it prints one message naming the file, line and key, and\n"
    "exits with code 2. It stops cleanly on SIGINT or SIGTERM.\n\n";

std::string read_key(const std::string& file, const std::string& what) {
  std::ifstream in(file);
  std::string key;
  if (!in || !(in >> key) || key.size() != 40)
    throw tessera::ConfigError(file + ": cannot read a 40-character Z85 " + what + " key (key 'security." +
                               what + "_key_file')");
  return key;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage << tessera::node_config_help();
      return 0;
    }
    if (arg == "--config" && i + 1 < argc) {
      config_path = argv[++i];
    } else {
      std::cerr << "tessera-node: unknown argument '" << arg << "'\n" << kUsage;
      return 2;
    }
  }
  if (config_path.empty()) {
    std::cerr << "tessera-node: --config FILE.toml is required\n" << kUsage;
    return 2;
  }
  tessera::NodeConfig config;
  try {
    config = tessera::load_node_config(config_path);
    for (const auto& plugin : config.plugins)
      if (!dlopen(plugin.c_str(), RTLD_NOW | RTLD_GLOBAL))
        throw tessera::ConfigError(config_path + ": plugin '" + plugin +
                                   "' (key 'plugins.paths') cannot be loaded: " + dlerror());
  } catch (const tessera::ConfigError& e) {
    std::cerr << "tessera-node: " << e.what() << "\n";
    return 2;
  }

  // Signals are taken by sigwait below, not by whichever thread they happen to hit.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // OpenBLAS started its thread pool before main, with these signals open: one landing there would kill
  // the process uncleanly. Its pool is started again, by threads that block them, when next needed.
  tessera::backends::restart_blas_threads();

  try {
    std::optional<tessera::transport::CurveKeys> keys;
    if (config.curve)
      keys = tessera::transport::CurveKeys{read_key(config.public_key_file, "public"),
                                           read_key(config.secret_key_file, "secret")};
    const auto seconds = [](double s) {
      return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
    };
    std::unique_ptr<tessera::EmbeddedCluster> cluster;
    std::unique_ptr<tessera::SchedulerGateway> gateway;
    std::vector<std::unique_ptr<tessera::WorkerNode>> workers;
    if (config.role == tessera::NodeRole::worker) {
      for (std::uint32_t i = 0; i < config.workers; ++i) {
        workers.push_back(std::make_unique<tessera::WorkerNode>(tessera::WorkerNodeOptions{
            .scheduler = config.scheduler_address,
            .listen = config.worker_listen,
            .name = config.workers == 1 ? config.name : config.name + "-" + std::to_string(i),
            .threads = config.threads_per_worker,
            .memory_limit = config.memory_limit_bytes,
            .curve = keys,
            .scheduler_public_key = config.scheduler_public_key,
            .authorized_keys = config.authorized_keys,
            .heartbeat_interval = seconds(config.heartbeat_interval_seconds)}));
        const auto id = workers.back()->wait_for_id(std::chrono::seconds(10));
        std::cout << "tessera-node '" << config.name << "' worker "
                  << (id ? std::to_string(*id) : "(unregistered)") << " joined " << config.scheduler_address
                  << "; peers reach it at " << workers.back()->endpoint() << std::endl;
      }
    } else {
      // A scheduler alone runs no workers of its own: worker processes join it.
      const bool with_workers = config.role == tessera::NodeRole::both;
      tessera::ClusterOptions options;
      options.workers = with_workers ? config.workers : 0;
      options.threads_per_worker = config.threads_per_worker;
      options.data_dir = config.data_dir;  // stream results (RocksDB); empty: a temporary directory
      cluster = std::make_unique<tessera::EmbeddedCluster>(options);
      tessera::transport::ServerOptions server;
      server.listen = config.listen;
      server.name = config.name;
      if (keys) {
        server.curve = keys;
        server.authorized_keys = config.authorized_keys;
      }
      gateway = std::make_unique<tessera::SchedulerGateway>(
          cluster->scheduler(), cluster->link(), std::move(server),
          tessera::GatewayOptions{
              .worker_timeout = seconds(config.heartbeat_timeout_seconds),
              .client_grace = seconds(config.client_grace_seconds),
              .open_stream =
                  [&cluster](const tessera::StreamSettings& settings,
                             std::shared_ptr<tessera::StreamSink> sink) {
                    return cluster->open_stream(settings, std::move(sink));
                  },
              .store = [&cluster] { return std::shared_ptr<const tessera::ResultStore>(cluster->store()); }});
      std::cout << "tessera-node '" << config.name << "' listening on " << gateway->endpoint();
      if (with_workers)
        std::cout << " with " << config.workers << " workers x " << cluster->threads_per_worker()
                  << " threads";
      std::cout << std::endl;
    }
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cout << "tessera-node '" << config.name << "' stopping (signal " << signal << ")" << std::endl;
    workers.clear();
    gateway.reset();
    cluster.reset();
  } catch (const std::exception& e) {
    std::cerr << "tessera-node: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
