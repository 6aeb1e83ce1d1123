// A cluster across hosts made of network namespaces (tests/netns_lab.hpp): the scheduler on one host,
// a worker on each of two others, the client (the `tessera` CLI) on a fourth, CURVE on, workers bound to
// a wildcard address (tcp://*:0) and advertising the one their route to the scheduler takes. Checked: a
// stream's results; a worker cut off for 5 s and healed (its work recomputed, the worker back, every set
// stored once); the scheduler cut off for 5 s (workers and client reconnect, the stream finishes once);
// a link with 5 ms of delay and 1% loss (tc netem, or tests/tools/link_shaper.cpp where the kernel has
// no netem); a client whose link (96 kbit/s by link_shaper) is slower than its results stays connected.
// Skips, naming why, where namespaces cannot be made (not root, no iproute2).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "netns_lab.hpp"
#include "support/files.hpp"
#include "support/node_process.hpp"
#include "test_util.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using tessera::testing::LabUnavailable;
using tessera::testing::NetnsLab;
using tessera::testing::read_file;

// These conditions run programs or read /proc: look every 100 ms.
bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  return tessera::testing::eventually(condition, timeout, std::chrono::milliseconds(100));
}

std::string first_word(const std::string& text) {
  return text.substr(0, text.find_first_of(" \n"));
}

class NetnsCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      lab_ = std::make_unique<NetnsLab>(std::vector<std::string>{"scheduler", "w1", "w2", "client"});
    } catch (const LabUnavailable& e) {
      GTEST_SKIP() << "SKIPPED: no network namespaces here: " << e.what();
    }
    dir_ = fs::temp_directory_path() / ("tessera-netns-test-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    for (const char* who : {"scheduler", "worker", "client"}) {
      int code = 0;
      lab_->run_in("client", {TESSERA_CLI_BINARY, "keygen", "--out", (dir_ / who).string()}, code,
                   dir_ / "keygen.log");
      ASSERT_EQ(code, 0) << read_file(dir_ / "keygen.log");
      keys_[who] = first_word(read_file(dir_ / (std::string(who) + ".pub")));
    }
    scheduler_address_ = "tcp://" + lab_->address("scheduler") + ":7070";
    std::ofstream(dir_ / "client.toml")
        << "[client]\nscheduler = \"" << scheduler_address_ << "\"\n"
        << "[security]\npublic_key_file = \"client.pub\"\n"
        << "secret_key_file = \"client.key\"\nscheduler_public_key = \"" << keys_["scheduler"] << "\"\n";
    std::ofstream(dir_ / "scheduler.toml")
        << "[node]\nname = \"scheduler\"\nrole = \"scheduler\"\ndata_dir = \"" << (dir_ / "store").string()
        << "\"\n"
        << "[scheduler]\nlisten = \"" << scheduler_address_ << "\"\nheartbeat_interval = 0.25\n"
        << "heartbeat_timeout = 2.0\nclient_grace = 60\n"
        << "[plugins]\npaths = [\"" << TESSERA_EXAMPLES_PLUGIN << "\"]\n"
        << "[security]\ncurve = true\nsecret_key_file = \"scheduler.key\"\npublic_key_file = "
           "\"scheduler.pub\"\n"
        << "authorized_keys = [\"" << keys_["worker"] << "\", \"" << keys_["client"] << "\"]\n";
    for (const char* worker : {"w1", "w2"})
      std::ofstream(dir_ / (std::string(worker) + ".toml"))
          << "[node]\nname = \"" << worker << "\"\nrole = \"worker\"\n"
          << "[worker]\nscheduler = \"" << scheduler_address_ << "\"\nlisten = \"tcp://*:0\"\n"
          << "threads_per_worker = 2\n[scheduler]\nheartbeat_interval = 0.25\n"
          << "[plugins]\npaths = [\"" << TESSERA_EXAMPLES_PLUGIN << "\"]\n"
          << "[security]\ncurve = true\nsecret_key_file = \"worker.key\"\npublic_key_file = \"worker.pub\"\n"
          << "scheduler_public_key = \"" << keys_["scheduler"] << "\"\nauthorized_keys = [\""
          << keys_["worker"] << "\"]\n";
    start_node("scheduler", "scheduler.toml");
    ASSERT_TRUE(eventually([&] { return status("workers") == 0; }, 30s)) << logs();
    start_node("w1", "w1.toml");
    start_node("w2", "w2.toml");
    ASSERT_TRUE(eventually([&] { return status("workers") == 2; }, 30s)) << logs();
  }

  void TearDown() override {
    for (auto& [host, pid] : nodes_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (client_ > 0) {
      kill(client_, SIGKILL);
      waitpid(client_, nullptr, 0);
    }
    lab_.reset();
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void start_node(const std::string& host, const std::string& config) {
    nodes_[host] = lab_->spawn(host, {TESSERA_NODE_BINARY, "--config", (dir_ / config).string()},
                               dir_ / (host + ".log"), dir_);
  }

  // `tessera ARGS` from the client's host, with the client config.
  std::string cli(const std::vector<std::string>& args, int& code) const {
    std::vector<std::string> argv = {TESSERA_CLI_BINARY, "--client-config", (dir_ / "client.toml").string(),
                                     "--timeout", "2"};
    argv.insert(argv.end(), args.begin(), args.end());
    static int calls = 0;
    return lab_->run_in("client", argv, code, dir_ / ("cli-" + std::to_string(++calls) + ".log"));
  }

  // A number of `tessera status --json`; -1 when the scheduler does not answer.
  long status(const std::string& field) const {
    int code = 0;
    const auto json = cli({"status", "--json"}, code);
    const auto at = json.find("\"" + field + "\":");
    if (code != 0 || at == std::string::npos) return -1;
    return std::stol(json.substr(at + field.size() + 3));
  }

  // Results stored for the test's stream (the first of a fresh store: id 1); -1 without an answer.
  long stored() const {
    int code = 0;
    const auto out = cli({"results", "--stream", "1", "--format", "count"}, code);
    if (code != 0 || out.empty() || !std::isdigit(static_cast<unsigned char>(out[0]))) return -1;
    return std::stol(out);
  }

  // Starts `tessera stream push` of `sets` parameter sets from the client's host.
  void push(std::size_t sets) {
    int code = 0;
    lab_->run_in("client",
                 {TESSERA_EXAMPLE_BINARY, "--sets", std::to_string(sets), "--params-csv",
                  (dir_ / "params.csv").string()},
                 code, dir_ / "params.log");
    ASSERT_EQ(code, 0) << read_file(dir_ / "params.log");
    client_ = lab_->spawn(
        "client",
        {TESSERA_CLI_BINARY, "--client-config", (dir_ / "client.toml").string(), "--reconnect-timeout", "60",
         "stream", "push", "--simulation", "costly_simulation", "--input", (dir_ / "params.csv").string(),
         "--output", (dir_ / "results.csv").string(), "--quiet"},
        dir_ / "push.log", dir_);
  }

  // Waits for the push to end (within `timeout`); its exit code.
  int finish(std::chrono::seconds timeout) {
    int status = 0;
    const bool ended = eventually([&] { return waitpid(client_, &status, WNOHANG) == client_; }, timeout);
    if (!ended) {
      kill(client_, SIGKILL);
      waitpid(client_, &status, 0);
    }
    client_ = -1;
    return ended && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Every set stored once, with its simulation's result (the sum of its parameters).
  void expect_every_result_once(std::size_t sets) {
    std::ifstream csv(dir_ / "results.csv");
    std::string line;
    ASSERT_TRUE(std::getline(csv, line)) << "no results.csv; " << logs();
    std::vector<std::string> header;
    {
      std::stringstream cells(line);
      for (std::string cell; std::getline(cells, cell, ',');) header.push_back(cell);
    }
    std::set<long> ids;
    while (std::getline(csv, line)) {
      std::vector<std::string> cells;
      std::stringstream in(line);
      for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
      ASSERT_GE(cells.size(), header.size() - 1) << line;
      // id, then the parameters, then the result.
      const auto result_column = std::find(header.begin(), header.end(), "result") - header.begin();
      ASSERT_LT(static_cast<std::size_t>(result_column), cells.size()) << line;
      const long id = std::stol(cells[0]);
      double sum = 0;
      for (long i = 1; i < result_column; ++i) sum += std::stod(cells[i]);
      const double result = std::stod(cells[result_column]);
      EXPECT_NEAR(result, sum, 1e-9 * std::max(1.0, sum)) << line;
      EXPECT_TRUE(ids.insert(id).second) << "stored twice: " << line;
    }
    EXPECT_EQ(ids.size(), sets);
  }

  std::string logs() const {
    std::string out;
    for (const char* log : {"scheduler.log", "w1.log", "w2.log", "push.log"})
      out += std::string("\n--- ") + log + ":\n" + read_file(dir_ / log).substr(0, 4000);
    return out;
  }

  std::unique_ptr<NetnsLab> lab_;
  fs::path dir_;
  std::map<std::string, std::string> keys_;
  std::map<std::string, pid_t> nodes_;
  std::string scheduler_address_;
  pid_t client_ = -1;
};

TEST_F(NetnsCluster, AStreamRunsOnWorkersOnOtherHosts) {
  push(1000);
  ASSERT_EQ(finish(120s), 0) << logs();
  expect_every_result_once(1000);
  int code = 0;
  const auto workers = cli({"workers", "--json"}, code);
  // Each worker bound tcp://*:0 and advertises its own host's address, which the other dialled.
  EXPECT_NE(workers.find("tcp://" + lab_->address("w1") + ":"), std::string::npos) << workers;
  EXPECT_NE(workers.find("tcp://" + lab_->address("w2") + ":"), std::string::npos) << workers;
}

TEST_F(NetnsCluster, AWorkerCutOffForFiveSecondsHasItsWorkRecomputedAndRejoins) {
  push(3000);
  ASSERT_TRUE(eventually([&] { return stored() >= 300; }, 60s)) << logs();
  lab_->cut("w1");
  // The partition's length is the scenario itself: the scheduler's heartbeat timeout (2 s) passes in it.
  ASSERT_TRUE(eventually([&] { return status("workers_lost") >= 1; }, 10s)) << logs();
  std::this_thread::sleep_for(3s);
  lab_->heal("w1");
  EXPECT_TRUE(eventually([&] { return status("workers") == 2; }, 30s)) << logs();
  ASSERT_EQ(finish(180s), 0) << logs();
  expect_every_result_once(3000);
  EXPECT_NE(read_file(dir_ / "w1.log").find("registering again"), std::string::npos) << logs();
}

TEST_F(NetnsCluster, TheSchedulerCutOffForFiveSecondsFinishesTheStreamOnce) {
  push(3000);
  ASSERT_TRUE(eventually([&] { return stored() >= 300; }, 60s)) << logs();
  lab_->cut("scheduler");
  std::this_thread::sleep_for(5s);  // the partition's length is the scenario itself
  lab_->heal("scheduler");
  EXPECT_TRUE(eventually([&] { return status("workers") == 2; }, 30s)) << logs();
  ASSERT_EQ(finish(180s), 0) << logs();
  expect_every_result_once(3000);
}

TEST_F(NetnsCluster, AStreamCrossesALossyLinkAndADelayedOne) {
  const auto before = lab_->connect_time("client", lab_->address("scheduler"), 7070);
  for (const char* host : {"scheduler", "w1", "w2", "client"}) {
    std::string how, reason;
    if (!lab_->slow_down(host, 5, 1, TESSERA_LINK_SHAPER, dir_ / ("shaper-" + std::string(host) + ".log"),
                         how, reason))
      GTEST_SKIP() << "SKIPPED: no way to add delay and loss here: " << reason;
    if (std::string(host) == "scheduler")
      std::cerr << "[  NOTE    ] 5 ms of delay and 1% loss by " << how << "\n";
  }
  // Both ends hold what they send 5 ms: a connect's round trip takes 10 ms more than before.
  const auto after = lab_->connect_time("client", lab_->address("scheduler"), 7070);
  ASSERT_GE(before.count(), 0);
  std::cerr << "[  NOTE    ] a connect's round trip: " << before.count() << " us before, " << after.count()
            << " us after\n";
  EXPECT_GE(after - before, 9ms) << "round trip " << before.count() << " us before, " << after.count()
                                 << " us after";
  push(1000);
  ASSERT_EQ(finish(300s), 0) << logs();
  expect_every_result_once(1000);
}

// A client whose link is slower than its results: the answers to its heartbeats wait behind results (in
// the scheduler's send queue and the link's) for longer than its heartbeat timeout (3 s), while bytes keep
// arriving. It stays connected instead of reconnecting and sending everything again over that link.
TEST_F(NetnsCluster, AClientOnALinkSlowerThanItsResultsStaysConnected) {
  std::string reason;
  if (!lab_->limit_receiving_rate("client", 96, TESSERA_LINK_SHAPER, dir_ / "shaper-client.log", reason))
    GTEST_SKIP() << "SKIPPED: no way to limit a link's rate here: " << reason;
  push(600);
  ASSERT_EQ(finish(300s), 0) << logs();
  expect_every_result_once(600);
  EXPECT_EQ(read_file(dir_ / "push.log").find("lost the scheduler"), std::string::npos) << logs();
}

}  // namespace
