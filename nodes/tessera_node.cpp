// tessera-node --config FILE.toml: one program for every role of a Tessera process. This build serves
// role "both": a scheduler and its workers in this process, accepting remote clients over ZeroMQ.
#include <dlfcn.h>
#include <signal.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "actors/embedded_cluster.hpp"
#include "nodes/node_config.hpp"
#include "nodes/scheduler_gateway.hpp"

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
    if (config.role != tessera::NodeRole::both)
      throw tessera::ConfigError(
          config_path + ": node.role \"" +
          std::string(config.role == tessera::NodeRole::worker ? "worker" : "scheduler") +
          "\" is not served by this build yet; use \"both\"");
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

  try {
    tessera::EmbeddedCluster cluster{
        {.workers = config.workers, .threads_per_worker = config.threads_per_worker}};
    tessera::transport::ServerOptions server;
    server.listen = config.listen;
    server.name = config.name;
    if (config.curve) {
      server.curve = tessera::transport::CurveKeys{read_key(config.public_key_file, "public"),
                                                   read_key(config.secret_key_file, "secret")};
      server.authorized_keys = config.authorized_keys;
    }
    tessera::SchedulerGateway gateway(cluster.scheduler(), cluster.link(), std::move(server));
    std::cout << "tessera-node '" << config.name << "' listening on " << gateway.endpoint() << " with "
              << config.workers << " workers x " << cluster.threads_per_worker() << " threads" << std::endl;
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cout << "tessera-node '" << config.name << "' stopping (signal " << signal << ")" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "tessera-node: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
