// Node configuration: the shipped configs are valid, and each kind of bad config is refused with one
// message naming the file, the line and the key.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "nodes/node_config.hpp"
#include "nodes/transport.hpp"
#include "support/scratch_dir.hpp"

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

std::string refusal_of_file(const std::filesystem::path& file) {
  try {
    tessera::load_node_config(file);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

// Lines 1-3 of most configs below.
const std::string kBoth = "[node]\nname = \"a\"\nrole = \"both\"\n";

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
  EXPECT_EQ(tessera::load_node_config(dir / "examples.toml").role, tessera::NodeRole::both);
  // The shipped configs listen on loopback without CURVE: no warning at start.
  for (const char* file : {"local.toml", "scheduler.toml", "worker.toml", "examples.toml"})
    EXPECT_TRUE(tessera::load_node_config(dir / file).warnings.empty()) << file;
}

TEST(NodeConfig, UnknownKeyNamesFileLineAndKnownKeys) {
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"both\"\n\n[worker]\nthreads = 4\n"),
            "bad.toml:6: unknown key 'worker.threads' (known keys in [worker]: scheduler, listen, "
            "same_host_ipc, workers, "
            "threads_per_worker, gpus, memory_limit, keep_freed_memory, memory_target_fraction, "
            "memory_pause_fraction, data_dir)");
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
            "bad.toml:5: key 'scheduler.heartbeat_timeout' must be between 0.05 and 86400 seconds, got -1");
  EXPECT_EQ(refusal("node = 3\n"), "bad.toml:1: 'node' must be a table ([node])");
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"both\"\n[streams]\nisolation = \"fork\"\n"),
            "bad.toml:5: key 'streams.isolation' must be one of thread, process, got \"fork\"");
}

TEST(NodeConfig, StreamsIsolationIsTheDefaultItNames) {
  const auto config = tessera::parse_node_config(
      "[node]\nname = \"a\"\nrole = \"both\"\n[streams]\nisolation = \"process\"\n", "good.toml");
  EXPECT_EQ(config.stream_isolation, tessera::Isolation::process);
  EXPECT_EQ(
      tessera::parse_node_config("[node]\nname = \"a\"\nrole = \"both\"\n", "good.toml").stream_isolation,
      tessera::Isolation::thread);
}

TEST(NodeConfig, IdleThreadsAndKeptFreedMemoryAreReadAndCheckedByKey) {
  const auto defaults = tessera::parse_node_config(kBoth, "good.toml");
  EXPECT_EQ(defaults.idle_threads, tessera::IdleThreads::wait);
  EXPECT_EQ(defaults.keep_freed_memory, 1ull << 30);
  const auto config = tessera::parse_node_config(
      kBoth + "[scheduler]\nidle_threads = \"poll\"\n[worker]\nkeep_freed_memory = \"256MiB\"\n",
      "good.toml");
  EXPECT_EQ(config.idle_threads, tessera::IdleThreads::poll);
  EXPECT_EQ(config.keep_freed_memory, 256ull << 20);
  EXPECT_EQ(
      tessera::parse_node_config(kBoth + "[worker]\nkeep_freed_memory = 0\n", "good.toml").keep_freed_memory,
      0u);
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nidle_threads = \"spin\"\n"),
            "bad.toml:5: key 'scheduler.idle_threads' must be one of wait, poll, got \"spin\"");
  for (const char* bad : {"\"2GiB\"", "-1", "inf", "nan", "\"lots\""}) {
    const auto why = refusal(kBoth + "[worker]\nkeep_freed_memory = " + bad + "\n");
    EXPECT_EQ(why.find("bad.toml:5: key 'worker.keep_freed_memory'"), 0u) << why;
  }
}

TEST(NodeConfig, GpusAreDistinctOrdinalsAndTheirErrorsNameTheElement) {
  const auto config = tessera::parse_node_config(
      "[node]\nname = \"a\"\nrole = \"both\"\n[worker]\ngpus = [2, 0]\n", "good.toml");
  EXPECT_EQ(config.gpus, (std::vector<int>{2, 0}));
  const std::string head = "[node]\nname = \"a\"\nrole = \"both\"\n[worker]\n";
  EXPECT_EQ(refusal(head + "gpus = 1\n"),
            "bad.toml:5: key 'worker.gpus' must be an array of integers, got an integer");
  EXPECT_EQ(refusal(head + "gpus = [0, -1]\n"),
            "bad.toml:5: key 'worker.gpus[1]' must be between 0 and 1023, got -1");
  EXPECT_EQ(refusal(head + "gpus = [0, 1.5]\n"),
            "bad.toml:5: key 'worker.gpus[1]' must be an integer, got a float");
  EXPECT_EQ(refusal(head + "gpus = [3, 3]\n"), "bad.toml:5: key 'worker.gpus[1]': device 3 is listed twice");
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

TEST(NodeConfig, PythonModulesAreFilesOrModuleNamesAndClientCodeBeyondLoopbackNeedsCurve) {
  const std::string head = "[node]\nname = \"a\"\nrole = \"both\"\n[plugins]\n";
  const auto unreadable = refusal(head + "python = [\"/nonexistent/sims.py\"]\n");
  EXPECT_EQ(unreadable.find(
                "bad.toml:5: Python module '/nonexistent/sims.py' (key 'plugins.python') cannot be read"),
            0u)
      << unreadable;
  const auto not_a_name = refusal(head + "python = [\"models; rm -rf\"]\n");
  EXPECT_NE(not_a_name.find("is neither a file (ending .py) nor a module name (a.b.c)"), std::string::npos)
      << not_a_name;
  const auto open = refusal(
      "[node]\nname = \"a\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://0.0.0.0:7070\"\n[security]\n"
      "allow_insecure = true\nallow_client_code = true\n");
  EXPECT_NE(open.find("key 'security.allow_client_code' = true with scheduler.listen"), std::string::npos)
      << open;
  EXPECT_NE(open.find("Turn security.curve on"), std::string::npos) << open;
  // A worker node runs client code by default only when its scheduler is on loopback.
  const auto worker = [](const std::string& scheduler, const std::string& security = "") {
    return tessera::client_code_allowed(parse_node_config(
        "[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"" + scheduler + "\"\n" + security,
        "w.toml"));
  };
  EXPECT_TRUE(worker("tcp://127.0.0.1:7070"));
  EXPECT_FALSE(worker("tcp://10.1.2.3:7070"));
  EXPECT_FALSE(worker("tcp://scheduler.example:7070"));
  EXPECT_TRUE(worker("tcp://10.1.2.3:7070", "[security]\nallow_client_code = true\n"));
  EXPECT_FALSE(worker("tcp://127.0.0.1:7070", "[security]\nallow_client_code = false\n"));
}

TEST(NodeConfig, SyntaxErrorNamesTheLine) {
  const auto why = refusal("[node]\nname = \"a\"\nrole = both\n");
  EXPECT_EQ(why.find("bad.toml:3: "), 0u) << why;
}

TEST(NodeConfig, HelpDocumentsEveryKey) {
  const auto help = tessera::node_config_help();
  for (const char* key : {"[node]",
                          "name =",
                          "role =",
                          "log_level =",
                          "[scheduler]",
                          "listen =",
                          "heartbeat_timeout =",
                          "[worker]",
                          "scheduler =",
                          "threads_per_worker =",
                          "memory_limit =",
                          "data_dir =",
                          "[plugins]",
                          "paths =",
                          "[security]",
                          "curve =",
                          "secret_key_file =",
                          "authorized_keys =",
                          "shutdown_timeout =",
                          "progress_timeout =",
                          "allow_insecure =",
                          "authorize_any =",
                          "[streams]",
                          "isolation =",
                          "[limits]",
                          "max_slots_per_submission =",
                          "max_slots_per_client =",
                          "max_histogram_bins =",
                          "max_answer_bytes =",
                          "max_message_size =",
                          "max_worker_threads =",
                          "max_worker_memory =",
                          "seconds 0.05..86400"})
    EXPECT_NE(help.find(key), std::string::npos) << key;
}

TEST(NodeConfig, UnreadableFileIsRefused) {
  EXPECT_THROW(tessera::load_node_config("/nonexistent/node.toml"), ConfigError);
  EXPECT_EQ(refusal_of_file("/tmp"), "/tmp: is a directory, not a config file");
}

// Seconds are converted to milliseconds by the runtime: each key has a finite range.
TEST(NodeConfig, SecondsOutOfRangeOrNotFiniteAreRefused) {
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nclient_grace = inf\n"),
            "bad.toml:5: key 'scheduler.client_grace' must be between 0.1 and 604800 seconds, got inf");
  EXPECT_EQ(
      refusal(kBoth + "[scheduler]\nheartbeat_timeout = 1e300\n"),
      "bad.toml:5: key 'scheduler.heartbeat_timeout' must be between 0.05 and 86400 seconds, got 1e+300");
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nheartbeat_interval = nan\n"),
            "bad.toml:5: key 'scheduler.heartbeat_interval' must be between 0.01 and 3600 seconds, got nan");
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nheartbeat_interval = -inf\n"),
            "bad.toml:5: key 'scheduler.heartbeat_interval' must be between 0.01 and 3600 seconds, got -inf");
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nclient_grace = 0\n"),
            "bad.toml:5: key 'scheduler.client_grace' must be between 0.1 and 604800 seconds, got 0");
  EXPECT_EQ(refusal("[node]\nname = \"a\"\nrole = \"both\"\nshutdown_timeout = 1e9\n"),
            "bad.toml:4: key 'node.shutdown_timeout' must be between 0.1 and 3600 seconds, got 1e+09");
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nprogress_timeout = \"5\"\n"),
            "bad.toml:5: key 'scheduler.progress_timeout' must be a number of seconds, got a string");
  EXPECT_EQ(
      refusal(kBoth + "[scheduler]\nprogress_timeout = 0.01\n"),
      "bad.toml:5: key 'scheduler.progress_timeout' must be between 0.1 and 604800 seconds (or 0: off), got "
      "0.01");
  // Integers are seconds too, and 0 turns the progress watchdog off.
  const auto config =
      parse_node_config(kBoth + "[scheduler]\nclient_grace = 60\nprogress_timeout = 0\n", "ok.toml");
  EXPECT_EQ(config.client_grace_seconds, 60.0);
  EXPECT_EQ(config.progress_timeout_seconds, 0.0);
  EXPECT_EQ(parse_node_config(kBoth, "ok.toml").progress_timeout_seconds, 300.0);
  EXPECT_EQ(parse_node_config(kBoth, "ok.toml").shutdown_timeout_seconds, 10.0);
}

TEST(NodeConfig, HeartbeatTimeoutMustExceedTheInterval) {
  EXPECT_EQ(
      refusal(kBoth + "[scheduler]\nheartbeat_interval = 2\nheartbeat_timeout = 1\n"),
      "bad.toml:6: key 'scheduler.heartbeat_timeout' (1 s) must exceed key 'scheduler.heartbeat_interval' "
      "(2 s)");
  // Only the interval given: the default timeout (3 s) is the one compared, at the interval's line.
  EXPECT_EQ(
      refusal("[node]\nname = \"s\"\nrole = \"scheduler\"\n[scheduler]\nheartbeat_interval = 5\n"),
      "bad.toml:5: key 'scheduler.heartbeat_timeout' (3 s) must exceed key 'scheduler.heartbeat_interval' "
      "(5 s)");
  // A worker's own config has no timeout of its own to compare with: its scheduler's counts.
  EXPECT_EQ(parse_node_config("[node]\nname = \"w\"\nrole = \"worker\"\n[scheduler]\nheartbeat_interval = 5\n"
                              "[worker]\nscheduler = \"tcp://127.0.0.1:7070\"\n",
                              "ok.toml")
                .heartbeat_interval_seconds,
            5.0);
}

TEST(NodeConfig, SizesThatAreNotFiniteOrTooLargeAreRefused) {
  const std::string bad_size = "must be a size such as \"4GiB\" or \"512MB\", got ";
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = \"nan\"\n"),
            "bad.toml:5: key 'worker.memory_limit' " + bad_size + "\"nan\"");
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = \"inf\"\n"),
            "bad.toml:5: key 'worker.memory_limit' " + bad_size + "\"inf\"");
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = \"-1GiB\"\n"),
            "bad.toml:5: key 'worker.memory_limit' " + bad_size + "\"-1GiB\"");
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = \"1e999B\"\n"),
            "bad.toml:5: key 'worker.memory_limit' " + bad_size + "\"1e999B\"");
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = \"1e30GiB\"\n"),
            "bad.toml:5: key 'worker.memory_limit' must be between 0 and 1PiB, got \"1e30GiB\"");
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = \"2PiB\"\n"),
            "bad.toml:5: key 'worker.memory_limit' must be between 0 and 1PiB, got \"2PiB\"");
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = 9223372036854775807\n"),
            "bad.toml:5: key 'worker.memory_limit' must be between 0 and 1PiB, got 9223372036854775807");
  EXPECT_EQ(refusal(kBoth + "[worker]\nmemory_limit = -1\n"),
            "bad.toml:5: key 'worker.memory_limit' must be between 0 and 1PiB, got -1");
  EXPECT_EQ(parse_node_config(kBoth + "[worker]\nmemory_limit = \"1.5GiB\"\n", "ok.toml").memory_limit_bytes,
            3ull << 29);
  EXPECT_EQ(parse_node_config(kBoth + "[worker]\nmemory_limit = \"512 MB\"\n", "ok.toml").memory_limit_bytes,
            512000000ull);
  EXPECT_EQ(parse_node_config(kBoth + "[worker]\nmemory_limit = \"1PiB\"\n", "ok.toml").memory_limit_bytes,
            1ull << 50);
}

TEST(NodeConfig, TotalComputeThreadsAreBounded) {
  EXPECT_EQ(
      refusal(kBoth + "[worker]\nworkers = 1024\nthreads_per_worker = 1024\n"),
      "bad.toml:6: keys 'worker.workers' (1024) x 'worker.threads_per_worker' (1024) make 1048576 compute "
      "threads, more than the 4096 one node may start");
  const auto why = refusal(
      "[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nthreads_per_worker = 8\n"
      "workers = 1000\nscheduler = \"tcp://127.0.0.1:7070\"\n");
  EXPECT_EQ(why.find("bad.toml:6: keys 'worker.workers' (1000) x 'worker.threads_per_worker' (8) make 8000"),
            0u)
      << why;
  const auto at_bound =
      parse_node_config(kBoth + "[worker]\nworkers = 64\nthreads_per_worker = 64\n", "ok.toml");
  EXPECT_EQ(at_bound.workers * at_bound.threads_per_worker, tessera::kMaxComputeThreadsPerNode);
  // A scheduler alone starts no workers: its worker keys are not counted.
  EXPECT_NO_THROW(parse_node_config(
      "[node]\nname = \"s\"\nrole = \"scheduler\"\n[worker]\nworkers = 1024\nthreads_per_worker = 1024\n",
      "ok"));
}

TEST(NodeConfig, NodeNameMustBePrintableAndNonEmpty) {
  EXPECT_EQ(refusal("[node]\nname = \"\"\nrole = \"both\"\n"),
            "bad.toml:2: key 'node.name' must not be empty or blank");
  EXPECT_EQ(refusal("[node]\nname = \"   \"\nrole = \"both\"\n"),
            "bad.toml:2: key 'node.name' must not be empty or blank");
  EXPECT_EQ(
      refusal("[node]\nname = \"x\\n[tessera] worker 'evil' joined\"\nrole = \"both\"\n"),
      "bad.toml:2: key 'node.name' must not contain control characters, got \"x\\x0a[tessera] worker 'evil' "
      "joined\"");
  EXPECT_EQ(refusal("[node]\nname = \"a\\tb\"\nrole = \"both\"\n"),
            "bad.toml:2: key 'node.name' must not contain control characters, got \"a\\x09b\"");
  EXPECT_EQ(refusal("[node]\nname = \"" + std::string(129, 'n') + "\"\nrole = \"both\"\n"),
            "bad.toml:2: key 'node.name' must be at most 128 bytes, got 129");
}

TEST(NodeConfig, MemoryFractionsOutsideTheUnitIntervalAreRefusedByKey) {
  for (const char* key : {"memory_target_fraction", "memory_pause_fraction"}) {
    for (const char* bad : {"0", "-0.5", "1.5", "inf", "nan", "\"half\""}) {
      const auto why = refusal(kBoth + "[worker]\n" + key + " = " + bad + "\n");
      EXPECT_NE(why.find(std::string("bad.toml:5: key 'worker.") + key + "'"), std::string::npos) << why;
      EXPECT_NE(why.find("(0, 1]"), std::string::npos) << why;
    }
  }
}

TEST(NodeConfig, EchoedValuesAreCutToAnExcerpt) {
  const auto why = refusal("[node]\nname = \"a\"\nrole = \"" + std::string(100000, 'r') + "\"\n");
  EXPECT_EQ(why.find("bad.toml:3: key 'node.role' must be one of scheduler, worker, both, got \"rrrr"), 0u);
  EXPECT_LT(why.size(), 200u);
  EXPECT_NE(why.find("rrr... (100000 bytes)\""), std::string::npos) << why;
  // The excerpt of the key, and the list of known keys in [worker].
  EXPECT_LT(refusal(kBoth + "[worker]\n" + std::string(5000, 'k') + " = 1\n").size(), 400u);
  EXPECT_EQ(tessera::config_excerpt("a\x01\x7f"
                                    "b"),
            "a\\x01\\x7fb");
  // Cut at a character boundary: no half of "é" is left.
  EXPECT_EQ(tessera::config_excerpt("ab\xc3\xa9", 3), "ab... (4 bytes)");
}

TEST(NodeConfig, EndpointsAreCheckedWithTheirKey) {
  EXPECT_EQ(
      refusal(kBoth + "[scheduler]\nlisten = \"udp://127.0.0.1:7070\"\n"),
      "bad.toml:5: key 'scheduler.listen' must be a ZeroMQ endpoint such as \"tcp://127.0.0.1:7070\" (port "
      "0 or *: any free port; tcp:// or ipc://), got \"udp://127.0.0.1:7070\"");
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nlisten = \"tcp://127.0.0.1:99999\"\n"),
            "bad.toml:5: key 'scheduler.listen' has an invalid port \"99999\" (0..65535 or *) in "
            "\"tcp://127.0.0.1:99999\"");
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nlisten = \"tcp://127.0.0.1:http\"\n")
                .find("bad.toml:5: key 'scheduler.listen' has an invalid port \"http\""),
            0u);
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nlisten = \"tcp://127.0.0.1\"\n")
                .find("bad.toml:5: key 'scheduler.listen' must be a ZeroMQ endpoint"),
            0u);
  EXPECT_EQ(refusal(kBoth + "[scheduler]\nlisten = \"tcp://:7070\"\n")
                .find("bad.toml:5: key 'scheduler.listen' must be a ZeroMQ endpoint"),
            0u);
  EXPECT_EQ(
      refusal("[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"tcp://127.0.0.1:0\"\n"),
      "bad.toml:5: key 'worker.scheduler' has an invalid port \"0\" (1..65535) in \"tcp://127.0.0.1:0\"");
  EXPECT_EQ(refusal("[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"inproc://x\"\n")
                .find("bad.toml:5: key 'worker.scheduler' must be a ZeroMQ endpoint"),
            0u);
  for (const char* ok : {"tcp://127.0.0.1:*", "tcp://localhost:0", "tcp://[::1]:7070", "tcp://127.4.5.6:1",
                         "ipc:///tmp/tessera.sock"})
    EXPECT_EQ(parse_node_config(kBoth + "[scheduler]\nlisten = \"" + ok + "\"\n", "ok.toml").listen, ok);
}

TEST(NodeConfig, ListeningBeyondLoopbackNeedsCurveOrAllowInsecure) {
  const std::string refused =
      "is not a loopback address, and security.curve is off: anyone who reaches it could join as a worker or "
      "client. Set security.curve = true (with key files and authorized_keys), or security.allow_insecure = "
      "true "
      "to accept that";
  for (const char* address : {"tcp://0.0.0.0:7070", "tcp://*:7070", "tcp://lo:7070", "tcp://eth0:0",
                              "tcp://192.168.1.2:7070", "tcp://[::]:7070", "tcp://127.evil.example:1"})
    EXPECT_EQ(refusal(kBoth + "[scheduler]\nlisten = \"" + address + "\"\n"),
              std::string("bad.toml:5: key 'scheduler.listen' (\"") + address + "\") " + refused);
  EXPECT_EQ(refusal("[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"tcp://10.0.0.1:7070\"\n"
                    "listen = \"tcp://0.0.0.0:0\"\n"),
            "bad.toml:6: key 'worker.listen' (\"tcp://0.0.0.0:0\") " + refused);
  // Connecting out is not listening: a worker may join a scheduler on another machine.
  EXPECT_NO_THROW(parse_node_config(
      "[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"tcp://10.0.0.1:7070\"\n", "ok.toml"));
  // A scheduler alone does not use worker.listen.
  EXPECT_NO_THROW(parse_node_config(
      "[node]\nname = \"s\"\nrole = \"scheduler\"\n[worker]\nlisten = \"tcp://0.0.0.0:0\"\n", "ok"));

  const auto insecure = parse_node_config(
      kBoth + "[scheduler]\nlisten = \"tcp://0.0.0.0:7070\"\n[security]\nallow_insecure = true\n", "ok.toml");
  EXPECT_TRUE(insecure.allow_insecure);
  ASSERT_EQ(insecure.warnings.size(), 1u);
  EXPECT_EQ(
      insecure.warnings[0],
      "ok.toml:5: key 'scheduler.listen' (\"tcp://0.0.0.0:7070\") is not a loopback address and "
      "security.curve is off: connections are neither authenticated nor encrypted (security.allow_insecure "
      "= true)");
  EXPECT_TRUE(parse_node_config(kBoth, "ok.toml").warnings.empty());
  EXPECT_FALSE(parse_node_config(kBoth, "ok.toml").allow_insecure);
  EXPECT_FALSE(parse_node_config(kBoth, "ok.toml").authorize_any);
}

// Key files in a directory of their own, named relative to it as a config file there would.
class CurveConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("tessera-config-keys-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_ / "keys");
    own_ = tessera::transport::generate_curve_keys();
    other_ = tessera::transport::generate_curve_keys();
    std::ofstream(dir_ / "keys/node.key") << own_.secret_key << "\n";
    std::ofstream(dir_ / "keys/node.pub") << own_.public_key << "\n";
    std::ofstream(dir_ / "keys/other.pub") << other_.public_key << "\n";
    std::ofstream(dir_ / "keys/garbage") << std::string(10000, 'x');
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // [security] at line 4, curve at line 5.
  std::string curve(const std::string& extra, const std::string& head = kBoth) const {
    return head + "[security]\ncurve = true\n" + extra;
  }
  std::string files(const std::string& pub = "keys/node.pub") const {
    return "secret_key_file = \"keys/node.key\"\npublic_key_file = \"" + pub + "\"\n";
  }
  std::string authorized() const { return "authorized_keys = [\"" + other_.public_key + "\"]\n"; }
  std::string refused(const std::string& text) const {
    try {
      parse_node_config(text, "bad.toml", dir_);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(accepted)";
  }

  std::filesystem::path dir_;
  tessera::transport::CurveKeys own_, other_;
};

TEST_F(CurveConfig, KeyFilesResolveAgainstTheConfigDirectoryAndAreRead) {
  const auto config = parse_node_config(curve(files() + authorized()), "ok.toml", dir_);
  EXPECT_EQ(config.secret_key_file, (dir_ / "keys/node.key").string());
  EXPECT_EQ(config.curve_secret_key, own_.secret_key);
  EXPECT_EQ(config.curve_public_key, own_.public_key);
  EXPECT_TRUE(config.warnings.empty());
  // With CURVE on, listening on every interface is allowed without a warning.
  EXPECT_TRUE(parse_node_config(curve(files() + authorized()) + "[scheduler]\nlisten = \"tcp://0.0.0.0:1\"\n",
                                "ok.toml", dir_)
                  .warnings.empty());
}

TEST_F(CurveConfig, MissingUnreadableOrInvalidKeyFilesNameTheirKey) {
  EXPECT_EQ(
      refused(curve(authorized())),
      "bad.toml:5: key 'security.secret_key_file' is required when security.curve = true (make a key pair "
      "with `tessera keygen`)");
  EXPECT_EQ(
      refused(curve("secret_key_file = \"keys/node.key\"\n" + authorized())),
      "bad.toml:5: key 'security.public_key_file' is required when security.curve = true (make a key pair "
      "with `tessera keygen`)");
  EXPECT_EQ(refused(curve(files("keys/missing.pub") + authorized())),
            "bad.toml:7: key 'security.public_key_file': cannot read \"" +
                (dir_ / "keys/missing.pub").string() + "\"");
  EXPECT_EQ(refused(curve(files("keys/garbage") + authorized())),
            "bad.toml:7: key 'security.public_key_file': \"" + (dir_ / "keys/garbage").string() +
                "\" does not hold a 40-character Z85 CURVE key (see `tessera keygen`)");
  EXPECT_EQ(refused(curve(files("keys") + authorized())).find("bad.toml:7: key 'security.public_key_file': "),
            0u);
  EXPECT_EQ(refused(curve(files("keys/other.pub") + authorized())),
            "bad.toml:7: key 'security.public_key_file': \"" + (dir_ / "keys/other.pub").string() +
                "\" is not the public key of key 'security.secret_key_file' (\"" +
                (dir_ / "keys/node.key").string() + "\")");
}

TEST_F(CurveConfig, EmptyAuthorizedKeysNeedAuthorizeAny) {
  EXPECT_EQ(
      refused(curve(files())),
      "bad.toml:5: key 'security.curve' = true with an empty key 'security.authorized_keys' would accept any "
      "CURVE key (encryption without authentication): list the public keys of the clients and workers, or "
      "set security.authorize_any = true to accept that");
  EXPECT_EQ(
      refused(curve(files() + "authorized_keys = []\n")).find("bad.toml:5: key 'security.curve' = true"), 0u);
  const auto any = parse_node_config(curve(files() + "authorize_any = true\n"), "ok.toml", dir_);
  ASSERT_EQ(any.warnings.size(), 1u);
  EXPECT_EQ(
      any.warnings[0],
      "ok.toml:8: key 'security.authorize_any' = true: any CURVE key is accepted (connections are encrypted "
      "but not authenticated)");
  EXPECT_EQ(refused(curve(files() + authorized() + "authorize_any = true\n")),
            "bad.toml:9: key 'security.authorize_any' = true contradicts a non-empty key "
            "'security.authorized_keys' (only the listed keys would be accepted): set one or the other");
}

TEST_F(CurveConfig, AWorkerNeedsAuthorizedPeersAndTheSchedulerKey) {
  const std::string worker = "[node]\nname = \"w\"\nrole = \"worker\"\n";
  const std::string joins = "[worker]\nscheduler = \"tcp://127.0.0.1:7070\"\n";
  EXPECT_EQ(
      refused(curve(files() + "scheduler_public_key = \"" + other_.public_key + "\"\n", worker) + joins),
      "bad.toml:5: key 'security.curve' = true with an empty key 'security.authorized_keys' would accept any "
      "CURVE key (encryption without authentication): list the public keys of the other workers, or set "
      "security.authorize_any = true to accept that");
  EXPECT_EQ(
      refused(curve(files() + authorized(), worker) + joins),
      "bad.toml:5: key 'security.scheduler_public_key' (or security.scheduler_public_key_file) is required "
      "for a worker when security.curve = true (the scheduler's public key)");
  EXPECT_NO_THROW(parse_node_config(
      curve(files() + authorized() + "scheduler_public_key = \"" + other_.public_key + "\"\n", worker) +
          joins,
      "ok.toml", dir_));
}

TEST_F(CurveConfig, InvalidKeysAreNamedByKeyAndIndex) {
  EXPECT_EQ(refused(curve(files() + "authorized_keys = [\"" + other_.public_key + "\",\n  \"not-a-key\"]\n")),
            "bad.toml:9: key 'security.authorized_keys[1]' is not a 40-character Z85 CURVE public key: "
            "\"not-a-key\"");
  // 40 characters, but not all of Z85's alphabet.
  EXPECT_EQ(refused(curve(files() + "authorized_keys = [\"" + std::string(39, 'a') + "\\\"\"]\n"))
                .find("bad.toml:8: key 'security.authorized_keys[0]' is not a 40-character Z85"),
            0u);
  EXPECT_EQ(refused(curve(files() + "authorized_keys = [\"" + other_.public_key + "\", 7]\n")),
            "bad.toml:8: key 'security.authorized_keys[1]' must be a string, got an integer");
  EXPECT_EQ(
      refused(curve(files() + authorized() + "scheduler_public_key = \"short\"\n")),
      "bad.toml:9: key 'security.scheduler_public_key' must be a 40-character Z85 CURVE public key (see "
      "`tessera keygen`), got \"short\"");
}

TEST_F(CurveConfig, KeysMayComeFromFilesBesideTheSecretOnes) {
  // A key with '#' in it (Z85's alphabet has it): not mistaken for a comment.
  auto third = tessera::transport::generate_curve_keys();
  for (int i = 0; i < 1000 && third.public_key.find('#') == std::string::npos; ++i)
    third = tessera::transport::generate_curve_keys();
  ASSERT_NE(third.public_key.find('#'), std::string::npos);
  std::ofstream(dir_ / "keys/authorized") << "# the workers\n"
                                          << other_.public_key << "  # worker 1\n\n"
                                          << third.public_key << "\n";
  const auto config = parse_node_config(
      curve(
          files() +
              "authorized_keys_file = \"keys/authorized\"\nscheduler_public_key_file = \"keys/other.pub\"\n",
          "[node]\nname = \"w\"\nrole = \"worker\"\n") +
          "[worker]\nscheduler = \"tcp://127.0.0.1:1\"\n",
      "ok.toml", dir_);
  EXPECT_EQ(config.authorized_keys, (std::vector<std::string>{other_.public_key, third.public_key}));
  EXPECT_EQ(config.scheduler_public_key, other_.public_key);
  // Inline keys and the file's together.
  const auto both = parse_node_config(
      curve(files() + authorized() + "authorized_keys_file = \"keys/authorized\"\n"), "ok.toml", dir_);
  EXPECT_EQ(both.authorized_keys.size(), 3u);

  std::ofstream(dir_ / "keys/bad-authorized") << other_.public_key << "\nnot-a-key\n";
  EXPECT_EQ(refused(curve(files() + "authorized_keys_file = \"keys/bad-authorized\"\n")),
            "bad.toml:8: key 'security.authorized_keys_file': \"" + (dir_ / "keys/bad-authorized").string() +
                "\":2 is not a 40-character Z85 CURVE public key: \"not-a-key\"");
  EXPECT_EQ(refused(curve(files() + "authorized_keys_file = \"keys/none\"\n")),
            "bad.toml:8: key 'security.authorized_keys_file': cannot read \"" +
                (dir_ / "keys/none").string() + "\"");
  EXPECT_EQ(refused(curve(files() + "scheduler_public_key_file = \"keys/garbage\"\n" + authorized())),
            "bad.toml:8: key 'security.scheduler_public_key_file': \"" + (dir_ / "keys/garbage").string() +
                "\" does not hold a 40-character Z85 CURVE key (see `tessera keygen`)");
}

TEST(NodeConfig, LimitsHaveDefaultsAndRanges) {
  const auto defaults = parse_node_config(kBoth, "ok.toml").limits;
  EXPECT_EQ(defaults.max_slots_per_submission, 1u << 20);
  EXPECT_EQ(defaults.max_slots_per_client, 1u << 22);
  EXPECT_EQ(defaults.max_histogram_bins, 10000u);
  EXPECT_EQ(defaults.max_answer_bytes, 64u << 20);
  EXPECT_EQ(defaults.max_message_size, 64u << 20);
  EXPECT_EQ(defaults.max_worker_threads, 1024u);
  EXPECT_EQ(defaults.max_worker_memory, 16ull << 40);
  const auto set =
      parse_node_config(kBoth +
                            "[limits]\nmax_slots_per_submission = 1000\nmax_slots_per_client = 2000\n"
                            "max_histogram_bins = 50\nmax_answer_bytes = \"1MiB\"\n"
                            "max_message_size = \"4GiB\"\nmax_worker_threads = 8\n"
                            "max_worker_memory = \"1TiB\"\n",
                        "ok.toml")
          .limits;
  EXPECT_EQ(set.max_slots_per_submission, 1000u);
  EXPECT_EQ(set.max_slots_per_client, 2000u);
  EXPECT_EQ(set.max_histogram_bins, 50u);
  EXPECT_EQ(set.max_answer_bytes, 1u << 20);
  EXPECT_EQ(set.max_message_size, 4ull << 30);
  EXPECT_EQ(set.max_worker_threads, 8u);
  EXPECT_EQ(set.max_worker_memory, 1ull << 40);

  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_slots_per_submission = 67108865\n"),
            "bad.toml:5: key 'limits.max_slots_per_submission' must be between 1 and 67108864, got 67108865");
  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_slots_per_client = 0\n"),
            "bad.toml:5: key 'limits.max_slots_per_client' must be between 1 and 268435456, got 0");
  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_histogram_bins = 1000001\n"),
            "bad.toml:5: key 'limits.max_histogram_bins' must be between 1 and 1000000, got 1000001");
  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_answer_bytes = \"2GiB\"\n"),
            "bad.toml:5: key 'limits.max_answer_bytes' must be between 1KiB and 1GiB, got \"2GiB\"");
  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_message_size = 1000\n"),
            "bad.toml:5: key 'limits.max_message_size' must be between 16MiB and 4GiB, got 1000");
  EXPECT_EQ(
      refusal(kBoth + "[limits]\nmax_worker_memory = \"nan\"\n"),
      "bad.toml:5: key 'limits.max_worker_memory' must be a size such as \"4GiB\" or \"512MB\", got \"nan\"");
  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_worker_threads = 4294967295\n"),
            "bad.toml:5: key 'limits.max_worker_threads' must be between 1 and 65536, got 4294967295");
  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_slots_per_submission = 5000\nmax_slots_per_client = 4000\n"),
            "bad.toml:5: key 'limits.max_slots_per_submission' (5000) must not exceed key "
            "'limits.max_slots_per_client' (4000)");
  EXPECT_EQ(refusal(kBoth + "[limits]\nmax_slots = 5\n")
                .find("bad.toml:5: unknown key 'limits.max_slots' (known "
                      "keys in [limits]: max_slots_per_submission,"),
            0u);
}

TEST(NodeConfig, KeyLocationsNameFileLineAndKey) {
  const auto config = parse_node_config(kBoth + "[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n", "node.toml");
  EXPECT_EQ(tessera::config_key_location(config, "scheduler.listen"), "node.toml:5: key 'scheduler.listen'");
  EXPECT_EQ(tessera::config_key_location(config, "worker.listen"), "node.toml: key 'worker.listen'");
}

TEST(NodeConfig, UnusableDataDirIsRefusedAtStart) {
  const tessera::testing::ScratchDir scratch("tessera-config-data");
  const auto& dir = scratch.path();
  std::ofstream(dir / "file") << "x";
  const auto under_file = parse_node_config(kBoth + "[worker]\ndata_dir = \"file/data\"\n", "node.toml", dir);
  EXPECT_EQ(under_file.data_dir, (dir / "file/data").string());
  try {
    tessera::check_data_dir(under_file);
    ADD_FAILURE() << "a data_dir under a regular file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), "node.toml:5: key 'worker.data_dir' (\"" + (dir / "file/data").string() +
                                         "\"): cannot be created: Not a directory");
  }
  EXPECT_THROW(
      tessera::check_data_dir(parse_node_config(kBoth + "[worker]\ndata_dir = \"/proc/tessera\"\n", "n")),
      ConfigError);
  // A usable one is created, and the probe leaves nothing behind.
  const auto usable = parse_node_config(kBoth + "[worker]\ndata_dir = \"store/a\"\n", "node.toml", dir);
  EXPECT_NO_THROW(tessera::check_data_dir(usable));
  EXPECT_TRUE(std::filesystem::is_directory(dir / "store/a"));
  EXPECT_TRUE(std::filesystem::is_empty(dir / "store/a"));
}

}  // namespace
