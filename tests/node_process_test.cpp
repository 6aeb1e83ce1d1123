// A real tessera-node process on 127.0.0.1 (a free port), started from a TOML config with a plugin, and
// a remote Client using the same API as a local one: futures, delayed, bags, failures, large results.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <tessera/tessera.hpp>

#include "node_process.hpp"

namespace plugin_tasks {
std::int64_t square(std::int64_t x);
std::int64_t add(std::int64_t a, std::int64_t b);
double total(const std::vector<double>& xs);
std::vector<double> ramp(std::int64_t n);
std::int64_t fails_on_seven(std::int64_t x);
}  // namespace plugin_tasks

namespace {

namespace fs = std::filesystem;
using tessera::testing::NodeProcess;

std::string config(const std::string& extra = "") {
  return "[node]\nname = \"test-node\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
         "[worker]\nworkers = 2\nthreads_per_worker = 2\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n" +
         extra;
}

TEST(NodeProcess, RemoteClientHasTheLocalApi) {
  NodeProcess node(config());
  EXPECT_EQ(node.endpoint().rfind("tcp://127.0.0.1:", 0), 0u);
  tessera::Client client(node.endpoint());

  EXPECT_EQ(client.submit(plugin_tasks::square, 12).result(), 144);
  std::vector<std::int64_t> xs(1000);
  std::iota(xs.begin(), xs.end(), 0);
  auto squares = client.gather(client.map(plugin_tasks::square, xs));
  for (std::int64_t i = 0; i < 1000; ++i) ASSERT_EQ(squares[i], i * i);

  // Futures as arguments, delayed graphs and bags run on the node.
  auto a = client.submit(plugin_tasks::square, 3);
  EXPECT_EQ(client.submit(plugin_tasks::add, a, a).result(), 18);
  auto graph = tessera::delayed(plugin_tasks::add)(tessera::delayed(plugin_tasks::square)(std::int64_t{4}),
                                                   std::int64_t{1});
  EXPECT_EQ(client.compute(graph), 17);
  auto bag = tessera::Bag<std::int64_t>::from_sequence(xs, 10).map(plugin_tasks::square);
  EXPECT_EQ(bag.compute(client), squares);

  // A large result travels back as its own frame.
  auto big = client.submit(plugin_tasks::ramp, std::int64_t{1} << 20).result();
  ASSERT_EQ(big.size(), std::size_t{1} << 20);
  EXPECT_EQ(big.back(), double((1 << 20) - 1));
  EXPECT_DOUBLE_EQ(client.submit(plugin_tasks::total, big).result(), double(1 << 20) * ((1 << 20) - 1) / 2);
}

TEST(NodeProcess, FailuresReachTheRemoteClient) {
  NodeProcess node(config());
  tessera::Client client(node.endpoint());
  auto bad = client.submit(plugin_tasks::fails_on_seven, 7);
  auto child = client.submit(plugin_tasks::add, bad, 1);
  try {
    child.result();
    FAIL();
  } catch (const tessera::TaskFailed& e) {
    EXPECT_TRUE(e.cancelled());
    EXPECT_NE(e.message().find("seven is not allowed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(bad.exception()->function(), "fails_on_seven");
  EXPECT_EQ(client.submit(plugin_tasks::fails_on_seven, 8).result(), 8);  // the node goes on
}

std::int64_t only_in_the_client(std::int64_t x) {
  return x;
}
TESSERA_TASK(only_in_the_client);

TEST(NodeProcess, AFunctionTheNodeLacksFailsTheSubmissionClearly) {
  NodeProcess node(config());
  tessera::Client client(node.endpoint());
  auto f = client.submit(only_in_the_client, 1);
  try {
    f.result();
    FAIL();
  } catch (const tessera::TaskFailed& e) {
    EXPECT_NE(e.message().find("unknown task function 'only_in_the_client'"), std::string::npos) << e.what();
  }
  EXPECT_EQ(client.submit(plugin_tasks::square, 2).result(), 4);
}

TEST(NodeProcess, TwoClientsDoNotCollide) {
  NodeProcess node(config());
  tessera::Client first(node.endpoint()), second(node.endpoint());
  auto f = first.submit(plugin_tasks::square, 5);
  auto s = second.submit(plugin_tasks::square, 6);
  EXPECT_EQ(f.result(), 25);
  EXPECT_EQ(s.result(), 36);
  EXPECT_EQ(second.submit(plugin_tasks::add, s, 1).result(), 37);
}

TEST(NodeProcess, StopsCleanlyOnSigterm) {
  NodeProcess node(config());
  EXPECT_EQ(node.stop(), 0);
}

TEST(NodeProcess, BadConfigExitsWithCode2AndNamesTheKey) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-bad-config-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "bad.toml") << "[node]\nname = \"x\"\nrole = \"both\"\n[worker]\nthreads = 3\n";
  const std::string command =
      std::string(TESSERA_NODE_BINARY) + " --config " + (dir / "bad.toml").string() + " 2>&1";
  FILE* out = popen(command.c_str(), "r");
  char buffer[1024] = {};
  std::string text;
  while (fgets(buffer, sizeof buffer, out)) text += buffer;
  const int status = pclose(out);
  fs::remove_all(dir);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(text.find("bad.toml:5: unknown key 'worker.threads'"), std::string::npos) << text;
}

std::string run_command(const std::string& command, int& exit_code) {
  FILE* out = popen((command + " 2>&1").c_str(), "r");
  char buffer[1024];
  std::string text;
  while (fgets(buffer, sizeof buffer, out)) text += buffer;
  exit_code = WEXITSTATUS(pclose(out));
  return text;
}

TEST(NodeProcess, CliReportsStatusAsTextAndJson) {
  NodeProcess node(config());
  tessera::Client client(node.endpoint());
  EXPECT_EQ(client.gather(client.map(plugin_tasks::square, std::vector<std::int64_t>{1, 2, 3})),
            (std::vector<std::int64_t>{1, 4, 9}));
  int code = -1;
  const auto json = run_command(
      std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint() + " status --json", code);
  EXPECT_EQ(code, 0) << json;
  EXPECT_NE(json.find("\"name\":\"test-node\",\"workers\":2,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"tasks_done\":3,"), std::string::npos) << json;
  const auto text =
      run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint() + " status", code);
  EXPECT_NE(text.find("workers         2 (0 retiring)"), std::string::npos) << text;
}

TEST(NodeProcess, CliKeygenWritesAPrivateKeyPair) {
  const fs::path dir = fs::temp_directory_path() / ("tessera-keygen-" + std::to_string(getpid()));
  fs::create_directories(dir);
  int code = -1;
  run_command(std::string(TESSERA_CLI_BINARY) + " keygen --out " + (dir / "node").string(), code);
  EXPECT_EQ(code, 0);
  std::string secret, pub;
  std::ifstream(dir / "node.key") >> secret;
  std::ifstream(dir / "node.pub") >> pub;
  EXPECT_EQ(secret.size(), 40u);
  EXPECT_EQ(pub.size(), 40u);
  EXPECT_EQ(fs::status(dir / "node.key").permissions() & (fs::perms::group_all | fs::perms::others_all),
            fs::perms::none);
  fs::remove_all(dir);
}

TEST(NodeProcess, UnreachableSchedulerIsAClearError) {
  EXPECT_THROW(tessera::Client("tcp://127.0.0.1:1"), tessera::ConnectionError);
}

}  // namespace
