// Node configuration: the shipped configs are valid, and each kind of bad config is refused with one
// message naming the file, the line and the key.
#include <gtest/gtest.h>

#include <fstream>

#include "nodes/node_config.hpp"

namespace {

using tessera::ConfigError;
using tessera::parse_node_config;

std::string refusal(const std::string& text) {
  try {
    parse_node_config(text, "bad.toml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(NodeConfig, ShippedConfigsAreValid) {
  const std::filesystem::path dir = TESSERA_SOURCE_DIR "/config";
  auto local = tessera::load_node_config(dir / "local.toml");
  EXPECT_EQ(local.role, tessera::NodeRole::both);
  EXPECT_EQ(local.workers, 10u);
  EXPECT_EQ(local.threads_per_worker, 4u);
  EXPECT_EQ(local.memory_limit_bytes, 4ull << 30);
  auto scheduler = tessera::load_node_config(dir / "scheduler.toml");
  EXPECT_EQ(scheduler.role, tessera::NodeRole::scheduler);
  EXPECT_EQ(scheduler.listen, "tcp://127.0.0.1:7070");
  auto worker = tessera::load_node_config(dir / "worker.toml");
  EXPECT_EQ(worker.role, tessera::NodeRole::worker);
  EXPECT_EQ(worker.scheduler_address, "tcp://127.0.0.1:7070");
}

TEST(NodeConfig, UnknownKeyNamesFileLineAndKnownKeys) {
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"both\"\n\n[worker]\nthreads = 4\n"),
            "bad.toml:6: unknown key 'worker.threads' (known keys in [worker]: scheduler, listen, workers, "
            "threads_per_worker, memory_limit, data_dir)");
  EXPECT_EQ(refusal("[nod]\nname = \"a\"\n").find("bad.toml:1: unknown section 'nod'"), 0u)
      << refusal("[nod]\n");
}

TEST(NodeConfig, WrongTypeAndRangeNameTheKey) {
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"both\"\n[worker]\nworkers = \"ten\"\n"),
            "bad.toml:5: key 'worker.workers' must be an integer, got a string");
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"both\"\n[worker]\nworkers = 0\n"),
            "bad.toml:5: key 'worker.workers' must be between 1 and 1024, got 0");
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"boss\"\n"),
            "bad.toml:3: key 'node.role' must be one of scheduler, worker, both, got \"boss\"");
  EXPECT_EQ(
      refusal("[node]\nname = \"a\"\nrole = \"both\"\n[worker]\nmemory_limit = \"lots\"\n"),
      "bad.toml:5: key 'worker.memory_limit' must be a size such as \"4GiB\" or \"512MB\", got \"lots\"");
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"both\"\n[scheduler]\nheartbeat_timeout = -1\n"),
            "bad.toml:5: key 'scheduler.heartbeat_timeout' must be positive");
  EXPECT_EQ(refusal("node = 3\n"), "bad.toml:1: 'node' must be a table ([node])");
}

TEST(NodeConfig, MissingKeysAreNamed) {
  EXPECT_EQ(refusal("[node]\nrole = \"both\"\n"), "bad.toml: missing key 'node.name'");
  EXPECT_EQ(refusal("[node]\nname = \"w\"\nrole = \"worker\"\n"),
            "bad.toml: missing key 'worker.scheduler' (required when node.role = \"worker\")");
}

TEST(NodeConfig, UnreadablePluginIsRefused) {
  const auto why =
      refusal("[node]\nname = \"a\"\nrole = \"both\"\n[plugins]\npaths = [\"/nonexistent/libsim.so\"]\n");
  EXPECT_EQ(why.find("bad.toml:5: plugin '/nonexistent/libsim.so' (key 'plugins.paths') cannot be read"), 0u)
      << why;
}

TEST(NodeConfig, SyntaxErrorNamesTheLine) {
  const auto why = refusal("[node]\nname = \"a\"\nrole = both\n");
  EXPECT_EQ(why.find("bad.toml:3: "), 0u) << why;
}

TEST(NodeConfig, HelpDocumentsEveryKey) {
  const auto help = tessera::node_config_help();
  for (const char* key : {"[node]", "name =", "role =", "log_level =", "[scheduler]",
                          "listen =", "heartbeat_timeout =", "[worker]",
                          "scheduler =", "threads_per_worker =", "memory_limit =", "data_dir =", "[plugins]",
                          "paths =", "[security]", "curve =", "secret_key_file =", "authorized_keys ="})
    EXPECT_NE(help.find(key), std::string::npos) << key;
}

TEST(NodeConfig, UnreadableFileIsRefused) {
  EXPECT_THROW(tessera::load_node_config("/nonexistent/node.toml"), ConfigError);
}

}  // namespace
