#include "nodes/node_config.hpp"

#include <toml++/toml.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace tessera {
namespace {

struct Context {
  std::string_view source;
  std::filesystem::path base_dir;
};

[[noreturn]] void fail(const Context& cx, const toml::source_region& where, const std::string& message) {
  // A key that is missing has no line: the message names the file alone.
  const std::string line = where.begin.line ? ":" + std::to_string(where.begin.line) : "";
  throw ConfigError(std::string(cx.source) + line + ": " + message);
}

std::string type_of(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

std::string read_string(const toml::node& node, const Context& cx, std::string_view key) {
  if (!node.is_string())
    fail(cx, node.source(), "key '" + std::string(key) + "' must be a string, got " + type_of(node));
  return *node.value<std::string>();
}

std::int64_t read_integer(const toml::node& node, const Context& cx, std::string_view key, std::int64_t min,
                          std::int64_t max) {
  if (!node.is_integer())
    fail(cx, node.source(), "key '" + std::string(key) + "' must be an integer, got " + type_of(node));
  const std::int64_t v = *node.value<std::int64_t>();
  if (v < min || v > max)
    fail(cx, node.source(),
         "key '" + std::string(key) + "' must be between " + std::to_string(min) + " and " +
             std::to_string(max) + ", got " + std::to_string(v));
  return v;
}

double read_seconds(const toml::node& node, const Context& cx, std::string_view key) {
  if (!node.is_number())
    fail(cx, node.source(),
         "key '" + std::string(key) + "' must be a number of seconds, got " + type_of(node));
  const double v = *node.value<double>();
  if (!(v > 0)) fail(cx, node.source(), "key '" + std::string(key) + "' must be positive");
  return v;
}

bool read_bool(const toml::node& node, const Context& cx, std::string_view key) {
  if (!node.is_boolean())
    fail(cx, node.source(), "key '" + std::string(key) + "' must be true or false, got " + type_of(node));
  return *node.value<bool>();
}

std::vector<std::string> read_strings(const toml::node& node, const Context& cx, std::string_view key) {
  const toml::array* array = node.as_array();
  if (!array)
    fail(cx, node.source(),
         "key '" + std::string(key) + "' must be an array of strings, got " + type_of(node));
  std::vector<std::string> out;
  for (const auto& item : *array) out.push_back(read_string(item, cx, std::string(key) + "[]"));
  return out;
}

// "4GiB", "512 MiB", "100MB" or a plain number of bytes.
std::uint64_t read_size(const toml::node& node, const Context& cx, std::string_view key) {
  if (node.is_integer()) return static_cast<std::uint64_t>(read_integer(node, cx, key, 0, INT64_MAX));
  const std::string text = read_string(node, cx, key);
  std::size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  unit.erase(0, unit.find_first_not_of(' '));
  static const std::map<std::string, double> units{
      {"", 1},      {"B", 1},        {"KB", 1e3},        {"MB", 1e6},           {"GB", 1e9},
      {"TB", 1e12}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  auto it = units.find(unit);
  if (used == 0 || it == units.end() || number < 0)
    fail(cx, node.source(),
         "key '" + std::string(key) + "' must be a size such as \"4GiB\" or \"512MB\", got \"" + text + "\"");
  return static_cast<std::uint64_t>(number * it->second);
}

template <class E>
E read_choice(const toml::node& node, const Context& cx, std::string_view key,
              const std::vector<std::pair<std::string, E>>& choices) {
  const std::string text = read_string(node, cx, key);
  std::string names;
  for (const auto& [name, value] : choices) {
    if (name == text) return value;
    names += (names.empty() ? "" : ", ") + name;
  }
  fail(cx, node.source(),
       "key '" + std::string(key) + "' must be one of " + names + ", got \"" + text + "\"");
}

struct KeySpec {
  std::string_view path;
  std::string_view type;
  std::string_view default_text;
  std::string_view doc;
  std::function<void(const toml::node&, NodeConfig&, const Context&, std::string_view key)> apply;
};

// An apply function that stores what `read` makes of the node in one field.
template <class T, class Read>
auto store(T NodeConfig::*field, Read read) {
  return [field, read](const toml::node& n, NodeConfig& c, const Context& cx, std::string_view key) {
    c.*field = static_cast<T>(read(n, cx, key));
  };
}

// A reader of integers in [min, max].
auto bounded(std::int64_t min, std::int64_t max) {
  return [min, max](const toml::node& n, const Context& cx, std::string_view key) {
    return read_integer(n, cx, key, min, max);
  };
}

const std::vector<KeySpec>& key_specs() {
  static const std::vector<KeySpec> specs{
      {"node.name", "string", "(required)", "this node's name, shown by `tessera workers`",
       store(&NodeConfig::name, read_string)},
      {"node.role", "\"scheduler\" | \"worker\" | \"both\"", "(required)",
       "scheduler only, workers only, or both in one process (the embedded default)",
       [](auto& n, auto& c, auto& cx, std::string_view) {
         c.role = read_choice<NodeRole>(
             n, cx, "node.role",
             {{"scheduler", NodeRole::scheduler}, {"worker", NodeRole::worker}, {"both", NodeRole::both}});
       }},
      {"node.log_level", "\"error\" | \"warning\" | \"info\" | \"debug\"", "\"info\"",
       "what the node logs to stderr",
       [](auto& n, auto& c, auto& cx, std::string_view) {
         c.log_level = read_choice<LogLevel>(n, cx, "node.log_level",
                                             {{"error", LogLevel::error},
                                              {"warning", LogLevel::warning},
                                              {"info", LogLevel::info},
                                              {"debug", LogLevel::debug}});
       }},
      {"scheduler.listen", "string (ZeroMQ endpoint)", "\"tcp://127.0.0.1:7070\"",
       "where the scheduler accepts clients and workers; binds 127.0.0.1 unless told otherwise",
       store(&NodeConfig::listen, read_string)},
      {"scheduler.heartbeat_interval", "seconds", "0.5", "how often workers report they are alive",
       store(&NodeConfig::heartbeat_interval_seconds, read_seconds)},
      {"scheduler.heartbeat_timeout", "seconds", "3.0",
       "a worker silent this long is declared dead; its tasks are recomputed elsewhere",
       store(&NodeConfig::heartbeat_timeout_seconds, read_seconds)},
      {"scheduler.client_grace", "seconds", "30.0", "how long a disconnected client's futures are kept",
       store(&NodeConfig::client_grace_seconds, read_seconds)},
      {"worker.scheduler", "string (ZeroMQ endpoint)", "(required for role = \"worker\")",
       "the scheduler to join", store(&NodeConfig::scheduler_address, read_string)},
      {"worker.listen", "string (ZeroMQ endpoint)", "\"tcp://127.0.0.1:0\"",
       "where other workers fetch this node's results (port 0: any free port)",
       store(&NodeConfig::worker_listen, read_string)},
      {"worker.workers", "integer 1..1024", "1",
       "worker actors in this process, each with its own compute threads",
       store(&NodeConfig::workers, bounded(1, 1024))},
      {"worker.threads_per_worker", "integer 0..1024", "0 (the cores)", "compute threads per worker",
       store(&NodeConfig::threads_per_worker, bounded(0, 1024))},
      {"worker.memory_limit", "size (\"4GiB\", \"512MB\", bytes)", "0 (no limit)",
       "results beyond this are spilled to data_dir", store(&NodeConfig::memory_limit_bytes, read_size)},
      {"worker.data_dir", "string (path)", "\"\" (a temporary directory, removed at exit)",
       "where this node keeps its RocksDB store: stream results (and later spilled chunks, checkpoints);"
       " relative to the config file",
       [](auto& n, auto& c, auto& cx, std::string_view key) {
         c.data_dir = read_string(n, cx, key);
         if (!c.data_dir.empty() && std::filesystem::path(c.data_dir).is_relative())
           c.data_dir = (cx.base_dir / c.data_dir).lexically_normal().string();
       }},
      {"plugins.paths", "array of strings (paths)", "[]",
       "shared libraries of task functions and simulations, loaded at start (relative to the config file)",
       [](auto& n, auto& c, auto& cx, std::string_view) {
         c.plugins.clear();
         for (auto& path : read_strings(n, cx, "plugins.paths")) {
           std::filesystem::path p = path;
           if (p.is_relative()) p = cx.base_dir / p;
           std::ifstream probe(p, std::ios::binary);
           if (!probe)
             fail(cx, n.source(),
                  "plugin '" + path + "' (key 'plugins.paths') cannot be read: " + p.string());
           c.plugins.push_back(p.string());
         }
       }},
      {"security.curve", "boolean", "false", "CURVE authentication and encryption on every connection",
       store(&NodeConfig::curve, read_bool)},
      {"security.secret_key_file", "string (path)", "\"\"",
       "this node's CURVE secret key (made by `tessera keygen`)",
       store(&NodeConfig::secret_key_file, read_string)},
      {"security.public_key_file", "string (path)", "\"\"", "this node's CURVE public key",
       store(&NodeConfig::public_key_file, read_string)},
      {"security.scheduler_public_key", "string (Z85, 40 characters)", "\"\"",
       "the scheduler's public key (workers, clients)",
       store(&NodeConfig::scheduler_public_key, read_string)},
      {"security.authorized_keys", "array of strings (Z85)", "[]", "public keys the scheduler accepts",
       store(&NodeConfig::authorized_keys, read_strings)},
  };
  return specs;
}

}  // namespace

NodeConfig parse_node_config(std::string_view text, std::string_view source,
                             const std::filesystem::path& base_dir) {
  const Context cx{source, base_dir};
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw ConfigError(std::string(source) + ":" + std::to_string(e.source().begin.line) + ": " +
                      std::string(e.description()));
  }
  std::map<std::string, const KeySpec*, std::less<>> by_path;
  std::map<std::string, std::string, std::less<>> sections;  // section -> its known keys, for messages
  for (const auto& spec : key_specs()) {
    by_path.emplace(std::string(spec.path), &spec);
    const auto dot = spec.path.find('.');
    auto& known = sections[std::string(spec.path.substr(0, dot))];
    known += (known.empty() ? "" : ", ") + std::string(spec.path.substr(dot + 1));
  }
  NodeConfig config;
  bool has_name = false, has_role = false, has_scheduler = false;
  for (auto&& [section_key, section_node] : root) {
    const std::string section(section_key.str());
    auto known = sections.find(section);
    if (known == sections.end()) {
      std::string names;
      for (const auto& [name, keys] : sections) names += (names.empty() ? "" : ", ") + name;
      fail(cx, section_key.source(), "unknown section '" + section + "' (known: " + names + ")");
    }
    const toml::table* table = section_node.as_table();
    if (!table) fail(cx, section_node.source(), "'" + section + "' must be a table ([" + section + "])");
    for (auto&& [key, node] : *table) {
      const std::string path = section + "." + std::string(key.str());
      auto spec = by_path.find(path);
      if (spec == by_path.end())
        fail(cx, key.source(),
             "unknown key '" + path + "' (known keys in [" + section + "]: " + known->second + ")");
      spec->second->apply(node, config, cx, path);
      has_name |= path == "node.name";
      has_role |= path == "node.role";
      has_scheduler |= path == "worker.scheduler";
    }
  }
  const toml::source_region top{};
  if (!has_name) fail(cx, top, "missing key 'node.name'");
  if (!has_role) fail(cx, top, "missing key 'node.role'");
  if (config.role == NodeRole::worker && !has_scheduler)
    fail(cx, top, "missing key 'worker.scheduler' (required when node.role = \"worker\")");
  return config;
}

NodeConfig load_node_config(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file.string() + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_node_config(text.str(), file.string(), file.parent_path().empty() ? "." : file.parent_path());
}

std::string node_config_help() {
  std::ostringstream out;
  out << "Configuration keys (TOML; unknown keys are an error):\n";
  std::string_view section;
  for (const auto& spec : key_specs()) {
    const auto dot = spec.path.find('.');
    if (spec.path.substr(0, dot) != section) {
      section = spec.path.substr(0, dot);
      out << "\n[" << section << "]\n";
    }
    out << "  " << spec.path.substr(dot + 1) << " = " << spec.type << "   default: " << spec.default_text
        << "\n      " << spec.doc << "\n";
  }
  return out.str();
}

}  // namespace tessera
