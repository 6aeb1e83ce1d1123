// Hostile configs and command lines against the real tessera-node binary: each is refused at start with
// exit code 2 and one message naming the file, line and key (or the flag). Also: a node listening beyond
// loopback with allow_insecure starts, warns and stops cleanly; SIGTERM stops a running node promptly;
// a shutdown that cannot finish is cut off by the watchdog (exit 3), and so is one interrupted by a
// second signal.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "nodes/transport.hpp"
#include "support/node_process.hpp"
#include "support/scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using tessera::testing::NodeRun;
using tessera::testing::ScratchDir;

// A TCP socket listening on 127.0.0.1 (any free port): a port already in use, or a "scheduler" that
// accepts connections and never answers.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 || listen(fd_, 4) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    port_ = ntohs(address.sin_port);
  }
  ~Listener() {
    for (const int fd : accepted_) close(fd);
    close(fd_);
  }
  int port() const { return port_; }
  // Waits up to `timeout` for a connection and accepts it.
  bool accept_one(std::chrono::milliseconds timeout) {
    pollfd wait{fd_, POLLIN, 0};
    if (poll(&wait, 1, static_cast<int>(timeout.count())) != 1) return false;
    const int fd = accept(fd_, nullptr, nullptr);
    if (fd >= 0) accepted_.push_back(fd);
    return fd >= 0;
  }

 private:
  int fd_ = -1, port_ = 0;
  std::vector<int> accepted_;
};

// A temporary directory with a node.toml, CURVE key files under keys/ (the config names them relative to
// itself) and a regular file named "file".
class HostileDir {
 public:
  HostileDir() {
    fs::create_directories(dir_ / "keys");
    keys_ = tessera::transport::generate_curve_keys();
    std::ofstream(dir_ / "keys/node.key") << keys_.secret_key << "\n";
    std::ofstream(dir_ / "keys/node.pub") << keys_.public_key << "\n";
    std::ofstream(dir_ / "file") << "not a directory\n";
  }
  const fs::path& path() const { return dir_.path(); }
  const std::string& public_key() const { return keys_.public_key; }
  std::vector<std::string> write_config(const std::string& text) const {
    std::ofstream(dir_ / "node.toml") << text;
    return {"--config", (dir_ / "node.toml").string()};
  }

 private:
  ScratchDir dir_{"tessera-hostile"};
  tessera::transport::CurveKeys keys_;
};

// Lines 1-5 of most hostile configs: a scheduler with its workers, on loopback, any free port.
const std::string kHead =
    "[node]\nname = \"hostile\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n";

struct Place {
  const HostileDir& dir;
  const Listener& busy;  // a port in use
};

struct HostileCase {
  const char* name;
  std::function<std::string(const Place&)> config;
  std::vector<std::string> expected;  // in stderr: "node.toml:LINE: key 'KEY'" and what was wrong
};

// How ctest and gtest show a case: by its name.
void PrintTo(const HostileCase& hostile, std::ostream* out) {
  *out << hostile.name;
}

std::string curve_keys() {
  return "secret_key_file = \"keys/node.key\"\npublic_key_file = \"keys/node.pub\"\n";
}

const std::vector<HostileCase>& hostile_cases() {
  static const std::vector<HostileCase> cases{
      {"ClientGraceInf",
       [](auto&) { return kHead + "client_grace = inf\n"; },
       {"node.toml:6: key 'scheduler.client_grace' must be between 0.1 and 604800 seconds, got inf"}},
      {"HeartbeatTimeoutHuge",
       [](auto&) { return kHead + "heartbeat_timeout = 1e300\n"; },
       {"node.toml:6: key 'scheduler.heartbeat_timeout'", "got 1e+300"}},
      {"HeartbeatIntervalNan",
       [](auto&) { return kHead + "heartbeat_interval = nan\n"; },
       {"node.toml:6: key 'scheduler.heartbeat_interval'", "got nan"}},
      {"ProgressTimeoutNegative",
       [](auto&) { return kHead + "progress_timeout = -1\n"; },
       {"node.toml:6: key 'scheduler.progress_timeout'"}},
      {"MemoryLimitNan",
       [](auto&) { return kHead + "[worker]\nmemory_limit = \"nan\"\n"; },
       {"node.toml:7: key 'worker.memory_limit'", "\"nan\""}},
      {"MemoryLimitHuge",
       [](auto&) { return kHead + "[worker]\nmemory_limit = \"1e30GiB\"\n"; },
       {"node.toml:7: key 'worker.memory_limit' must be between 0 and 1PiB, got \"1e30GiB\""}},
      {"KeepFreedMemoryPastOneGiB",
       [](auto&) { return kHead + "[worker]\nkeep_freed_memory = \"inf\"\n"; },
       {"node.toml:7: key 'worker.keep_freed_memory'", "\"inf\""}},
      {"IdleThreadsUnknown",
       [](auto&) { return kHead + "idle_threads = \"busy\"\n"; },
       {"node.toml:6: key 'scheduler.idle_threads' must be one of wait, poll, got \"busy\""}},
      {"ThreadsPastTheTotal",
       [](auto&) { return kHead + "[worker]\nworkers = 1024\nthreads_per_worker = 1024\n"; },
       {"node.toml:8: keys 'worker.workers' (1024) x 'worker.threads_per_worker' (1024)", "4096"}},
      {"EmptyName",
       [](auto&) { return std::string("[node]\nname = \"\"\nrole = \"both\"\n"); },
       {"node.toml:2: key 'node.name' must not be empty"}},
      {"NameWithANewline",
       [](auto&) {
         return std::string("[node]\nname = \"x\\n[tessera] worker 'evil' joined\"\nrole = \"both\"\n");
       },
       {"node.toml:2: key 'node.name' must not contain control characters"}},
      {"ListenOnAnyWithoutCurve",
       [](auto&) {
         return std::string(
             "[node]\nname = \"h\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://0.0.0.0:0\"\n");
       },
       {"node.toml:5: key 'scheduler.listen' (\"tcp://0.0.0.0:0\") is not a loopback address",
        "security.curve = true", "security.allow_insecure = true"}},
      {"WorkerListenOnAnyWithoutCurve",
       [](auto&) {
         return std::string(
             "[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"tcp://127.0.0.1:7070\"\n"
             "listen = \"tcp://*:0\"\n");
       },
       {"node.toml:6: key 'worker.listen' (\"tcp://*:0\") is not a loopback address",
        "security.curve = true"}},
      {"CurveWithNoAuthorizedKeys",
       [](auto&) { return kHead + "[security]\ncurve = true\n" + curve_keys() + "authorized_keys = []\n"; },
       {"node.toml:7: key 'security.curve' = true with an empty key 'security.authorized_keys'",
        "security.authorize_any = true"}},
      {"InvalidAuthorizedKey",
       [](const Place& p) {
         return kHead + "[security]\ncurve = true\n" + curve_keys() + "authorized_keys = [\"" +
                p.dir.public_key() + "\", \"" + std::string(40, '~') + "\"]\n";
       },
       {"node.toml:10: key 'security.authorized_keys[1]' is not a 40-character Z85 CURVE public key"}},
      {"CurveWithoutKeyFiles",
       [](const Place& p) {
         return kHead + "[security]\ncurve = true\nauthorized_keys = [\"" + p.dir.public_key() + "\"]\n";
       },
       {"node.toml:7: key 'security.secret_key_file' is required when security.curve = true"}},
      {"CurveWithAMissingKeyFile",
       [](const Place& p) {
         return kHead +
                "[security]\ncurve = true\nsecret_key_file = \"keys/missing.key\"\n"
                "public_key_file = \"keys/node.pub\"\nauthorized_keys = [\"" +
                p.dir.public_key() + "\"]\n";
       },
       {"node.toml:8: key 'security.secret_key_file': cannot read", "keys/missing.key"}},
      {"BadSchedulerPublicKey",
       [](const Place& p) {
         return "[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"tcp://127.0.0.1:7070\"\n"
                "[security]\ncurve = true\n" +
                curve_keys() + "authorized_keys = [\"" + p.dir.public_key() +
                "\"]\nscheduler_public_key = \"0123456789\"\n";
       },
       {"node.toml:11: key 'security.scheduler_public_key' must be a 40-character Z85 CURVE public key"}},
      {"ListenAddressInUse",
       [](const Place& p) {
         return "[node]\nname = \"h\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:" +
                std::to_string(p.busy.port()) + "\"\n";
       },
       {"node.toml:5: key 'scheduler.listen' (\"tcp://127.0.0.1:",
        "cannot listen there: Address already in use"}},
      {"WorkerListenAddressInUse",
       [](const Place& p) {
         return "[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\nscheduler = \"tcp://127.0.0.1:1\"\n"
                "listen = \"tcp://127.0.0.1:" +
                std::to_string(p.busy.port()) + "\"\n";
       },
       {"node.toml:6: key 'worker.listen'", "cannot listen there: Address already in use"}},
      {"ListenAddressNotOfThisMachine",
       [](auto&) {
         return std::string(
             "[node]\nname = \"h\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://192.0.2.1:0\"\n"
             "[security]\nallow_insecure = true\n");
       },
       {"node.toml:5: key 'scheduler.listen' (\"tcp://192.0.2.1:0\"): cannot listen there"}},
      {"InvalidPort",
       [](auto&) {
         return std::string(
             "[node]\nname = \"h\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:99999\"\n");
       },
       {"node.toml:5: key 'scheduler.listen' has an invalid port \"99999\""}},
      {"BadTransport",
       [](auto&) {
         return std::string(
             "[node]\nname = \"h\"\nrole = \"both\"\n[scheduler]\nlisten = \"udp://127.0.0.1:7070\"\n");
       },
       {"node.toml:5: key 'scheduler.listen' must be a ZeroMQ endpoint", "got \"udp://127.0.0.1:7070\""}},
      {"DataDirUnderARegularFile",
       [](auto&) { return kHead + "[worker]\ndata_dir = \"file/data\"\n"; },
       {"node.toml:7: key 'worker.data_dir'", "file/data\"): cannot be created: Not a directory"}},
      {"DataDirUnderProc",
       [](auto&) { return kHead + "[worker]\ndata_dir = \"/proc/tessera-data\"\n"; },
       {"node.toml:7: key 'worker.data_dir' (\"/proc/tessera-data\")"}},
      {"UnknownKey",
       [](auto&) { return kHead + "[worker]\nthreads = 4\n"; },
       {"node.toml:7: unknown key 'worker.threads'"}},
  };
  return cases;
}

class HostileConfig : public ::testing::TestWithParam<HostileCase> {};

TEST_P(HostileConfig, IsRefusedWithExitCode2NamingFileLineAndKey) {
  const HostileDir dir;
  const Listener busy;
  const auto& hostile = GetParam();
  NodeRun node(dir.path(), dir.write_config(hostile.config(Place{dir, busy})));
  ASSERT_TRUE(node.wait_exit(10s)) << "tessera-node did not exit; stderr: " << node.err();
  const std::string err = node.err();
  EXPECT_EQ(node.exit_code(), 2) << err;
  for (const auto& text : hostile.expected)
    EXPECT_NE(err.find(text), std::string::npos) << text << "\n" << err;
  // The refusal is the last line, one line, bounded: no usage dump, no echo of anything unbounded.
  std::string last = err.substr(0, err.empty() ? 0 : err.size() - 1);
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  EXPECT_EQ(last.rfind("tessera-node: ", 0), 0u) << err;
  EXPECT_NE(last.find("node.toml:"), std::string::npos) << err;
  EXPECT_LT(last.size(), 400u) << err;
}

INSTANTIATE_TEST_SUITE_P(Refused, HostileConfig, ::testing::ValuesIn(hostile_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HostileCommandLine, UnknownFlagsAndMissingConfigExitWith2) {
  const HostileDir dir;
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--bogus"}, "tessera-node: The following argument was not expected: --bogus"},
           {{"--config"}, "tessera-node: --config: 1 required TEXT missing"},
           {{}, "tessera-node: --config FILE.toml is required"},
           {{"--config", (dir.path() / "none.toml").string()}, "none.toml: cannot be read"},
           {{"--config", dir.path().string()}, "is a directory, not a config file"}}) {
    NodeRun node(dir.path(), args);
    ASSERT_TRUE(node.wait_exit(10s));
    EXPECT_EQ(node.exit_code(), 2) << node.err();
    EXPECT_NE(node.err().find(expected), std::string::npos) << node.err();
  }
  NodeRun help(dir.path(), {"--help"});
  ASSERT_TRUE(help.wait_exit(10s));
  EXPECT_EQ(help.exit_code(), 0);
  for (const char* text : {"usage: tessera-node --config FILE.toml", "Exit codes:", "3  stopped by force",
                           "[limits]", "allow_insecure = boolean", "progress_timeout = seconds"})
    EXPECT_NE(help.out().find(text), std::string::npos) << text;
}

TEST(HostileRunning, AllowInsecureStartsWarnsAtStartAndStopsCleanly) {
  const HostileDir dir;
  NodeRun node(dir.path(), dir.write_config("[node]\nname = \"open\"\nrole = \"both\"\n[scheduler]\n"
                                            "listen = \"tcp://0.0.0.0:0\"\n[worker]\nworkers = 1\n"
                                            "threads_per_worker = 1\n[security]\nallow_insecure = true\n"));
  ASSERT_TRUE(node.wait_stdout("listening on", 20s)) << node.err();
  EXPECT_NE(node.err().find("tessera-node: warning: "), std::string::npos) << node.err();
  EXPECT_NE(
      node.err().find("node.toml:5: key 'scheduler.listen' (\"tcp://0.0.0.0:0\") is not a loopback address "
                      "and security.curve is off"),
      std::string::npos)
      << node.err();
  node.signal(SIGTERM);
  ASSERT_TRUE(node.wait_exit(10s));
  EXPECT_EQ(node.exit_code(), 0) << node.err();
}

TEST(HostileRunning, SigtermStopsRunningNodesPromptly) {
  const HostileDir scheduler_dir, worker_dir;
  NodeRun scheduler(scheduler_dir.path(),
                    scheduler_dir.write_config("[node]\nname = \"s\"\nrole = \"scheduler\"\n[scheduler]\n"
                                               "listen = \"tcp://127.0.0.1:0\"\n"));
  ASSERT_TRUE(scheduler.wait_stdout("listening on", 20s)) << scheduler.err();
  const std::string line = scheduler.out();
  const auto at = line.find("tcp://");
  const std::string endpoint = line.substr(at, line.find_first_of(" \n", at) - at);
  NodeRun worker(worker_dir.path(),
                 worker_dir.write_config("[node]\nname = \"w\"\nrole = \"worker\"\n[worker]\n"
                                         "threads_per_worker = 2\nscheduler = \"" +
                                         endpoint + "\"\n"));
  ASSERT_TRUE(worker.wait_stdout("joined", 20s)) << worker.err();
  for (NodeRun* node : {&worker, &scheduler}) {
    const auto start = std::chrono::steady_clock::now();
    node->signal(SIGTERM);
    ASSERT_TRUE(node->wait_exit(5s)) << node->err();
    EXPECT_EQ(node->exit_code(), 0) << node->err();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_NE(node->out().find("stopping (signal 15)"), std::string::npos) << node->out();
  }
}

// A worker stuck in its handshake with a "scheduler" that never answers cannot shut down in an orderly
// way until the handshake times out (5 s): the watchdog ends it after node.shutdown_timeout.
std::string stuck_worker_config(const Listener& silent, const std::string& shutdown_timeout) {
  return "[node]\nname = \"stuck\"\nrole = \"worker\"\nshutdown_timeout = " + shutdown_timeout +
         "\n[worker]\nscheduler = \"tcp://127.0.0.1:" + std::to_string(silent.port()) + "\"\n";
}

TEST(HostileRunning, AShutdownThatCannotFinishIsCutOffByTheWatchdog) {
  const HostileDir dir;
  Listener silent;
  NodeRun node(dir.path(), dir.write_config(stuck_worker_config(silent, "0.3")));
  // Connected: its signals are taken by the node's own thread by now.
  ASSERT_TRUE(silent.accept_one(10s)) << node.err();
  const auto start = std::chrono::steady_clock::now();
  node.signal(SIGTERM);
  ASSERT_TRUE(node.wait_exit(4s)) << node.err();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_EQ(node.exit_code(), 3) << node.err();
  EXPECT_NE(node.err().find("tessera-node 'stuck': shutdown did not finish within 0.3 s; exiting"),
            std::string::npos)
      << node.err();
}

TEST(HostileRunning, ASecondSignalDuringShutdownExitsAtOnce) {
  const HostileDir dir;
  Listener silent;
  NodeRun node(dir.path(), dir.write_config(stuck_worker_config(silent, "60")));
  ASSERT_TRUE(silent.accept_one(10s)) << node.err();
  node.signal(SIGTERM);
  node.signal(SIGINT);  // another signal than the first: two of one kind may merge into one while pending
  ASSERT_TRUE(node.wait_exit(4s)) << node.err();
  EXPECT_EQ(node.exit_code(), 3) << node.err();
  EXPECT_NE(node.err().find("second signal"), std::string::npos) << node.err();
}

}  // namespace
