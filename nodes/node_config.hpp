// NodeConfig: what a tessera-node process reads from its TOML file. Every key is declared once, with
// its type, default, range and documentation (node_config_help() prints them); anything else in the file
// — an unknown key, a wrong type, a value out of its range, a missing required key, an unreadable plugin
// or key file, an insecure combination — is a ConfigError naming the file, the line and the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "graph/program_spec.hpp"
#include "graph/stream_record.hpp"
#include "scheduling/scheduler_options.hpp"

namespace tessera {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class NodeRole { scheduler, worker, both };

// A program declared as a simulation ([simulations.NAME]; nodes/program_config.hpp reads it).
struct DeclaredProgram {
  std::string name;
  ProgramSpec spec;
  std::uint32_t line = 0;  // where its table starts
};
enum class LogLevel { error, warning, info, debug };

// The budgets a node grants its peers ([limits]); the gateway, the transport and the worker directory
// refuse, naming the limit, what exceeds them. Ranges are in node_config_help().
struct NodeLimits {
  std::uint64_t max_slots_per_submission = std::uint64_t{1} << 20;  // limits.max_slots_per_submission
  std::uint64_t max_slots_per_client = std::uint64_t{1} << 22;      // limits.max_slots_per_client
  std::uint64_t max_slots_per_node = std::uint64_t{1} << 24;        // limits.max_slots_per_node
  std::uint32_t max_histogram_bins = 10000;                         // limits.max_histogram_bins
  std::uint64_t max_answer_bytes = std::uint64_t{64} << 20;         // limits.max_answer_bytes
  std::uint64_t max_message_size = std::uint64_t{64} << 20;   // limits.max_message_size (ZMQ_MAXMSGSIZE)
  std::uint32_t max_worker_threads = 1024;                    // limits.max_worker_threads
  std::uint64_t max_worker_memory = std::uint64_t{16} << 40;  // limits.max_worker_memory
  std::uint32_t max_streams_per_client = 256;                 // limits.max_streams_per_client
  std::uint32_t max_clients = 4096;                           // limits.max_clients
};

// The most compute threads one node may start: worker.workers x worker.threads_per_worker (a
// threads_per_worker of 0 counts as this machine's cores). Past it thread creation fails and aborts.
inline constexpr std::uint64_t kMaxComputeThreadsPerNode = 4096;

struct NodeConfig;
// security.allow_client_code as it applies: its value, or when unset whether scheduler.listen is loopback.
bool client_code_allowed(const NodeConfig& config);

struct NodeConfig {
  std::string name;                                 // node.name: shown by `tessera workers`
  NodeRole role = NodeRole::both;                   // node.role
  LogLevel log_level = LogLevel::info;              // node.log_level
  double shutdown_timeout_seconds = 10.0;           // node.shutdown_timeout
  std::string listen = "tcp://127.0.0.1:7070";      // scheduler.listen
  double heartbeat_interval_seconds = 0.5;          // scheduler.heartbeat_interval
  double heartbeat_timeout_seconds = 3.0;           // scheduler.heartbeat_timeout
  double client_grace_seconds = 30.0;               // scheduler.client_grace
  double progress_timeout_seconds = 300.0;          // scheduler.progress_timeout (0: off)
  Isolation stream_isolation = Isolation::thread;   // streams.isolation
  IdleThreads idle_threads = IdleThreads::wait;     // scheduler.idle_threads
  std::string scheduler_address;                    // worker.scheduler (required for role = "worker")
  std::string worker_listen = "tcp://127.0.0.1:0";  // worker.listen: peers fetch results here
  bool same_host_ipc = true;                        // worker.same_host_ipc: a socket file for same-host peers
  std::uint32_t workers = 1;                        // worker.workers
  std::uint32_t threads_per_worker = 0;             // worker.threads_per_worker (0: the cores)
  std::vector<int> gpus;                            // worker.gpus (empty: the devices found)
  std::uint64_t memory_limit_bytes = 0;             // worker.memory_limit (0: no limit)
  double memory_target_fraction = 0.6;              // worker.memory_target_fraction
  double memory_pause_fraction = 0.8;               // worker.memory_pause_fraction
  std::uint64_t keep_freed_memory = 1ull << 30;     // worker.keep_freed_memory
  std::string data_dir;                             // node.data_dir or worker.data_dir (absolute once parsed)
  std::string node_data_dir;                        // node.data_dir as given (absolute once parsed)
  std::vector<std::string> plugins;                 // plugins.paths (absolute once parsed)
  std::vector<std::string> python_modules;          // plugins.python (files absolute once parsed)
  bool curve = false;                               // security.curve
  std::string secret_key_file;                      // security.secret_key_file (absolute once parsed)
  std::string public_key_file;                      // security.public_key_file (absolute once parsed)
  std::string scheduler_public_key;                 // security.scheduler_public_key
  std::vector<std::string> authorized_keys;         // security.authorized_keys (+ authorized_keys_file's)
  std::vector<std::string> file_authorized_keys;    // security.authorized_keys_file's keys, while parsing
  std::string scheduler_public_key_from_file;       // security.scheduler_public_key_file's key
  bool allow_insecure = false;                      // security.allow_insecure
  bool authorize_any = false;                       // security.authorize_any
  std::optional<bool> allow_client_code;            // security.allow_client_code (unset: loopback decides)
  NodeLimits limits;                                // [limits]
  std::vector<DeclaredProgram> programs;            // [simulations.NAME]: programs run as simulations
  bool dashboard = false;                           // a [dashboard] section is present: serve it
  std::string dashboard_listen =
      "127.0.0.1:8790";              // dashboard.listen ("host:port"): not Dask's 8787 nor Ray's 8265
  std::string dashboard_token_file;  // dashboard.token_file (absolute once parsed)

  // Filled by the parser, not keys of their own:
  std::string curve_public_key, curve_secret_key;  // with curve: the key files' contents (Z85, checked)
  std::string dashboard_token;                     // with token_file: its first word (checked)
  std::vector<std::string> warnings;               // to print at every start (allow_insecure, authorize_any)
  std::string source;                              // the file, for messages
  std::map<std::string, std::uint32_t, std::less<>> key_lines;  // "section.key" -> its line in the file
};

// Parses and validates; `source` names the file in messages. Relative plugin, data_dir and key paths
// resolve against `base_dir`, and the key files are read (with security.curve on).
NodeConfig parse_node_config(std::string_view text, std::string_view source,
                             const std::filesystem::path& base_dir = std::filesystem::current_path());
NodeConfig load_node_config(const std::filesystem::path& file);

// "FILE:LINE: key 'KEY'" for a key set in the file, "FILE: key 'KEY'" for one left at its default: how
// a message about a key's value begins (also for failures found after parsing, such as a bind).
std::string config_key_location(const NodeConfig& config, std::string_view key);

// Creates worker.data_dir (when set) and writes and removes a probe file in it, so that a directory
// under a regular file, under /proc or not writable is refused at start: a ConfigError naming the key.
void check_data_dir(const NodeConfig& config);

// At most `limit` characters of `text`, control characters escaped, "..." when cut: what a message may
// echo of a value it was given.
std::string config_excerpt(std::string_view text, std::size_t limit = 80);

// Every key with its type, default, range and meaning, for `tessera-node --help`.
std::string node_config_help();

}  // namespace tessera
