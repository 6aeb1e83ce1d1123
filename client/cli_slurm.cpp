#include "cli_slurm.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "child_process.hpp"
#include "cli_options.hpp"
#include "node_templates.hpp"
#include "nodes/atomic_file.hpp"
#include "nodes/host_address.hpp"
#include "nodes/transport.hpp"
#include "tessera/client.hpp"

namespace tessera::cli {
namespace fs = std::filesystem;
using tessera::address_towards;
using tessera::default_host_address;
using tessera::endpoint_host;
using tessera::interface_address;
using tessera::write_file_atomically;
using Clock = std::chrono::steady_clock;

namespace {

// A failure that is the caller's (exit 2), not the cluster's (exit 1).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::chrono::milliseconds seconds(double s) {
  return std::chrono::milliseconds(static_cast<long long>(s * 1000));
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string short_hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  std::string host(name);
  return host.substr(0, host.find('.'));
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string() + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  std::string out = text.str();
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  return out;
}

const fs::perms kPrivate = fs::perms::owner_read | fs::perms::owner_write;

// The last lines of a node's log, for the message that says it failed.
std::string log_tail(const fs::path& log, std::size_t lines = 12) {
  std::ifstream in(log);
  if (!in) return "(no log at " + log.string() + ")";
  std::vector<std::string> kept;
  for (std::string line; std::getline(in, line);) {
    kept.push_back(excerpt(line, 300));
    if (kept.size() > lines) kept.erase(kept.begin());
  }
  std::string out;
  for (const auto& line : kept) out += "\n    " + line;
  return out.empty() ? " (its log " + log.string() + " is empty)" : out;
}

struct JobKeys {
  fs::path dir{};
  fs::path secret(const std::string& who) const { return dir / (who + ".key"); }
  fs::path public_file(const std::string& who) const { return dir / (who + ".pub"); }
  std::string public_key(const std::string& who) const { return read_text(public_file(who)); }
};

void make_job_keys(const JobKeys& keys) {
  for (const std::string who : {"scheduler", "worker", "client"}) {
    const auto pair = transport::generate_curve_keys();
    write_file_atomically(keys.secret(who), pair.secret_key + "\n", kPrivate);
    write_file_atomically(keys.public_file(who), pair.public_key + "\n",
                          fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  }
}

std::uint32_t workers_per_process(const toml::table& tmpl) {
  const auto workers = tmpl["worker"]["workers"].value<std::int64_t>();
  return workers && *workers > 0 ? static_cast<std::uint32_t>(*workers) : 1;
}

NodeSettings scheduler_settings(const JobKeys& keys, const std::string& listen) {
  return NodeSettings{.role = "scheduler",
                      .name = "scheduler",
                      .listen = listen,
                      .secret_key_file = keys.secret("scheduler"),
                      .public_key_file = keys.public_file("scheduler"),
                      .authorized_keys = {keys.public_key("worker"), keys.public_key("client")},
                      .default_data_dir = keys.dir / "scheduler-data"};
}

NodeSettings worker_settings(const JobKeys& keys, const std::string& name, const std::string& listen,
                             const std::string& scheduler) {
  return NodeSettings{.role = "worker",
                      .name = name,
                      .listen = listen,
                      .scheduler_address = scheduler,
                      .secret_key_file = keys.secret("worker"),
                      .public_key_file = keys.public_file("worker"),
                      .scheduler_public_key = keys.public_key("scheduler"),
                      .authorized_keys = {keys.public_key("worker")},
                      .data_dir_suffix = name};
}

std::string header(const SlurmOptions& options, const std::string& job, const std::string& what) {
  return "Written by `tessera slurm` for Slurm job " + job + " from the template " + options.config + ": " +
         what + ".";
}

// The launcher's stop signals, taken synchronously so a signal during any wait ends that wait cleanly.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&set_);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, signal);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  // The signal that came within `wait`, or 0.
  int take(std::chrono::milliseconds wait) {
    if (received_) return received_;
    timespec timeout{static_cast<time_t>(wait.count() / 1000),
                     static_cast<long>(wait.count() % 1000) * 1000000};
    const int signal = sigtimedwait(&set_, nullptr, &timeout);
    if (signal > 0) received_ = signal;
    return received_;
  }
  int received() const { return received_; }

 private:
  sigset_t set_;
  int received_ = 0;
};

class Stopped : public std::runtime_error {
 public:
  explicit Stopped(int signal)
      : std::runtime_error("stopped by signal " + std::to_string(signal)), signal(signal) {}
  int signal;
};

struct Step {
  std::string what{};
  fs::path log{};
  pid_t pid = -1;
  std::optional<int> exit{};
  bool running() {
    if (pid > 0 && !exit) exit = poll_exit(pid);
    return pid > 0 && !exit;
  }
};

// Polls `ready` until it answers true, a stop signal comes (Stopped), a step it depends on ends, or
// `deadline` passes (a runtime_error saying what did not come up).
void wait_for(const std::function<bool()>& ready, Step& step, Clock::time_point deadline,
              StopSignals& signals, const std::string& what, double timeout_seconds) {
  for (;;) {
    if (ready()) return;
    if (!step.running())
      throw std::runtime_error(step.what + " ended (exit " + std::to_string(*step.exit) + ") before " + what +
                               "; the end of its log " + step.log.string() + ":" + log_tail(step.log));
    if (Clock::now() >= deadline)
      throw std::runtime_error(what + " did not happen within --startup-timeout (" +
                               number_text(timeout_seconds) + " s); the end of " + step.log.string() + ":" +
                               log_tail(step.log));
    if (int signal = signals.take(std::chrono::milliseconds(100))) throw Stopped(signal);
  }
}

std::uint32_t registered_workers(const std::string& scheduler, const ConnectOptions& connect) {
  try {
    ConnectOptions quick = connect;
    quick.handshake_timeout = quick.request_timeout = quick.reconnect_timeout =
        std::chrono::milliseconds(2000);
    return Client(scheduler, quick).status().scheduler.workers;
  } catch (const std::exception&) {
    return 0;  // not answering yet: the caller's deadline decides
  }
}

std::string client_config_text(const SlurmOptions& options, const std::string& job,
                               const std::string& address, const JobKeys& keys) {
  toml::table root;
  root.insert_or_assign("client", toml::table{{"scheduler", address}});
  root.insert_or_assign("security", toml::table{{"public_key_file", "client.pub"},
                                                {"secret_key_file", "client.key"},
                                                {"scheduler_public_key", keys.public_key("scheduler")}});
  std::ostringstream out;
  out << "# "
      << header(options, job,
                "how a client reaches the job's scheduler (tessera --client-config, "
                "tessera.Client(config=...)); key paths are relative to this file")
      << "\n"
      << root << "\n";
  return out.str();
}

// tessera-node --check-config on a config derived from the template, so a template it refuses fails here,
// once, with its message, rather than on every node.
void check_template(const SlurmOptions& options, const toml::table& tmpl, const JobKeys& keys,
                    const std::string& node_program, const std::string& job) {
  const fs::path base = fs::path(options.config).parent_path();
  const std::vector<std::pair<std::string, NodeSettings>> checks = {
      {"check-scheduler.toml", scheduler_settings(keys, "tcp://127.0.0.1:0")},
      {"check-worker.toml", worker_settings(keys, "check", "tcp://127.0.0.1:0", "tcp://127.0.0.1:1")}};
  for (const auto& [file, settings] : checks) {
    const fs::path path = keys.dir / file;
    write_file_atomically(path,
                          derive_node_config(tmpl, base, settings, header(options, job, "a check of it")));
    try {
      capture_output({node_program, "--check-config", "--config", path.string()}, std::chrono::seconds(60));
    } catch (const SpawnError& e) {
      throw UsageError("the template " + options.config + " makes a " + settings.role +
                       " config that tessera-node refuses (" + path.string() + "): " + e.what());
    }
    fs::remove(path);
  }
}

}  // namespace

int slurm_launch(const SlurmOptions& options) {
  StopSignals signals;
  std::vector<Step*> started;
  Step scheduler_step, worker_step;
  pid_t command = -1;
  const auto stop_all = [&](const char* why) {
    if (!started.empty()) std::cerr << "tessera slurm: stopping the cluster (" << why << ")\n";
    if (command > 0) stop_child(command, seconds(options.stop_timeout_seconds));
    for (auto it = started.rbegin(); it != started.rend(); ++it)
      if ((*it)->running()) (*it)->exit = stop_child((*it)->pid, seconds(options.stop_timeout_seconds));
  };
  try {
    const std::string job = environment("SLURM_JOB_ID");
    if (job.empty())
      throw UsageError(
          "not inside a Slurm allocation (SLURM_JOB_ID is not set): run it in an sbatch script "
          "or under salloc");
    std::string nodelist = environment("SLURM_JOB_NODELIST");
    if (nodelist.empty()) nodelist = environment("SLURM_NODELIST");
    if (nodelist.empty())
      throw UsageError("SLURM_JOB_NODELIST is not set: which nodes the job has is unknown");
    std::vector<std::string> nodes;
    {
      std::istringstream names(
          capture_output({"scontrol", "show", "hostnames", nodelist}, std::chrono::seconds(30)));
      for (std::string name; names >> name;) nodes.push_back(name);
    }
    if (nodes.empty())
      throw UsageError("scontrol show hostnames gave no node for '" + excerpt(nodelist) + "'");

    const fs::path template_path = fs::absolute(options.config);
    const auto tmpl = load_template(template_path);
    const fs::path submit_dir = environment("SLURM_SUBMIT_DIR").empty()
                                    ? fs::current_path()
                                    : fs::path(environment("SLURM_SUBMIT_DIR"));
    const JobKeys keys{
        fs::absolute(options.job_dir.empty() ? submit_dir / ("tessera-" + job) : fs::path(options.job_dir))};
    fs::create_directories(keys.dir);
    fs::permissions(keys.dir, fs::perms::owner_all);  // it holds the job's secret keys
    fs::remove(keys.dir / "scheduler.address");       // a requeued job's old address is not this one's
    make_job_keys(keys);
    const std::string self = own_directory() + "/tessera";
    const std::string node_program = own_directory() + "/tessera-node";
    SlurmOptions named = options;
    named.config = template_path.string();
    check_template(named, tmpl, keys, node_program, job);

    std::vector<std::string> step_arguments = {
        self,        "slurm-step",      "--config",          template_path.string(),
        "--job-dir", keys.dir.string(), "--startup-timeout", number_text(options.startup_timeout_seconds)};
    if (!options.network_interface.empty())
      step_arguments.insert(step_arguments.end(), {"--interface", options.network_interface});
    const auto deadline = Clock::now() + seconds(options.startup_timeout_seconds);

    scheduler_step = Step{"the scheduler (on " + nodes.front() + ")", keys.dir / "scheduler.log"};
    std::vector<std::string> srun = {"srun",
                                     "--nodes=1",
                                     "--ntasks=1",
                                     "--nodelist=" + nodes.front(),
                                     "--overlap",
                                     "--input=none",
                                     "--output=" + scheduler_step.log.string(),
                                     "--job-name=tessera-scheduler"};
    srun.insert(srun.end(), step_arguments.begin(), step_arguments.end());
    srun.insert(srun.end(), {"--role", "scheduler", "--port", std::to_string(options.port)});
    scheduler_step.pid = spawn(srun);
    started.push_back(&scheduler_step);
    const fs::path internal_address = keys.dir / "scheduler.address";
    wait_for([&] { return fs::exists(internal_address); }, scheduler_step, deadline, signals,
             "the scheduler listening", options.startup_timeout_seconds);
    const std::string address = read_text(internal_address);
    write_file_atomically(keys.dir / "client.toml", client_config_text(named, job, address, keys));
    const fs::path address_file =
        options.address_file.empty() ? internal_address : fs::absolute(options.address_file);
    if (address_file != internal_address) write_file_atomically(address_file, address + "\n");

    worker_step = Step{"the workers' step", keys.dir / ("worker-" + nodes.front() + ".log")};
    const std::string count = std::to_string(nodes.size());
    srun = {"srun",
            "--nodes=" + count,
            "--ntasks=" + count,
            "--ntasks-per-node=1",
            "--overlap",
            "--kill-on-bad-exit=0",
            "--input=none",
            "--output=" + (keys.dir / "worker-%N.log").string(),
            "--job-name=tessera-workers"};
    srun.insert(srun.end(), step_arguments.begin(), step_arguments.end());
    srun.insert(srun.end(), {"--role", "worker"});
    worker_step.pid = spawn(srun);
    started.push_back(&worker_step);
    // The client config just written, read as every client reads it.
    KeyOptions client_keys;
    client_keys.client_config = (keys.dir / "client.toml").string();
    const ConnectOptions connect = client_keys.connect_options("tessera-slurm");
    const std::uint32_t expected = static_cast<std::uint32_t>(nodes.size()) * workers_per_process(tmpl);
    wait_for([&] { return registered_workers(address, connect) >= expected; }, worker_step, deadline, signals,
             std::to_string(expected) + " workers joining the scheduler", options.startup_timeout_seconds);
    std::cout << "tessera slurm: job " << job << ": scheduler " << address << " on " << nodes.front() << ", "
              << expected << " workers on " << nodes.size() << " node" << (nodes.size() == 1 ? "" : "s")
              << "; client config " << (keys.dir / "client.toml").string() << ", address in "
              << address_file.string() << std::endl;

    if (!options.command.empty())
      command = spawn(options.command, {{"TESSERA_SCHEDULER", address},
                                        {"TESSERA_CLIENT_CONFIG", (keys.dir / "client.toml").string()},
                                        {"TESSERA_JOB_DIR", keys.dir.string()}});
    bool workers_gone_told = false;
    for (;;) {
      if (command > 0)
        if (auto status = poll_exit(command)) {
          command = -1;
          stop_all("the command ended");
          return *status;
        }
      if (!scheduler_step.running()) {
        std::cerr << "tessera slurm: " << scheduler_step.what << " ended (exit " << *scheduler_step.exit
                  << "); the end of its log:" << log_tail(scheduler_step.log) << "\n";
        stop_all("the scheduler ended");
        return 1;
      }
      if (!worker_step.running() && !workers_gone_told) {
        workers_gone_told = true;
        std::cerr << "tessera slurm: " << worker_step.what << " ended (exit " << *worker_step.exit
                  << "): no workers are left; logs in " << keys.dir.string() << "\n";
      }
      if (int signal = signals.take(std::chrono::milliseconds(200))) throw Stopped(signal);
    }
  } catch (const Stopped& stopped) {
    stop_all(stopped.signal == SIGTERM ? "SIGTERM: the job was cancelled or reached its time limit"
                                       : "a stop signal");
    return options.command.empty() ? 0 : 128 + stopped.signal;
  } catch (const UsageError& e) {
    stop_all("an error");
    std::cerr << "tessera slurm: " << bounded_message(e.what(), 2000) << "\n";
    return 2;
  } catch (const TemplateError& e) {
    stop_all("an error");
    std::cerr << "tessera slurm: --config: " << bounded_message(e.what(), 2000) << "\n";
    return 2;
  } catch (const std::exception& e) {
    stop_all("an error");
    std::cerr << "tessera slurm: " << bounded_message(e.what(), 4000) << "\n";
    return 1;
  }
}

int slurm_step(const SlurmStepOptions& options) {
  try {
    const JobKeys keys{fs::absolute(options.job_dir)};
    const fs::path template_path = fs::absolute(options.config);
    const auto tmpl = load_template(template_path);
    const std::string job = environment("SLURM_JOB_ID");
    const std::string program = own_directory() + "/tessera-node";
    SlurmOptions named{.config = template_path.string()};
    const fs::path address_file = keys.dir / "scheduler.address";
    fs::path config_file;
    std::vector<std::string> argv = {program, "--config"};
    if (options.role == "scheduler") {
      const std::string host = options.network_interface.empty()
                                   ? default_host_address()
                                   : interface_address(options.network_interface);
      const std::string listen = "tcp://" + host + ":" + std::to_string(options.port);
      config_file = keys.dir / "scheduler.toml";
      write_file_atomically(
          config_file, derive_node_config(tmpl, template_path.parent_path(), scheduler_settings(keys, listen),
                                          header(named, job, "the scheduler's config")));
      argv.insert(argv.end(), {config_file.string(), "--address-file", address_file.string()});
    } else {
      const auto deadline = Clock::now() + seconds(options.startup_timeout_seconds);
      while (!fs::exists(address_file)) {
        if (Clock::now() >= deadline)
          throw std::runtime_error("no scheduler address in " + address_file.string() + " after " +
                                   number_text(options.startup_timeout_seconds) + " s");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      const std::string scheduler = read_text(address_file);
      const auto scheduler_host = endpoint_host(scheduler);
      if (!scheduler_host) throw std::runtime_error(address_file.string() + " holds no tcp:// address");
      const std::string host = options.network_interface.empty()
                                   ? address_towards(*scheduler_host)
                                   : interface_address(options.network_interface);
      std::string name = short_hostname();
      if (const std::string local = environment("SLURM_LOCALID"); !local.empty() && local != "0")
        name += "-" + local;
      config_file = keys.dir / ("worker-" + name + ".toml");
      write_file_atomically(config_file,
                            derive_node_config(tmpl, template_path.parent_path(),
                                               worker_settings(keys, name, "tcp://" + host + ":0", scheduler),
                                               header(named, job, "the config of worker " + name)));
      argv.push_back(config_file.string());
    }
    std::vector<char*> args;
    for (auto& arg : argv) args.push_back(arg.data());
    args.push_back(nullptr);
    execv(program.c_str(), args.data());
    throw std::runtime_error("cannot start " + program + ": " + std::strerror(errno));
  } catch (const std::exception& e) {
    std::cerr << "tessera slurm-step (" << options.role << " on " << short_hostname()
              << "): " << bounded_message(e.what(), 2000) << "\n";
    return 1;
  }
}

}  // namespace tessera::cli
