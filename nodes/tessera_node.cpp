// tessera-node --config FILE.toml: one program for every role of a Tessera process: "scheduler" (accepts
// clients and worker processes), "worker" (joins a scheduler) or "both" (a scheduler and its workers in
// this process, accepting remote clients: the embedded default).
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "actors/cluster_dashboard.hpp"
#include "actors/embedded_cluster.hpp"
#include "actors/out_of_memory.hpp"
#include "actors/python_modules.hpp"
#include "actors/worker_actor.hpp"
#include "backends/dispatch.hpp"
#include "dashboard/dashboard_server.hpp"
#include "graph/builtin_names.hpp"
#include "graph/generator.hpp"
#include "nodes/atomic_file.hpp"
#include "nodes/node_config.hpp"
#include "nodes/scheduler_gateway.hpp"
#include "nodes/worker_node.hpp"
#include "programs/program_simulation.hpp"

namespace {

constexpr const char* kUsage =
    "usage: tessera-node --config FILE.toml [--address-file FILE]\n"
    "       tessera-node --check-config --config FILE.toml\n"
    "       tessera-node --help\n\n"
    "Starts a Tessera node. It stops on SIGINT or SIGTERM: an orderly shutdown, bounded by\n"
    "node.shutdown_timeout (10 s by default); a second signal during it exits at once.\n"
    "--address-file FILE: once the node listens, its address (tcp://HOST:PORT, the port a listen\n"
    "address with port 0 was given) is written there, whole or not at all, for a launcher to read.\n"
    "--check-config: read the config and load its plugins as a start would, print what it found,\n"
    "and exit 0 (usable) or 2 (refused, with the message a start would give); nothing is started.\n\n"
    "Exit codes:\n"
    "  0  stopped after SIGINT or SIGTERM, shutdown complete\n"
    "  1  failed while starting or running, e.g. the scheduler refused this worker or did not answer\n"
    "  2  bad command line or configuration, including a listen address that cannot be bound and an\n"
    "     unusable data_dir: one message names the file, line and key\n"
    "  3  stopped by force: the shutdown did not finish within node.shutdown_timeout, or a second\n"
    "     signal came during it\n"
    "  4  out of memory: an allocation failed where it could not be refused (the last line names where)\n\n";

constexpr const char* kShortUsage =
    "usage: tessera-node --config FILE.toml   (--help: usage, exit codes, every key)\n";

constexpr int kExitForced = 3;

// A failure at start that names its config key but is not the config's fault (exit 1).
class StartError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the signal thread and main share: the first stop signal, and whether the shutdown finished.
struct StopState {
  std::mutex mutex;
  std::condition_variable signalled;
  int signal = 0;
  bool finished = false;
};

void write_stderr(const std::string& line) {
  // One write: the line is not interleaved with another thread's output.
  [[maybe_unused]] const auto written = write(STDERR_FILENO, line.data(), line.size());
}

// Takes SIGINT and SIGTERM (blocked in every thread) on its own thread. The first wakes main for the
// orderly shutdown and arms the deadline; a second signal before it, or the deadline passing with the
// shutdown unfinished, ends the process at once. The thread is detached: it ends with the process.
void watch_stop_signals(const std::shared_ptr<StopState>& state, const sigset_t& signals,
                        const tessera::NodeConfig& config) {
  const auto timeout = std::chrono::duration<double>(config.shutdown_timeout_seconds);
  std::ostringstream seconds;
  seconds << config.shutdown_timeout_seconds;
  const std::string name = config.name, timeout_text = seconds.str();
  std::thread([state, signals, timeout, name, timeout_text] {
    int first = 0;
    while (sigwait(&signals, &first) != 0) {
    }
    {
      std::lock_guard lock(state->mutex);
      state->signal = first;
    }
    state->signalled.notify_all();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      const timespec wait{static_cast<time_t>(left.count() / 1000000000),
                          static_cast<long>(left.count() % 1000000000)};
      const int second = sigtimedwait(&signals, nullptr, &wait);
      if (second > 0) {
        write_stderr("tessera-node '" + name + "': second signal (" + std::to_string(second) +
                     ") during shutdown; exiting at once\n");
        _exit(kExitForced);
      }
      if (errno != EINTR && errno != EAGAIN) break;
    }
    {
      std::lock_guard lock(state->mutex);
      // The shutdown finished and only the process's exit is slow: what had to be done is done.
      if (state->finished) _exit(0);
    }
    write_stderr("tessera-node '" + name + "': shutdown did not finish within " + timeout_text +
                 " s; exiting\n");
    _exit(kExitForced);
  }).detach();
}

bool stop_requested(StopState& state) {
  std::lock_guard lock(state.mutex);
  return state.signal != 0;
}

// A ZeroMQ failure to bind a listen address is the config's: named by its key, exit 2.
// What a client that sends Python code is told when this scheduler runs none (empty: it does).
std::string client_code_refusal(const tessera::NodeConfig& config) {
  if (tessera::client_code_allowed(config)) return {};
  return "this scheduler runs no code sent by clients: security.allow_client_code is " +
         std::string(config.allow_client_code ? "false in " + config.source
                                              : "off by default for scheduler.listen beyond loopback") +
         " (name a function registered on the cluster instead, or ask the operator to turn it on, with "
         "security.curve)";
}

[[noreturn]] void refuse_listen(const tessera::NodeConfig& config, std::string_view key,
                                const std::string& address, const zmq::error_t& e) {
  throw tessera::ConfigError(tessera::config_key_location(config, key) + " (\"" +
                             tessera::config_excerpt(address) + "\"): cannot listen there: " + e.what());
}

// --address-file: written whole (a launcher polls for it); a failure is the node's, exit 1.
void write_address_file(const std::string& path, const std::string& address) {
  if (path.empty()) return;
  try {
    tessera::write_file_atomically(path, address + "\n");
  } catch (const std::runtime_error& e) {
    throw StartError("--address-file: " + tessera::config_excerpt(e.what(), 600));
  }
}

// An exception no thread caught: an allocation failure says so (exit 4); anything else is named, then
// aborts as std::terminate would.
[[noreturn]] void on_uncaught_exception() {
  if (auto thrown = std::current_exception()) {
    try {
      std::rethrow_exception(thrown);
    } catch (const std::bad_alloc&) {
      tessera::exit_out_of_memory("a thread of tessera-node");
    } catch (const std::exception& e) {
      write_stderr(std::string("tessera-node: an exception no thread caught: ") + e.what() + "\n");
    } catch (...) {
      write_stderr("tessera-node: an exception no thread caught (not a std::exception)\n");
    }
  }
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(on_uncaught_exception);
  std::string config_path;
  bool help = false;
  CLI::App app{"tessera-node", "tessera-node"};
  app.set_help_flag();  // our own --help prints the usage and every config key
  app.add_flag("-h,--help", help, "print this help and every configuration key");
  app.add_option("--config", config_path, "the node's TOML configuration file");
  std::string address_file;
  app.add_option("--address-file", address_file, "write the address it listens on there");
  bool check_only = false;
  app.add_flag("--check-config", check_only, "check the config and its plugins, start nothing");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tessera-node: " << tessera::config_excerpt(e.what(), 200) << "\n" << kShortUsage;
    return 2;
  }
  if (help) {
    std::cout << kUsage << tessera::node_config_help();
    return 0;
  }
  if (config_path.empty()) {
    std::cerr << "tessera-node: --config FILE.toml is required\n" << kShortUsage;
    return 2;
  }
  tessera::NodeConfig config;
  try {
    config = tessera::load_node_config(config_path);
    if (!check_only) tessera::check_data_dir(config);  // a check creates nothing: data_dir is the host's
    for (const auto& plugin : config.plugins)
      if (!dlopen(plugin.c_str(), RTLD_NOW | RTLD_GLOBAL))
        throw tessera::ConfigError(tessera::config_key_location(config, "plugins.paths") + ": plugin \"" +
                                   tessera::config_excerpt(plugin) +
                                   "\" cannot be loaded: " + tessera::config_excerpt(dlerror(), 200));
    // Python modules after the plugins: a name both define is refused here, naming the module.
    if (!config.python_modules.empty() || tessera::python_supported()) {
      try {
        auto environment = tessera::python_environment(config.python_modules);
        // A result must cross to the scheduler in one message.
        environment.max_result_bytes = config.limits.max_message_size;
        tessera::register_python_modules(
            std::make_shared<const tessera::PythonEnvironment>(std::move(environment)),
            std::chrono::seconds(120), tessera::client_code_allowed(config));
      } catch (const tessera::PythonModuleError& e) {
        throw tessera::ConfigError(tessera::config_key_location(config, "plugins.python") + ": " + e.what());
      }
    }
    // Programs are declared after the plugins, so that a name both use is refused here, with its line.
    if (config.role != tessera::NodeRole::worker)
      for (const auto& program : config.programs) {
        try {
          tessera::SimulationRegistry::global().add(tessera::programs::program_simulation_type(
              program.name, std::make_shared<const tessera::ProgramSpec>(program.spec)));
        } catch (const std::exception& e) {
          throw tessera::ConfigError(config.source + ":" + std::to_string(program.line) + ": [simulations." +
                                     program.name + "]: " + e.what());
        }
        if (check_only)
          if (auto missing = tessera::programs::missing_executable(program.spec); !missing.empty())
            config.warnings.push_back(config.source + ":" + std::to_string(program.line) + ": [simulations." +
                                      program.name + "]: " + missing + " on this host");
      }
  } catch (const tessera::ConfigError& e) {
    std::cerr << "tessera-node: " << e.what() << "\n";
    return 2;
  }
  for (const auto& warning : config.warnings) std::cerr << "tessera-node: warning: " << warning << "\n";
  if (check_only) {
    std::cout << "tessera-node: " << config.source << ": a usable config (node '" << config.name << "', role "
              << (config.role == tessera::NodeRole::scheduler ? "scheduler"
                  : config.role == tessera::NodeRole::worker  ? "worker"
                                                              : "both")
              << ", " << config.plugins.size() << " plugin" << (config.plugins.size() == 1 ? "" : "s")
              << " loaded, " << config.python_modules.size() << " Python module"
              << (config.python_modules.size() == 1 ? "" : "s") << " imported, " << config.programs.size()
              << " program" << (config.programs.size() == 1 ? "" : "s") << " declared)" << std::endl;
    // What clients of this node may call and stream by name.
    std::cout << "  functions registered:   " << tessera::own_and_builtin(tessera::Registry::global().names())
              << "\n"
              << "  simulations registered: "
              << tessera::own_and_builtin(tessera::SimulationRegistry::global().names()) << "\n"
              << "  generators registered:  "
              << tessera::own_and_builtin(tessera::GeneratorRegistry::global().names()) << std::endl;
    return 0;
  }

  // Signals are taken by one thread of ours (sigwait), not by whichever thread they happen to hit.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // OpenBLAS started its thread pool before main, with these signals open: one landing there would kill
  // the process uncleanly. Its pool is started again, by threads that block them, when next needed.
  tessera::backends::restart_blas_threads();
  const auto stop = std::make_shared<StopState>();
  watch_stop_signals(stop, stop_signals, config);

  try {
    std::optional<tessera::transport::CurveKeys> keys;
    if (config.curve) keys = tessera::transport::CurveKeys{config.curve_public_key, config.curve_secret_key};
    // Within each key's range (node_config.cpp), so this never overflows.
    const auto milliseconds = [](double s) {
      return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000));
    };
    // The workers of this process spill into one database: in data_dir when set, else each its own
    // temporary one.
    std::shared_ptr<tessera::NodeDatabase> database;
    std::mutex database_mutex;
    std::function<std::shared_ptr<tessera::NodeDatabase>()> open_database;
    if (!config.data_dir.empty())
      open_database = [&database, &database_mutex, dir = config.data_dir] {
        std::lock_guard lock(database_mutex);
        if (!database) database = std::make_shared<tessera::NodeDatabase>(dir);
        return database;
      };
    std::unique_ptr<tessera::EmbeddedCluster> cluster;
    std::unique_ptr<tessera::SchedulerGateway> gateway;
    std::unique_ptr<tessera::dashboard::DashboardServer> dashboard;
    std::vector<std::unique_ptr<tessera::WorkerNode>> workers;
    if (config.role == tessera::NodeRole::worker) {
      for (std::uint32_t i = 0; i < config.workers && !stop_requested(*stop); ++i) {
        try {
          workers.push_back(std::make_unique<tessera::WorkerNode>(tessera::WorkerNodeOptions{
              .scheduler = config.scheduler_address,
              .listen = config.worker_listen,
              .same_host_ipc = config.same_host_ipc,
              .name = config.workers == 1 ? config.name : config.name + "-" + std::to_string(i),
              .threads = config.threads_per_worker,
              .gpus = tessera::share_of_gpus(config.gpus.empty() ? tessera::devices_found() : config.gpus, i,
                                             config.workers),
              .memory_limit = config.memory_limit_bytes,
              .memory_target_fraction = config.memory_target_fraction,
              .memory_pause_fraction = config.memory_pause_fraction,
              .keep_freed_memory = config.keep_freed_memory,
              .idle_threads = config.idle_threads,
              .open_database = open_database,
              .runs_dir = config.data_dir.empty()
                              ? std::string()
                              : (std::filesystem::path(config.data_dir) / "runs").string(),
              .curve = keys,
              .scheduler_public_key = config.scheduler_public_key,
              .authorized_keys = config.authorized_keys,
              .authorize_any = config.authorize_any,
              .heartbeat_interval = milliseconds(config.heartbeat_interval_seconds),
              .max_message_bytes = static_cast<std::size_t>(config.limits.max_message_size)}));
        } catch (const zmq::error_t& e) {
          // The scheduler's address was checked when parsed and is connected to asynchronously: a ZeroMQ
          // error here is the bind of the peer server.
          refuse_listen(config, "worker.listen", config.worker_listen, e);
        } catch (const tessera::transport::ConnectionRefused& e) {
          throw StartError(tessera::config_key_location(config, "worker.scheduler") + " (\"" +
                           tessera::config_excerpt(config.scheduler_address) + "\"): " + e.what());
        }
        const auto id = workers.back()->wait_for_id(std::chrono::seconds(10));
        std::cout << "tessera-node '" << config.name << "' worker "
                  << (id ? std::to_string(*id) : "(unregistered)") << " joined " << config.scheduler_address
                  << "; peers reach it at " << workers.back()->endpoint() << std::endl;
        if (i == 0) write_address_file(address_file, workers.back()->endpoint());
      }
    } else {
      // A scheduler alone runs no workers of its own: worker processes join it.
      const bool with_workers = config.role == tessera::NodeRole::both;
      tessera::ClusterOptions options;
      options.workers = with_workers ? config.workers : 0;
      options.threads_per_worker = config.threads_per_worker;
      options.data_dir = config.data_dir;  // stream results and spilled chunks; empty: a temporary directory
      options.memory_limit = config.memory_limit_bytes;
      options.memory_target_fraction = config.memory_target_fraction;
      options.memory_pause_fraction = config.memory_pause_fraction;
      options.keep_freed_memory = config.keep_freed_memory;
      options.scheduler.idle_threads = config.idle_threads;
      options.scheduler.progress_timeout = milliseconds(config.progress_timeout_seconds);
      options.stream_isolation = config.stream_isolation;
      options.gpus = config.gpus;
      options.client_code = tessera::client_code_allowed(config);
      cluster = std::make_unique<tessera::EmbeddedCluster>(options);
      // A restart from the same data_dir: every stream that had not finished runs on, and waits for its
      // client to attach again (a temporary directory is new, so it has none).
      std::vector<std::pair<std::uint64_t, caf::actor>> resumed;
      if (!config.data_dir.empty())
        resumed = cluster->resume_streams(
            [](std::uint64_t) { return std::make_shared<tessera::StreamSink>(1); },
            // Opened while the node ran client code: not run again once it runs none.
            [refusal = client_code_refusal(config)](
                const tessera::StreamSettings& settings) -> std::optional<std::string> {
              if (refusal.empty() || (settings.simulation != tessera::kClientClassSimulation &&
                                      settings.generator != tessera::kClientGenerator))
                return std::nullopt;
              return "it runs Python code a client sent, and " + refusal;
            });
      tessera::transport::ServerOptions server;
      server.listen = config.listen;
      server.name = config.name;
      server.max_message_bytes = static_cast<std::size_t>(config.limits.max_message_size);
      if (keys) {
        server.curve = keys;
        server.authorized_keys = config.authorized_keys;
        server.authorize_any = config.authorize_any;
      }
      const auto& limits = config.limits;
      try {
        gateway = std::make_unique<tessera::SchedulerGateway>(
            cluster->scheduler(), cluster->link(), std::move(server),
            tessera::GatewayOptions{
                .worker_timeout = milliseconds(config.heartbeat_timeout_seconds),
                .client_grace = milliseconds(config.client_grace_seconds),
                .open_stream =
                    [&cluster](const tessera::StreamSettings& settings,
                               std::shared_ptr<tessera::StreamSink> sink) {
                      return cluster->open_stream(settings, std::move(sink));
                    },
                .reopen_stream =
                    [&cluster](std::uint64_t id, const tessera::StreamInput& input,
                               std::shared_ptr<tessera::StreamSink> sink) {
                      return cluster->reopen_stream(id, input, std::move(sink));
                    },
                .store = [&cluster] { return cluster->store(); },
                .checkpoints = [&cluster] { return cluster->checkpoints(); },
                .stream_actor = [&cluster](std::uint64_t id) { return cluster->stream_actor(id); },
                .resumed = std::move(resumed),
                .limits = tessera::GatewayLimits{.max_slots_per_submission = static_cast<std::uint32_t>(
                                                     limits.max_slots_per_submission),
                                                 .max_slots_per_client = limits.max_slots_per_client,
                                                 .max_slots_per_node = limits.max_slots_per_node,
                                                 .max_histogram_bins = limits.max_histogram_bins,
                                                 .max_answer_bytes = limits.max_answer_bytes,
                                                 .max_worker_threads = limits.max_worker_threads,
                                                 .max_worker_memory = limits.max_worker_memory,
                                                 .max_streams_per_client = limits.max_streams_per_client,
                                                 .max_clients = limits.max_clients,
                                                 .client_code_refused = client_code_refusal(config)}});
      } catch (const zmq::error_t& e) {
        refuse_listen(config, "scheduler.listen", config.listen, e);
      }
      write_address_file(address_file, gateway->endpoint());
      std::cout << "tessera-node '" << config.name << "' listening on " << gateway->endpoint();
      if (with_workers)
        std::cout << " with " << config.workers << " workers x " << cluster->threads_per_worker()
                  << " threads";
      std::cout << std::endl;
      if (config.dashboard) {
        try {
          dashboard = std::make_unique<tessera::dashboard::DashboardServer>(
              tessera::cluster_dashboard_source(*cluster, config.name,
                                                [&gateway] { return std::uint64_t{gateway->clients()}; }),
              tessera::dashboard::DashboardOptions{
                  tessera::dashboard::parse_listen_address(config.dashboard_listen), config.dashboard_token});
        } catch (const tessera::dashboard::DashboardBindError& e) {
          throw tessera::ConfigError(tessera::config_key_location(config, "dashboard.listen") + " (\"" +
                                     tessera::config_excerpt(config.dashboard_listen) + "\"): " + e.what());
        }
        std::cout << "tessera-node '" << config.name << "' dashboard at " << dashboard->link() << std::endl;
      }
    }
    int signal = 0;
    {
      std::unique_lock lock(stop->mutex);
      stop->signalled.wait(lock, [&] { return stop->signal != 0; });
      signal = stop->signal;
    }
    std::cout << "tessera-node '" << config.name << "' stopping (signal " << signal << ")" << std::endl;
    workers.clear();
    dashboard.reset();  // before the gateway and cluster it reads
    gateway.reset();
    cluster.reset();
  } catch (const tessera::ConfigError& e) {
    std::cerr << "tessera-node: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tessera-node: " << e.what() << "\n";
    return 1;
  }
  std::lock_guard lock(stop->mutex);
  stop->finished = true;
  return 0;
}
