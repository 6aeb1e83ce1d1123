// NodeConfig: what a tessera-node process reads from its TOML file. Every key is declared once, with
// its type, default and documentation (node_config_help() prints them); anything else in the file — an
// unknown key, a wrong type, a missing required key, an unreadable plugin — is a ConfigError naming the
// file, the line and the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class NodeRole { scheduler, worker, both };
enum class LogLevel { error, warning, info, debug };

struct NodeConfig {
  std::string name;                                 // node.name: shown by `tessera workers`
  NodeRole role = NodeRole::both;                   // node.role
  LogLevel log_level = LogLevel::info;              // node.log_level
  std::string listen = "tcp://127.0.0.1:7070";      // scheduler.listen
  double heartbeat_interval_seconds = 0.5;          // scheduler.heartbeat_interval
  double heartbeat_timeout_seconds = 3.0;           // scheduler.heartbeat_timeout
  double client_grace_seconds = 30.0;               // scheduler.client_grace
  std::string scheduler_address;                    // worker.scheduler (required for role = "worker")
  std::string worker_listen = "tcp://127.0.0.1:0";  // worker.listen: peers fetch results here
  std::uint32_t workers = 1;                        // worker.workers
  std::uint32_t threads_per_worker = 0;             // worker.threads_per_worker (0: the cores)
  std::uint64_t memory_limit_bytes = 0;             // worker.memory_limit (0: no limit)
  std::string data_dir;                             // worker.data_dir
  std::vector<std::string> plugins;                 // plugins.paths
  bool curve = false;                               // security.curve
  std::string secret_key_file;                      // security.secret_key_file
  std::string public_key_file;                      // security.public_key_file
  std::string scheduler_public_key;                 // security.scheduler_public_key
  std::vector<std::string> authorized_keys;         // security.authorized_keys
};

// Parses and validates; `source` names the file in messages. Relative plugin and key paths resolve
// against `base_dir`.
NodeConfig parse_node_config(std::string_view text, std::string_view source,
                             const std::filesystem::path& base_dir = std::filesystem::current_path());
NodeConfig load_node_config(const std::filesystem::path& file);

// Every key with its type, default and meaning, for `tessera-node --help`.
std::string node_config_help();

}  // namespace tessera
