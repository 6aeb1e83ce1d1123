// A cluster of real processes on 127.0.0.1: a scheduler process and worker processes started from TOML
// configs, a remote client with the local API, results moving worker to worker, `tessera workers`, a
// worker killed with SIGKILL mid-graph (its tasks are recomputed, the results are the same), a worker
// that rejoins, and a client that vanishes (its futures are released after the grace period).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <Eigen/SVD>
#include <algorithm>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <sstream>
#include <tessera/array.hpp>
#include <tessera/glm.hpp>
#include <tessera/linalg.hpp>
#include <tessera/tessera.hpp>
#include <thread>

#include "nodes/transport.hpp"
#include "plugin_tasks.hpp"
#include "support/files.hpp"
#include "support/node_process.hpp"
#include "support/proc_status.hpp"
#include "support/scratch_dir.hpp"
#include "test_util.hpp"

namespace {

using tessera::testing::cli;
using tessera::testing::eventually;
using tessera::testing::NodeProcess;
using tessera::testing::proc_status_bytes;
using tessera::testing::read_file;
using tessera::testing::run_command;
using tessera::testing::ScratchDir;
using tessera::testing::status_field;

std::string plugins() {
  return "[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n";
}

std::string scheduler_config(const std::string& extra = "") {
  return "[node]\nname = \"test-scheduler\"\nrole = \"scheduler\"\n[scheduler]\nlisten = "
         "\"tcp://127.0.0.1:0\"\n"
         "heartbeat_interval = 0.1\nheartbeat_timeout = 1.0\n" +
         extra + plugins();
}

std::string worker_config(const std::string& name, const std::string& scheduler) {
  return "[node]\nname = \"" + name +
         "\"\nrole = \"worker\"\n[scheduler]\nheartbeat_interval = 0.1\n[worker]\nscheduler = \"" +
         scheduler + "\"\nthreads_per_worker = 2\nmemory_limit = \"1GiB\"\n" + plugins();
}

class ClusterProcess : public ::testing::Test {
 protected:
  NodeProcess scheduler{scheduler_config()};
  std::unique_ptr<NodeProcess> first{
      std::make_unique<NodeProcess>(worker_config("alpha", scheduler.endpoint()))};
  std::unique_ptr<NodeProcess> second{
      std::make_unique<NodeProcess>(worker_config("beta", scheduler.endpoint()))};
};

// Results that cross between the workers: a tree of additions over squares spread over both (most
// inputs cross), and 8 MiB chunks.
void expect_results_cross(tessera::Client& client) {
  using tessera::delayed;
  std::vector<tessera::Delayed<std::int64_t>> level;
  for (std::int64_t i = 0; i < 256; ++i) level.push_back(delayed(plugin_tasks::square)(i));
  while (level.size() > 1) {
    std::vector<tessera::Delayed<std::int64_t>> next;
    for (std::size_t i = 0; i < level.size(); i += 2)
      next.push_back(delayed(plugin_tasks::add)(level[i], level[i + 1]));
    level = std::move(next);
  }
  std::int64_t expected = 0;
  for (std::int64_t i = 0; i < 256; ++i) expected += i * i;
  EXPECT_EQ(client.compute(level[0]), expected);
  std::vector<tessera::Delayed<double>> sums;
  for (std::int64_t i = 0; i < 8; ++i)
    sums.push_back(delayed(plugin_tasks::chunk_sum)(delayed(plugin_tasks::ramp)(std::int64_t{1} << 20), i));
  const double ramp_sum = double(1 << 20) * ((1 << 20) - 1) / 2;
  const auto got = client.compute(sums);
  for (std::int64_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(got[i], ramp_sum + double(i));
}

TEST_F(ClusterProcess, ClientApiRunsOnWorkerProcesses) {
  tessera::Client client(scheduler.endpoint());
  std::vector<std::int64_t> xs(2000);
  std::iota(xs.begin(), xs.end(), 0);
  auto squares = client.gather(client.map(plugin_tasks::square, xs));
  for (std::int64_t i = 0; i < 2000; ++i) ASSERT_EQ(squares[i], i * i);

  expect_results_cross(client);
  EXPECT_EQ(status_field(scheduler.endpoint(), "workers"), 2u);
}

// Where a worker says peers on its host reach it ("ipc:///tmp/tessera-ipc-XXXXXX/socket"), from its log.
std::string local_endpoint_in(const NodeProcess& worker) {
  const std::string marker = "those on this host at ";
  std::string found;
  EXPECT_TRUE(eventually([&] {
    const std::string log = worker.log();
    const auto at = log.find(marker);
    if (at == std::string::npos) return false;
    found = log.substr(at + marker.size(), log.find('\n', at) - at - marker.size());
    return true;
  }));
  return found;
}

std::string same_host_worker(const std::string& name, const std::string& scheduler,
                             const std::string& extra) {
  return "[node]\nname = \"" + name +
         "\"\nrole = \"worker\"\nlog_level = \"debug\"\n[worker]\nscheduler = \"" + scheduler +
         "\"\nthreads_per_worker = 2\n" + extra + plugins();
}

// Workers on one host (one boot, user and namespaces, announced at hello) dial each other's socket file,
// not the TCP address they give; the scheduler tells them so only because their hosts match.
TEST(ClusterProcessSameHost, WorkersOnOneHostSendChunksThroughASocketFile) {
  NodeProcess scheduler(scheduler_config(), true);
  NodeProcess alpha(same_host_worker("alpha", scheduler.endpoint(), ""), true);
  NodeProcess beta(same_host_worker("beta", scheduler.endpoint(), ""), true);
  const std::string alpha_socket = local_endpoint_in(alpha), beta_socket = local_endpoint_in(beta);
  ASSERT_EQ(alpha_socket.rfind("ipc:///", 0), 0u) << alpha.log();
  ASSERT_NE(alpha_socket, beta_socket);
  ASSERT_TRUE(eventually([&] { return status_field(scheduler.endpoint(), "workers") == 2u; }));
  tessera::Client client(scheduler.endpoint());
  expect_results_cross(client);
  const std::string logs = alpha.log() + beta.log();
  EXPECT_TRUE(logs.find("on this host at " + alpha_socket) != std::string::npos ||
              logs.find("on this host at " + beta_socket) != std::string::npos)
      << logs;
  EXPECT_EQ(logs.find("cannot reach worker"), std::string::npos) << logs;
  EXPECT_NE(scheduler.log().find("those on its host at " + alpha_socket), std::string::npos)
      << scheduler.log();
}

// A socket file out of reach (here: removed; elsewhere a private /tmp) costs a failed dial, then the
// worker sends over TCP as to a worker on another host, and nothing is lost.
TEST(ClusterProcessSameHost, AnUnreachableSocketFileFallsBackToTcp) {
  NodeProcess scheduler(scheduler_config(), true);
  NodeProcess alpha(same_host_worker("alpha", scheduler.endpoint(), ""), true);
  NodeProcess beta(same_host_worker("beta", scheduler.endpoint(), ""), true);
  for (const auto* worker : {&alpha, &beta}) {
    const std::string socket = local_endpoint_in(*worker);
    ASSERT_EQ(socket.rfind("ipc://", 0), 0u);
    ASSERT_TRUE(std::filesystem::remove(socket.substr(6))) << socket;
  }
  tessera::Client client(scheduler.endpoint());
  expect_results_cross(client);
  const std::string logs = alpha.log() + beta.log();
  EXPECT_NE(logs.find("on this host at ipc://"), std::string::npos) << logs;
  EXPECT_NE(logs.find("); using tcp://127.0.0.1:"), std::string::npos) << logs;
}

// worker.same_host_ipc = false: no socket file, and peers on the host use worker.listen.
TEST(ClusterProcessSameHost, TurnedOffWorkersUseTheirListenAddress) {
  NodeProcess scheduler(scheduler_config(), true);
  NodeProcess alpha(same_host_worker("alpha", scheduler.endpoint(), "same_host_ipc = false\n"), true);
  NodeProcess beta(same_host_worker("beta", scheduler.endpoint(), "same_host_ipc = false\n"), true);
  ASSERT_TRUE(eventually([&] { return status_field(scheduler.endpoint(), "workers") == 2u; }));
  tessera::Client client(scheduler.endpoint());
  expect_results_cross(client);
  const std::string logs = alpha.log() + beta.log() + scheduler.log();
  EXPECT_EQ(logs.find("on this host"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("ipc://"), std::string::npos) << logs;
}

TEST_F(ClusterProcess, ArraysAndTheirSvdRunAcrossWorkerProcesses) {
  tessera::Client client(scheduler.endpoint());
  tessera::ArrayOptions options;
  options.chunks = {250, 40};
  options.seed = 3;
  options.distribution = "normal";
  // Random chunks are made on the workers; the literal chunks of a travel in the submission.
  auto x = tessera::Array::random({2000, 40}, options);
  tessera::LocalCluster local{{.workers = 1, .threads_per_worker = 1}};
  tessera::Client local_client{local};
  const Eigen::MatrixXd m = x.compute(local_client);
  EXPECT_EQ(x.compute(client), m);
  auto a = tessera::Array::from_eigen(m, options);
  EXPECT_TRUE((a.T().dot(a) * 0.5).compute(client).isApprox(0.5 * m.transpose() * m, 1e-12));
  auto f = tessera::linalg::svd(x);
  auto [u, s, vt] = tessera::compute(client, f.u, f.s, f.vt);
  const Eigen::VectorXd reference = Eigen::JacobiSVD<Eigen::MatrixXd>(m).singularValues();
  for (Eigen::Index i = 0; i < reference.size(); ++i)
    EXPECT_NEAR(s(i, 0), reference(i), 1e-12 * reference(0));
  EXPECT_LT((u * s.col(0).asDiagonal() * vt - m).cwiseAbs().maxCoeff(), 1e-11);
  // Sparse chunks cross processes too.
  options.backend = "sparse";
  options.density = 0.1;
  auto sp = tessera::Array::random({2000, 40}, options);
  EXPECT_EQ(sp.sum(0).compute(client), sp.sum(0).compute(local_client));
}

// Rows x (standard normal, 8 columns, 500-row chunks) and Bernoulli labels y from the logistic model with
// coefficients `weight`, both persisted on the cluster.
std::pair<tessera::Array, tessera::Array> logistic_rows(tessera::Client& client, std::int64_t rows,
                                                        double weight, std::uint64_t seed) {
  tessera::ArrayOptions normal;
  normal.chunks = {500, 8};
  normal.seed = seed;
  normal.distribution = "normal";
  const auto x = tessera::Array::random({rows, 8}, normal).persist(client);
  tessera::ArrayOptions uniform;
  uniform.chunks = {500};
  uniform.seed = seed + 1;
  const auto y =
      (tessera::Array::random({rows}, uniform) < x.dot(tessera::Array::full({8}, weight)).sigmoid())
          .persist(client);
  return {x, y};
}

// A GLM fit whose partitions live in two worker processes: the solver on the scheduler's side talks to
// them over ZeroMQ each round, and the coefficients equal an embedded fit's; bad data is reported with
// its row from the worker that holds it.
TEST_F(ClusterProcess, GlmFitsAcrossWorkerProcesses) {
  tessera::Client client(scheduler.endpoint());
  const auto [x, y] = logistic_rows(client, 3000, 0.4, 11);
  for (const std::string solver : {"lbfgs", "admm"}) {
    tessera::glm::LogisticRegression remote(
        {.solver = solver, .regularizer = "l2", .lambda = 0.01, .tol = 1e-9});
    remote.fit(client, x, y);
    EXPECT_TRUE(remote.report().converged) << solver;
    tessera::LocalCluster local{{.workers = 1, .threads_per_worker = 1}};
    tessera::Client local_client{local};
    tessera::glm::LogisticRegression embedded(
        {.solver = "newton", .regularizer = "l2", .lambda = 0.01, .tol = 1e-12});
    embedded.fit(local_client, tessera::Array::from_eigen(x.compute(client), {.chunks = {500}}),
                 tessera::Array::from_eigen(y.compute_vector(client), {.chunks = {500}}));
    EXPECT_LE((remote.coef() - embedded.coef()).lpNorm<Eigen::Infinity>(), 1e-5) << solver;
    EXPECT_NEAR(remote.intercept(), embedded.intercept(), 1e-5) << solver;
    EXPECT_GT(remote.report().rounds, 0);
  }
  // Labels that are not 0/1 (y * 2), found where they are held.
  try {
    tessera::glm::LogisticRegression().fit(client, x, y * 2.0);
    ADD_FAILURE() << "labels of 2 were accepted";
  } catch (const tessera::glm::FitError& e) {
    EXPECT_NE(std::string(e.what()).find("label other than 0 or 1"), std::string::npos) << e.what();
  }
  // The cluster still works.
  EXPECT_NEAR(x.sum().compute_scalar(client), x.compute(client).sum(), 1e-9);
}

TEST_F(ClusterProcess, CliListsWorkersAsTextAndJson) {
  const auto json = cli(scheduler.endpoint(), "workers --json");
  EXPECT_NE(json.find("\"name\":\"alpha\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"name\":\"beta\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"threads\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"memory_limit\":1073741824"), std::string::npos) << json;
  EXPECT_NE(json.find("\"address\":\"tcp://127.0.0.1:"), std::string::npos) << json;
  const auto text = cli(scheduler.endpoint(), "workers");
  EXPECT_NE(text.find("alpha"), std::string::npos) << text;
  EXPECT_NE(text.find("1.0 GiB"), std::string::npos) << text;
}

TEST_F(ClusterProcess, KilledWorkerTasksAreRecomputedAndAWorkerRejoins) {
  tessera::Client client(scheduler.endpoint());
  // 2,000 x 10 ms on 2 x 2 threads: 5 s of work, so the worker is killed mid-way even when each status
  // poll (a CLI process) takes a second on a loaded machine.
  std::vector<std::int64_t> xs(2000);
  std::iota(xs.begin(), xs.end(), 0);
  // A map and a layer that reads it: results held on the killed worker are needed again.
  auto squares = client.map(plugin_tasks::slow_square, xs);
  auto sums = client.map(plugin_tasks::add, squares, xs);
  ASSERT_TRUE(
      tessera::testing::eventually([&] { return status_field(scheduler.endpoint(), "tasks_done") >= 100; }));
  second->kill_hard();
  const auto values = client.gather(sums);
  for (std::int64_t i = 0; i < 2000; ++i) ASSERT_EQ(values[i], i * i + i);
  EXPECT_EQ(status_field(scheduler.endpoint(), "workers_lost"), 1u);
  EXPECT_EQ(status_field(scheduler.endpoint(), "workers"), 1u);
  EXPECT_GT(status_field(scheduler.endpoint(), "tasks_recomputed"), 0u);

  // A worker started again joins and takes work.
  second = std::make_unique<NodeProcess>(worker_config("beta-again", scheduler.endpoint()));
  EXPECT_EQ(status_field(scheduler.endpoint(), "workers"), 2u);
  EXPECT_NE(cli(scheduler.endpoint(), "workers").find("beta-again"), std::string::npos);
  auto more = client.gather(client.map(plugin_tasks::square, xs));
  EXPECT_EQ(more[1999], 1999 * 1999);
}

// A worker killed in the middle of a GLM fit fails the fit at once (not after a round timeout), naming
// the worker; fitting again works on what the cluster recomputed.
TEST_F(ClusterProcess, AWorkerLostDuringAGlmFitFailsItAndARefitWorks) {
  tessera::Client client(scheduler.endpoint());
  const auto [x, y] = logistic_rows(client, 4000, 0.5, 5);
  (void)(x.sum() + y.sum()).compute_scalar(client);
  // The fit adds one task per partition (8); once they are done its solver is loading or running.
  const auto before = status_field(scheduler.endpoint(), "tasks_done");
  std::atomic<bool> failed{false};
  std::string error;
  std::thread fit([&] {
    try {
      // Minutes of rounds without the loss.
      tessera::glm::LogisticRegression({.solver = "gradient_descent", .max_iter = 300000, .tol = 0})
          .fit(client, x, y);
    } catch (const tessera::glm::FitError& e) {
      error = e.what();
    }
    failed = true;
  });
  ASSERT_TRUE(tessera::testing::eventually(
      [&] { return status_field(scheduler.endpoint(), "tasks_done") >= before + 8; }));
  second->kill_hard();
  EXPECT_TRUE(tessera::testing::eventually([&] { return failed.load(); }, std::chrono::seconds(60)));
  fit.join();
  // Killed while the fit ran ("left the cluster during the fit") or just before it started ("held by a
  // worker that left"): either way the fit fails at once, naming the cause.
  EXPECT_NE(error.find("left"), std::string::npos) << error;
  tessera::glm::LogisticRegression again({.solver = "newton", .tol = 1e-10});
  again.fit(client, x, y);
  EXPECT_TRUE(again.report().converged);
}

// A client killed (SIGKILL, no goodbye) at many points of a push: at set 0, at the batch and in-flight
// boundaries, mid-batch, and after its close. Each time the stream is closed for it within the grace
// plus the time its accepted sets take, and the store holds a contiguous prefix of ids, each once, each
// with its own result: what the node accepted is all run and stored, nothing else.
TEST(ClusterProcessGrace, AClientKilledAtAnyPointOfAPushLeavesAContiguousPrefixEachIdOnce) {
  NodeProcess scheduler{scheduler_config("client_grace = 0.5\n")};
  NodeProcess alpha{worker_config("alpha", scheduler.endpoint())};
  NodeProcess beta{worker_config("beta", scheduler.endpoint())};
  ASSERT_TRUE(eventually([&] { return status_field(scheduler.endpoint(), "workers") == 2u; }));
  constexpr int kSets = 6000;
  constexpr int kAfterClose = kSets;  // the kill comes after close()
  std::vector<int> kill_points{0, 1, 511, 1023, 1024, 1025, 2047, 4097, kAfterClose};
  std::mt19937 random(46);
  for (int extra = 0; extra < 4; ++extra) kill_points.push_back(static_cast<int>(random() % kSets));
  std::uint64_t stream_id = 0;
  for (const int kill_at : kill_points) {
    SCOPED_TRACE("killed at set " + std::to_string(kill_at));
    stream_id += 1;
    const pid_t child = fork();
    if (child == 0) {
      tessera::Client client(scheduler.endpoint());
      tessera::StreamOptions options;
      options.max_in_flight = 1024;
      options.config.set("pause_us", tessera::to_value(std::int64_t{100}));
      auto stream = client.stream("pause_square", std::move(options));
      for (int i = 0; i < kSets; ++i) {
        if (i == kill_at) raise(SIGKILL);
        stream.push(double(i));
      }
      stream.close();
      raise(SIGKILL);
    }
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the client did not die as planned";
    const std::string which = "results --stream " + std::to_string(stream_id);
    const bool closed = eventually(
        [&] { return cli(scheduler.endpoint(), which).find("\"closed\":true") != std::string::npos; },
        std::chrono::seconds(30));
    ASSERT_TRUE(closed) << "the stream was not closed 30 s after its client died: "
                        << cli(scheduler.endpoint(), which);
    const auto csv = cli(scheduler.endpoint(), which + " --format csv");
    std::istringstream lines(csv);
    std::string line;
    std::getline(lines, line);  // header
    std::vector<int> seen(kSets, 0);
    std::uint64_t rows = 0;
    while (std::getline(lines, line)) {
      const auto id = std::stoull(line.substr(0, line.find(',')));
      ASSERT_LT(id, std::uint64_t(kSets));
      seen[id] += 1;
      rows += 1;
    }
    // Ids 0 .. rows-1, each once: no gap, no repeat.
    for (std::uint64_t id = 0; id < rows; ++id) ASSERT_EQ(seen[id], 1) << "id " << id << " of " << rows;
    EXPECT_LE(rows, static_cast<std::uint64_t>(std::min(kill_at, kSets)));
    std::cout << "killed at set " << kill_at << ": " << rows << " stored, closed\n";
  }
}

TEST(ClusterProcessGrace, VanishedClientIsReleasedAfterTheGracePeriod) {
  NodeProcess scheduler{scheduler_config("client_grace = 0.5\n")};
  NodeProcess worker{worker_config("alpha", scheduler.endpoint())};
  const pid_t child = fork();
  if (child == 0) {
    // A client that holds results and vanishes without a goodbye.
    tessera::Client client(scheduler.endpoint());
    std::vector<std::int64_t> xs(100);
    std::iota(xs.begin(), xs.end(), 0);
    auto futures = client.map(plugin_tasks::square, xs);
    client.gather(futures);
    // ... and a stream it never closes.
    auto stream = client.stream("pause_square");
    for (int i = 0; i < 100; ++i) stream.push(double(i));
    stream.flush();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (stream.completed() < 100 && std::chrono::steady_clock::now() < deadline) stream.next(deadline);
    _exit(stream.completed() == 100 ? 0 : 3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(tessera::testing::eventually(
      [&] { return status_field(scheduler.endpoint(), "results_held") == 0; }, std::chrono::seconds(10)));
  EXPECT_EQ(status_field(scheduler.endpoint(), "tasks_done"), 100u);
  // Its stream was closed for it: every result stored, the stream recorded as closed.
  EXPECT_TRUE(tessera::testing::eventually(
      [&] {
        return cli(scheduler.endpoint(), "results --stream 1").find("\"closed\":true") != std::string::npos;
      },
      std::chrono::seconds(10)));
  EXPECT_EQ(cli(scheduler.endpoint(), "results --stream 1 --format count"), "100\n");
}

}  // namespace

namespace {

// The shipped config/scheduler.toml and config/worker.toml, on a free port, with the examples plugin given
// by its absolute path and the store beside the config (the test writes them elsewhere).
std::string shipped(const std::string& file, const std::string& scheduler_address) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/config/" + file);
  std::stringstream text;
  text << in.rdbuf();
  std::string out;
  std::string line;
  while (std::getline(text, line)) {
    if (line.rfind("paths = ", 0) == 0) line = "paths = [\"" TESSERA_EXAMPLES_PLUGIN "\"]";
    if (line.rfind("listen = \"tcp://127.0.0.1:7070\"", 0) == 0) line = "listen = \"tcp://127.0.0.1:0\"";
    if (line.rfind("scheduler = ", 0) == 0) line = "scheduler = \"" + scheduler_address + "\"";
    // Beside the config the test writes (removed with it), not the shared one of build/.
    if (line.rfind("data_dir = \"../", 0) == 0) line = "data_dir = \"store\"";
    out += line + "\n";
  }
  return out;
}

// A worker whose plugin defines a function differently from the scheduler's runs none of its tasks: each
// fails naming both definitions, instead of giving the wrong answer or waiting for ever.
TEST(ClusterProcessDefinitions, AWorkerThatDefinesAFunctionDifferentlyFailsItsTasksNamingBoth) {
  NodeProcess scheduler{
      "[node]\nname = \"test-scheduler\"\nrole = \"scheduler\"\n[scheduler]\nlisten = "
      "\"tcp://127.0.0.1:0\"\n[plugins]\npaths = [\"" TESSERA_NODE_ONLY_PLUGIN "\"]\n"};
  NodeProcess impostor{"[node]\nname = \"impostor\"\nrole = \"worker\"\n[worker]\nscheduler = \"" +
                       scheduler.endpoint() +
                       "\"\nthreads_per_worker = 1\n[plugins]\npaths = [\"" TESSERA_IMPOSTOR_PLUGIN "\"]\n"};
  tessera::Client client(scheduler.endpoint());
  auto cube = client.submit_by_name("node_only_cube", {tessera::Value(std::int64_t{3})});
  try {
    const auto got = cube.result().as_int();
    FAIL() << "the worker ran its own node_only_cube: " << got;
  } catch (const tessera::TaskFailed& e) {
    EXPECT_NE(
        e.message().find("task function 'node_only_cube': the scheduler defines it as node_only_cube(int) "
                         "-> int from libtessera_node_only_plugin.so build "),
        std::string::npos)
        << e.message();
    EXPECT_NE(
        e.message().find("this worker as node_only_cube(int) -> int from libtessera_impostor_plugin.so"),
        std::string::npos)
        << e.message();
  }
}

TEST(ClusterProcessExample, RemoteRunGivesTheEmbeddedResults) {
  NodeProcess scheduler{shipped("scheduler.toml", "")};
  NodeProcess first{shipped("worker.toml", scheduler.endpoint())};
  NodeProcess second{shipped("worker.toml", scheduler.endpoint())};
  const ScratchDir scratch("tessera-example");
  const auto& dir = scratch.path();
  int code = 0;
  const std::string example = TESSERA_EXAMPLE_BINARY;
  auto out = run_command(example + " --sets 120 --output " + (dir / "embedded.csv").string(), code);
  ASSERT_EQ(code, 0) << out;
  out = run_command(example + " --sets 120 --scheduler " + scheduler.endpoint() + " --output " +
                        (dir / "remote.csv").string(),
                    code);
  ASSERT_EQ(code, 0) << out;
  const auto embedded = read_file((dir / "embedded.csv").string());
  EXPECT_GT(embedded.size(), 120u);
  EXPECT_EQ(read_file((dir / "remote.csv").string()), embedded);
}

}  // namespace

namespace {

struct KeyFiles {
  std::string public_key, secret_key;  // Z85
  std::string public_file, secret_file;
};

KeyFiles write_keys(const std::filesystem::path& dir, const std::string& name) {
  const auto keys = tessera::transport::generate_curve_keys();
  KeyFiles out{keys.public_key, keys.secret_key, (dir / (name + ".pub")).string(),
               (dir / (name + ".key")).string()};
  std::ofstream(out.public_file) << keys.public_key << "\n";
  std::ofstream(out.secret_file) << keys.secret_key << "\n";
  return out;
}

std::string security(const KeyFiles& own, const std::string& scheduler_key,
                     const std::vector<std::string>& authorized) {
  std::string list;
  for (const auto& key : authorized) list += (list.empty() ? "\"" : ", \"") + key + "\"";
  return "[security]\ncurve = true\npublic_key_file = \"" + own.public_file + "\"\nsecret_key_file = \"" +
         own.secret_file + "\"\nscheduler_public_key = \"" + scheduler_key + "\"\nauthorized_keys = [" +
         list + "]\n";
}

TEST(ClusterProcessCurve, EncryptedClusterWorksAndAStrangerIsRefused) {
  const ScratchDir scratch("tessera-curve");
  const auto& dir = scratch.path();
  const auto scheduler_keys = write_keys(dir, "scheduler");
  const auto alpha_keys = write_keys(dir, "alpha"), beta_keys = write_keys(dir, "beta");
  const auto client_keys = write_keys(dir, "client"), stranger_keys = write_keys(dir, "stranger");
  const std::vector<std::string> workers{alpha_keys.public_key, beta_keys.public_key};
  NodeProcess scheduler{
      scheduler_config() +
      security(scheduler_keys, "", {alpha_keys.public_key, beta_keys.public_key, client_keys.public_key})};
  // Workers accept inputs only from each other.
  NodeProcess alpha{worker_config("alpha", scheduler.endpoint()) +
                    security(alpha_keys, scheduler_keys.public_key, workers)};
  NodeProcess beta{worker_config("beta", scheduler.endpoint()) +
                   security(beta_keys, scheduler_keys.public_key, workers)};

  tessera::Client client(scheduler.endpoint(),
                         tessera::ConnectOptions{.public_key = client_keys.public_key,
                                                 .secret_key = client_keys.secret_key,
                                                 .scheduler_public_key = scheduler_keys.public_key});
  using tessera::delayed;
  std::vector<tessera::Delayed<double>> sums;
  for (std::int64_t i = 0; i < 8; ++i)
    sums.push_back(delayed(plugin_tasks::chunk_sum)(delayed(plugin_tasks::ramp)(std::int64_t{1} << 16), i));
  const double ramp_sum = double(1 << 16) * ((1 << 16) - 1) / 2;
  const auto got = client.compute(sums);
  for (std::int64_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(got[i], ramp_sum + double(i));

  // A worker with a key the scheduler was not given never joins: the node stops with the reason.
  int code = 0;
  const auto config = dir / "stranger.toml";
  std::ofstream(config) << worker_config("stranger", scheduler.endpoint())
                        << security(stranger_keys, scheduler_keys.public_key, workers);
  const auto out = run_command(std::string(TESSERA_NODE_BINARY) + " --config " + config.string(), code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("CURVE key"), std::string::npos) << out;
  EXPECT_EQ(tessera::Client(scheduler.endpoint(),
                            tessera::ConnectOptions{.public_key = client_keys.public_key,
                                                    .secret_key = client_keys.secret_key,
                                                    .scheduler_public_key = scheduler_keys.public_key})
                .submit(plugin_tasks::square, 9)
                .result(),
            81);
}

}  // namespace

namespace {

std::string stored_ids_csv(const NodeProcess& scheduler, std::uint64_t stream) {
  return cli(scheduler.endpoint(), "results --stream " + std::to_string(stream) + " --format csv");
}

// A stream from a remote client across a scheduler process and two worker processes; one worker is
// killed with SIGKILL mid-stream: its parameter sets run again on the other, and the store holds
// exactly one result per id.
TEST_F(ClusterProcess, StreamSurvivesAKilledWorkerExactlyOnce) {
  tessera::Client client(scheduler.endpoint());
  tessera::StreamOptions options;
  options.config.set("pause_us", tessera::to_value(std::int64_t{40}));
  auto stream = client.stream("pause_square", std::move(options));
  std::atomic<std::uint64_t> answered{0}, named{0};
  // Who ran each set, as the client is told it: one of the two workers, for every set.
  stream.on_result([&](const tessera::StreamRecord& r) {
    answered += 1;
    if (r.node == "alpha" || r.node == "beta") named += 1;
  });
  const int n = 100000;
  std::thread saboteur([&] {
    tessera::testing::eventually([&] { return answered.load() >= 10000; }, std::chrono::seconds(60));
    second->kill_hard();
  });
  for (int i = 0; i < n; ++i) stream.push(double(i));
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(120)));
  saboteur.join();
  EXPECT_EQ(answered.load(), std::uint64_t(n));
  EXPECT_EQ(named.load(), std::uint64_t(n));
  const auto csv = stored_ids_csv(scheduler, stream.id());
  std::vector<int> seen(n, 0);
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // header
  int rows = 0;
  while (std::getline(lines, line)) {
    const auto id = std::stoull(line.substr(0, line.find(',')));
    ASSERT_LT(id, std::uint64_t(n));
    seen[id] += 1;
    ++rows;
  }
  EXPECT_EQ(rows, n);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), n);  // every id exactly once
  EXPECT_NE(csv.find(",error,13 is refused,"), std::string::npos) << csv.substr(0, 2000);
  EXPECT_EQ(status_field(scheduler.endpoint(), "workers_lost"), 1u);

  // The client library queries the node's store through the connection.
  auto stored = client.results(stream.id());
  EXPECT_EQ(stored.count(), std::uint64_t(n));
  EXPECT_EQ(stored.where("failed").count(), 1u);
  EXPECT_EQ(stored.get(13)->error, "13 is refused");
  const auto some = stored.where("result >= 100").range(0, 20);
  ASSERT_EQ(some.size(), 9u);  // ids 10..19 but 13, whose simulation refused it
  EXPECT_EQ(some.front().id, 10u);
  EXPECT_DOUBLE_EQ(tessera::from_value<double>(some.front().value), 100.0);
  EXPECT_DOUBLE_EQ(tessera::from_value<double>(some.front().parameters), 10.0);
  // And as the store keeps it, through the node's query: every set, not only failed ones.
  std::map<std::string, std::uint64_t> ran_on;
  for (const auto& r : stored.range(0, n)) ran_on[r.node] += 1;
  EXPECT_EQ(ran_on["alpha"] + ran_on["beta"], std::uint64_t(n)) << ran_on.size() << " names";
  EXPECT_GT(ran_on["alpha"], 0u);
  EXPECT_GT(ran_on["beta"], 0u);
  const auto summary = stored.where("id < 100 and ok").summary("result", 3);
  EXPECT_EQ(summary.count, 99u);
  EXPECT_DOUBLE_EQ(summary.max, 99.0 * 99.0);
  EXPECT_EQ(summary.histogram.size(), 3u);
  EXPECT_THROW(stored.where("result >> 1"), tessera::QueryError);
}

TEST(ClusterProcessStreams, CliPushRefusesAMalformedFileWholeOrWithNoCheckKeepsTheRowsBefore) {
  NodeProcess node(
      "[node]\nname = \"streams\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\n"
      "workers = 1\nthreads_per_worker = 2\n" +
      plugins());
  const ScratchDir scratch("tessera-cli-stream");
  const auto& dir = scratch.path();
  const auto input = (dir / "params.csv").string();
  std::ofstream(input) << "x\n1\n2\n3\nfour\n5\n";
  int code = 0;
  const std::string cli_base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  // Read whole first: the bad row leaves no stream.
  auto out = run_command(cli_base + " stream push --simulation pause_square --quiet --input " + input, code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("params.csv:5: cell 1 'four' is not a number; nothing was pushed"), std::string::npos)
      << out;
  out = run_command(cli_base + " stream list", code);
  EXPECT_EQ(out, "no streams\n");
  // With --no-check it pushes as it reads, up to the bad row.
  out = run_command(cli_base + " stream push --simulation pause_square --quiet --no-check --input " + input,
                    code);
  EXPECT_EQ(code, 2) << out;
  EXPECT_NE(out.find("params.csv:5: cell 1 'four' is not a number"), std::string::npos) << out;
  EXPECT_NE(out.find("the 3 parameter sets before it were pushed"), std::string::npos) << out;
  out = run_command(cli_base + " results --stream 1 --format count", code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "3\n");
  out = run_command(cli_base + " results --stream 1 --where 'result > 3'", code);
  EXPECT_NE(out.find("\"count\":2"), std::string::npos) << out;
  std::ofstream(input) << "x\n1\n2\n";
  out = run_command(cli_base + " stream push --simulation no_such_sim --quiet --input " + input, code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("unknown simulation 'no_such_sim'"), std::string::npos) << out;
  EXPECT_NE(out.find("pause_square"), std::string::npos) << out;
  out = run_command(cli_base + " results --stream 1 --where 'result >> 3'", code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("position"), std::string::npos) << out;
}

// Two worker processes started from one config: the second is told apart by its process
// (NAME-HOSTNAME-PID) wherever workers are named, and the scheduler says why.
TEST(ClusterProcessNames, TwoWorkersOfOneNameAreToldApartByTheirProcess) {
  NodeProcess scheduler{scheduler_config(), true};
  NodeProcess first{worker_config("twin", scheduler.endpoint())};
  ASSERT_TRUE(
      tessera::testing::eventually([&] { return status_field(scheduler.endpoint(), "workers") == 1; }));
  NodeProcess second{worker_config("twin", scheduler.endpoint())};
  ASSERT_TRUE(
      tessera::testing::eventually([&] { return status_field(scheduler.endpoint(), "workers") == 2; }));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string renamed = "twin-" + std::string(host) + "-" + std::to_string(second.pid());
  const auto workers = cli(scheduler.endpoint(), "workers --json");
  EXPECT_NE(workers.find("\"name\":\"twin\""), std::string::npos) << workers;
  EXPECT_NE(workers.find("\"name\":\"" + renamed + "\""), std::string::npos) << workers;
  EXPECT_NE(
      scheduler.log().find("registered as 'twin', a name another worker holds: it is called '" + renamed),
      std::string::npos)
      << scheduler.log();
}

std::uint64_t bytes_under(const std::filesystem::path& dir) {
  std::uint64_t total = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.is_regular_file()) total += entry.file_size();
  return total;
}

// Streams can be found and removed: `tessera stream list` and `drop`, Client::streams and drop_stream. A
// dropped stream's results are gone and the disk space comes back; an open or unknown one is refused.
TEST(ClusterProcessStreams, StreamsAreListedAndADroppedOneGivesItsSpaceBack) {
  const ScratchDir scratch("tessera-stream-drop");
  const auto store = scratch.path() / "store";
  NodeProcess node("[node]\nname = \"streams\"\nrole = \"both\"\ndata_dir = \"" + store.string() +
                   "\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\nworkers = 1\n"
                   "threads_per_worker = 2\n" +
                   plugins());
  tessera::Client client(node.endpoint());
  constexpr int n = 200000;
  {
    tessera::StreamOptions options;
    options.config.set("pause_us", tessera::to_value(std::int64_t{0}));
    auto big = client.stream("pause_square", std::move(options));
    for (int i = 0; i < n; ++i) big.push(double(i));
    big.close();
    ASSERT_TRUE(big.wait(std::chrono::steady_clock::now() + std::chrono::seconds(120)));
  }
  auto open = client.stream("pause_square");  // stream 2: open, never closed here
  open.push(1.0);
  int code = 0;
  const std::string cli_base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  auto out = run_command(cli_base + " stream list --json", code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("{\"ended_early\":\"\",\"id\":1,\"input_sets\":0,\"pushed\":200000,\"simulation\":"
                     "\"pause_square\",\"state\":\"finished\",\"stored\":200000}"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("{\"ended_early\":\"\",\"id\":2,\"input_sets\":0,\"pushed\":1,\"simulation\":"
                     "\"pause_square\",\"state\":\"open\""),
            std::string::npos)
      << out;
  out = run_command(cli_base + " stream drop 2", code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("stream 2 has not finished"), std::string::npos) << out;
  out = run_command(cli_base + " stream drop 99", code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("no stream 99 in this node's store"), std::string::npos) << out;

  const auto before = bytes_under(store);
  out = run_command(cli_base + " stream drop 1", code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "dropped stream 1: its results and records are deleted\n");
  const auto after = bytes_under(store);
  std::fprintf(stderr, "store: %llu bytes before the drop, %llu after\n",
               static_cast<unsigned long long>(before), static_cast<unsigned long long>(after));
  EXPECT_LT(after + (2u << 20), before) << "the dropped stream's space did not come back";
  out = run_command(cli_base + " results --stream 1 --format count", code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("no stream 1"), std::string::npos) << out;
  const auto listed = client.streams();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, 2u);
  EXPECT_THROW(client.drop_stream(1), tessera::QueryError);
  open.close();
  ASSERT_TRUE(open.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  client.drop_stream(2);
  EXPECT_TRUE(client.streams().empty());
  out = run_command(cli_base + " stream list", code);
  EXPECT_EQ(out, "no streams\n");
}

// Every value of `key` in a JSON text, in order (numbers only).
std::vector<std::uint64_t> json_numbers(const std::string& json, const std::string& key) {
  std::vector<std::uint64_t> out;
  const std::string needle = "\"" + key + "\":";
  for (auto at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1))
    out.push_back(std::stoull(json.substr(at + needle.size())));
  return out;
}

// Memory as the machine counts it: each worker shows its process's resident bytes (VmRSS), beside the
// bytes Tessera manages, and workers of one process say they share it.
TEST(ClusterProcessMemory, WorkersShowTheirProcessResidentMemoryAndWhoSharesIt) {
  const auto near = [](std::uint64_t shown, std::uint64_t actual) {
    const double a = static_cast<double>(actual), d = std::abs(static_cast<double>(shown) - a);
    return actual > 0 && d <= 0.2 * a + (4 << 20);  // an idle process, read moments apart
  };
  {
    NodeProcess scheduler{scheduler_config()};
    NodeProcess alpha{worker_config("alpha", scheduler.endpoint())};
    std::string json;
    ASSERT_TRUE(tessera::testing::eventually([&] {
      json = cli(scheduler.endpoint(), "workers --json");
      const auto shown = json_numbers(json, "process_rss");
      return shown.size() == 1 && shown[0] > 0;
    })) << json;
    const auto shown = json_numbers(json, "process_rss")[0],
               actual = tessera::testing::resident_bytes(alpha.pid());
    EXPECT_TRUE(near(shown, actual)) << "shown " << shown << ", VmRSS " << actual;
    EXPECT_EQ(json_numbers(json, "process_workers"), std::vector<std::uint64_t>{1}) << json;
    EXPECT_EQ(json_numbers(json, "managed_bytes").size(), 1u) << json;
  }
  NodeProcess both(
      "[node]\nname = \"pair\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\n"
      "workers = 2\nthreads_per_worker = 1\nmemory_limit = \"512MiB\"\n" +
      plugins());
  std::string json;
  ASSERT_TRUE(tessera::testing::eventually([&] {
    json = cli(both.endpoint(), "workers --json");
    const auto shown = json_numbers(json, "process_rss");
    // Each worker's report counts the workers its process has by then: both, once both have reported again.
    return shown.size() == 2 && shown[0] > 0 && shown[1] > 0 &&
           json_numbers(json, "process_workers") == std::vector<std::uint64_t>{2, 2};
  })) << json;
  EXPECT_EQ(json_numbers(json, "process_workers"), (std::vector<std::uint64_t>{2, 2})) << json;
  for (auto shown : json_numbers(json, "process_rss"))
    EXPECT_TRUE(near(shown, tessera::testing::resident_bytes(both.pid())))
        << "shown " << shown << ", VmRSS " << tessera::testing::resident_bytes(both.pid());
  const auto text = cli(both.endpoint(), "workers");
  EXPECT_NE(text.find("(shared by 2 workers)"), std::string::npos) << text;
}

// Queries of a stream whose results are vectors: a field as a whole is refused naming an element (never a
// silent 0); an element answers; the summary gives its histogram's bin edges.
TEST(ClusterProcessStreams, CliQueriesOfVectorResultsNameAnElement) {
  NodeProcess node(
      "[node]\nname = \"streams\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\n"
      "workers = 1\nthreads_per_worker = 2\n" +
      plugins());
  const ScratchDir scratch("tessera-cli-vectors");
  const auto input = (scratch.path() / "params.csv").string();
  {
    std::ofstream params(input);
    params << "x\n";
    for (int i = 0; i < 20; ++i) params << i << "\n";
  }
  int code = 0;
  const std::string cli_base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  auto out = run_command(cli_base + " stream push --simulation pair --quiet --input " + input, code);
  ASSERT_EQ(code, 0) << out;
  const std::string refusal = "'result' of set 0 holds 2 numbers, not one: name one of them, as result[0]";
  for (const char* query : {" --where 'result > 20'", " --field result", " --format summary"}) {
    out = run_command(cli_base + " results --stream 1" + std::string(query), code);
    EXPECT_NE(code, 0) << query << ": " << out;
    EXPECT_NE(out.find(refusal), std::string::npos) << query << ": " << out;
  }
  out = run_command(cli_base + " results --stream 1 --where 'result[1] > 20' --field 'result[0]' --bins 2",
                    code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"count\":9,"), std::string::npos) << out;  // 2x > 20: x from 11 to 19
  EXPECT_NE(out.find("\"bin_edges\":[11.0,15.0,19.0]"), std::string::npos) << out;
}

// `stream push --output` writes what `results --format csv` prints: both are the client library's query.
TEST(ClusterProcessStreams, CliPushWritesTheStoredResultsAsCsv) {
  NodeProcess node(
      "[node]\nname = \"streams\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n[worker]\n"
      "workers = 1\nthreads_per_worker = 2\n" +
      plugins());
  const ScratchDir scratch("tessera-cli-output");
  const auto& dir = scratch.path();
  const auto input = (dir / "params.csv").string(), output = (dir / "results.csv").string();
  {
    std::ofstream params(input);
    params << "x\n";
    for (int i = 0; i < 16; ++i) params << i << "\n";
  }
  int code = 0;
  const std::string cli_base = std::string(TESSERA_CLI_BINARY) + " --scheduler " + node.endpoint();
  auto out = run_command(
      cli_base + " stream push --simulation pause_square --quiet --input " + input + " --output " + output,
      code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out,
            "stream 1: 16 parameter sets, 16 results stored (1 failed)\nresults written to " + output + "\n");
  std::ifstream written_file(output);
  const std::string written((std::istreambuf_iterator<char>(written_file)), std::istreambuf_iterator<char>());
  // The header names every column, the parameters as the input's header did.
  EXPECT_EQ(written.rfind("id,x,result,status,error,node,pushed_at,dispatched_at,started_at,finished_at,"
                          "stored_at\n0,0,0,ok,,worker-0,",
                          0),
            0u)
      << written;
  EXPECT_NE(written.find("\n2,2,4,ok,,worker-0,"), std::string::npos) << written;  // who ran it, always
  EXPECT_NE(written.find("\n13,13,,error,13 is refused,"), std::string::npos) << written;
  EXPECT_EQ(written, cli(node.endpoint(), "results --stream 1 --format csv"));

  // The summary goes to a file as well; an unknown stream and an unwritable file are named.
  out = run_command(cli_base + " results --stream 1 --output " + (dir / "summary.json").string(), code);
  EXPECT_EQ(code, 0) << out;
  std::ifstream summary_file(dir / "summary.json");
  std::string summary;
  std::getline(summary_file, summary);
  EXPECT_EQ(
      summary.rfind("{\"stream\":1,\"simulation\":\"pause_square\",\"closed\":true,\"state\":\"finished\","
                    "\"accepted\":16,\"input_sets\":16,\"ended_early\":\"\",\"count\":16,",
                    0),
      0u)
      << summary;
  out = run_command(cli_base + " results --stream 7 --format csv", code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_EQ(out, "tessera: no stream 7 in this node's store\n");
  const auto unwritable = (dir / "no-such-dir" / "results.csv").string();
  out = run_command(cli_base + " stream push --simulation pause_square --quiet --input " + input +
                        " --output " + unwritable,
                    code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(
      out.find("the results of stream 2 were not written to " + unwritable + ": cannot write " + unwritable),
      std::string::npos)
      << out;
}

}  // namespace

namespace {

// ---- Memory-bounded worker processes ----

std::string bounded_worker_config(const std::string& name, const std::string& scheduler,
                                  const std::string& data_dir, std::uint64_t limit) {
  return "[node]\nname = \"" + name +
         "\"\nrole = \"worker\"\n[scheduler]\nheartbeat_interval = 0.1\n[worker]\nscheduler = \"" +
         scheduler + "\"\nthreads_per_worker = 2\nmemory_limit = \"" + std::to_string(limit >> 20) +
         "MiB\"\ndata_dir = \"" + data_dir + "\"\n" + plugins();
}

struct ArrayAnswers {
  double sum_x, sum_y;
  Eigen::MatrixXd xty;
  bool operator==(const ArrayAnswers&) const = default;
};

// By default chunks of 1 MiB: a product task takes 8 pairs of them, which must fit in a 64 MiB worker
// twice over.
ArrayAnswers array_workload(tessera::Client& client, std::int64_t rows, std::int64_t chunk_rows = 2048,
                            std::int64_t cols = 64) {
  tessera::ArrayOptions options;
  options.chunks = {chunk_rows, cols};
  options.seed = 11;
  auto x = tessera::Array::random({rows, cols}, options).persist(client);
  auto y = (x * 2.0 + 1.0).sqrt().persist(client);
  // In one graph, as Dask computes it: each chunk is read once for all three.
  const auto answers = tessera::compute(client, {x.sum(), y.sum(), x.T().dot(y)});
  return ArrayAnswers{answers[0](0, 0), answers[1](0, 0), answers[2]};
}

// Two bounded worker processes run the workload (x and y of `rows` x `cols`); each stays within
// 1.25 x its limit above its start, spills, and the answers equal an unlimited run's.
void expect_bounded_workers_match_an_unlimited_run(std::uint64_t limit, std::int64_t rows,
                                                   std::int64_t chunk_rows, std::int64_t cols) {
  const ScratchDir scratch("tessera-memory-process");
  const auto& dir = scratch.path();
  NodeProcess scheduler{scheduler_config()};
  NodeProcess alpha{bounded_worker_config("alpha", scheduler.endpoint(), (dir / "alpha").string(), limit),
                    true};
  NodeProcess beta{bounded_worker_config("beta", scheduler.endpoint(), (dir / "beta").string(), limit), true};
  ASSERT_TRUE(
      tessera::testing::eventually([&] { return status_field(scheduler.endpoint(), "workers") == 2; }));
  {
    // The baseline is a worker that has run the kernels once: BLAS sets up its buffers on first use.
    tessera::Client client(scheduler.endpoint());
    array_workload(client, 8 * 8192, std::min<std::int64_t>(chunk_rows, 8192), cols);
  }
  std::vector<std::uint64_t> baseline;
  for (const auto* worker : {&alpha, &beta}) {
    std::ofstream("/proc/" + std::to_string(worker->pid()) + "/clear_refs") << "5";
    baseline.push_back(proc_status_bytes(worker->pid(), "VmRSS:"));
  }
  ArrayAnswers bounded;
  {
    tessera::Client client(scheduler.endpoint());
    bounded = array_workload(client, rows, chunk_rows, cols);
  }
  std::size_t index = 0;
  for (const auto* worker : {&alpha, &beta}) {
    const auto peak = proc_status_bytes(worker->pid(), "VmHWM:");
    std::fprintf(stderr, "worker %zu: peak %llu MiB above its start, bound %llu MiB\n", index,
                 static_cast<unsigned long long>((peak - std::min(peak, baseline[index])) >> 20),
                 static_cast<unsigned long long>((limit + limit / 4) >> 20));
#ifndef TESSERA_SANITIZED  // a sanitizer's shadow memory is not the worker's
    EXPECT_LE(peak, baseline[index] + limit + limit / 4)
        << "worker " << index << ": peak " << (peak >> 20) << " MiB, baseline " << (baseline[index] >> 20)
        << " MiB; its log:\n"
        << worker->log();
#else
    (void)peak;
#endif
    ++index;
  }
  // Each worker spilled, and says so.
  const auto workers = cli(scheduler.endpoint(), "workers --json");
  EXPECT_NE(workers.find("\"spills\":"), std::string::npos) << workers;
  EXPECT_EQ(workers.find("\"spills\":0,"), std::string::npos) << workers;
  tessera::LocalCluster local{{.workers = 1, .threads_per_worker = 2}};
  tessera::Client local_client{local};
  const auto unlimited = array_workload(local_client, rows, chunk_rows, cols);
  // Equal to round-off: a chunk that crossed to the other worker is used in the ZeroMQ frame it arrived
  // in, 8 bytes off the 16-byte alignment of a chunk made in memory, and vectorized sums group their
  // terms by alignment; a bounded worker also runs a large product alone, which BLAS then splits over
  // both cores (measured: 6e-16 of the largest entry of x^T y at 1000 columns).
  EXPECT_NEAR(unlimited.sum_x, bounded.sum_x, 1e-13 * std::abs(unlimited.sum_x));
  EXPECT_NEAR(unlimited.sum_y, bounded.sum_y, 1e-13 * std::abs(unlimited.sum_y));
  EXPECT_LE((unlimited.xty - bounded.xty).cwiseAbs().maxCoeff(), 1e-13 * unlimited.xty.cwiseAbs().maxCoeff());
}

TEST(ClusterProcessMemory, WorkersHoldingFourTimesTheirLimitStayWithinItAndMatchAnUnlimitedRun) {
  constexpr std::int64_t rows = 8 * (64ll << 20) / (64 * sizeof(double));  // 512 MiB each, 4x per worker
  expect_bounded_workers_match_an_unlimited_run(64ull << 20, rows, 2048, 64);
}

// Issue 44's chunks: 62.5 MiB (8192 x 1000) under 256 MiB per worker process, x and y each the two
// workers' limits together.
TEST(ClusterProcessMemory, ChunksAQuarterOfTheLimitStayWithinItAcrossTwoWorkerProcesses) {
  constexpr std::uint64_t limit = 256ull << 20;
  constexpr std::int64_t cols = 1000, chunk_rows = 8192;
  constexpr std::int64_t rows = 2 * limit / (cols * sizeof(double));
  expect_bounded_workers_match_an_unlimited_run(limit, rows, chunk_rows, cols);
}

}  // namespace
