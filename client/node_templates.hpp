// A launcher's node configs from one template TOML (tessera slurm): the template says what the user
// chooses (plugins, threads, memory, limits, timeouts); the launcher fills in what only it knows (each
// node's role, name and address, the job's CURVE keys) and writes one config per node for tessera-node.
#pragma once

#include <toml++/toml.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::cli {

class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NodeSettings {
  std::string role{};               // "scheduler" or "worker"
  std::string name{};               // node.name
  std::string listen{};             // scheduler.listen (scheduler) or worker.listen (worker)
  std::string scheduler_address{};  // worker.scheduler (worker)
  std::filesystem::path secret_key_file{}, public_key_file{};
  std::string scheduler_public_key{};          // a worker's security.scheduler_public_key
  std::vector<std::string> authorized_keys{};  // security.authorized_keys
  std::filesystem::path default_data_dir{};    // the scheduler's store when the template names none
  std::string data_dir_suffix{};  // a worker's: appended to the template's worker.data_dir, so workers on
                                  // one shared file system never open the same store
};

// The template, parsed; a TemplateError names the file and line. It must be a table of tables.
toml::table load_template(const std::filesystem::path& file);

// The node's config as TOML text. Paths the template gives relative to itself (plugins.paths,
// node.data_dir, worker.data_dir, dashboard.token_file) become absolute, since the result is written
// elsewhere; the template's [security] is replaced by the job's keys; a worker drops [dashboard] and
// node.data_dir (that is the scheduler's store).
std::string derive_node_config(const toml::table& tmpl, const std::filesystem::path& template_dir,
                               const NodeSettings& settings, const std::string& header_comment);

}  // namespace tessera::cli
