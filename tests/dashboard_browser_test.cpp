// The dashboard in a real browser: headless Chromium (Debian's, through chromedriver) loads each page of
// a tessera-node's dashboard while a workload runs (a map of 10 ms tasks, a stream, a GLM fit), checks
// that the figures the page rendered agree with `tessera status --json`, `tessera workers --json` and
// `tessera results --format count` read just before and after, that its charts were drawn, and saves a
// screenshot of each page in build/test-artifacts/dashboard/. Skips, naming them, without chromium and
// chromedriver.
#include "web_driver.hpp"
// clang-format off
#include <gtest/gtest.h>
// clang-format on

#include <algorithm>
#include <numeric>
#include <regex>
#include <tessera/glm.hpp>
#include <tessera/tessera.hpp>

#include "plugin_tasks.hpp"
#include "support/node_process.hpp"

namespace {

using Json = nlohmann::json;
using tessera::testing::NodeProcess;
using tessera::testing::run_command;
using tessera::testing::WebDriver;

const std::filesystem::path kArtifacts = TESSERA_ARTIFACT_DIR;

Json cli_json(const std::string& scheduler, const std::string& command) {
  int code = 0;
  const auto out =
      run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + scheduler + " " + command, code);
  EXPECT_EQ(code, 0) << out;
  return Json::parse(out);
}

std::uint64_t stored_count(const std::string& scheduler, std::uint64_t stream) {
  int code = 0;
  const auto out = run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + scheduler +
                                   " results --stream " + std::to_string(stream) + " --format count",
                               code);
  EXPECT_EQ(code, 0) << out;
  std::smatch number;
  if (!std::regex_search(out, number, std::regex(R"(\d+)"))) throw std::runtime_error("no count in: " + out);
  return std::stoull(number[0]);
}

// A page's figure by its data-field, digits only ("12,345" is 12345).
constexpr const char* kReadField = R"(
  const node = document.querySelector(arguments[0] + ' [data-field="' + arguments[1] + '"]');
  return node ? node.textContent : null;)";

std::uint64_t number_of(const Json& text) {
  if (!text.is_string()) throw std::runtime_error("no such figure on the page");
  std::string digits;
  for (char c : text.get<std::string>())
    if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
  return std::stoull(digits);
}

class DashboardBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto missing = tessera::testing::missing_browser(); !missing.empty())
      GTEST_SKIP() << "SKIPPED: the browser tests need " << missing;
  }
};

// The dashboard's http://127.0.0.1:PORT, from the line the node prints after its endpoint; empty if none.
std::string dashboard_link(NodeProcess& node) {
  const auto line = node.next_line();
  std::smatch match;
  if (!std::regex_search(line, match, std::regex(R"(http://127\.0\.0\.1:\d+)"))) return {};
  return match[0];
}

// Waits for `updates` more successful polls than now: figures read after it are newer than what the CLI
// said just before (the dashboard samples twice a second, the page polls once).
void wait_for_fresh_figures(WebDriver& browser, const std::string& page) {
  const auto before = browser.run("return Number(document.body.dataset.updates);").get<int>();
  browser.wait_until("return Number(document.body.dataset.updates) >= " + std::to_string(before + 3) + ";",
                     "three more updates of " + page);
}

TEST_F(DashboardBrowser, EachPageShowsWhatTheCliSaysWhileAWorkloadRuns) {
  NodeProcess node{
      "[node]\nname = \"browser-node\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[worker]\nworkers = 2\nthreads_per_worker = 2\nmemory_limit = \"1GiB\"\n"
      "[dashboard]\nlisten = \"127.0.0.1:0\"\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n"};
  const std::string base = dashboard_link(node);
  ASSERT_FALSE(base.empty()) << "the node printed no dashboard link";
  const std::string scheduler = node.endpoint();

  tessera::Client client(scheduler);
  // The workload: a GLM fit first (it is quick), then 6,000 tasks of 10 ms on 4 threads (about 15 s)
  // and a stream of 3,000 sets of 8 ms beside them.
  Eigen::MatrixXd x = Eigen::MatrixXd::Random(4000, 6);
  Eigen::VectorXd y(4000);
  for (int i = 0; i < 4000; ++i) y[i] = x(i, 0) - 0.3 * x(i, 2) > 0 ? 1 : 0;
  tessera::glm::LogisticRegression model({.solver = "newton", .regularizer = "l2", .lambda = 1e-3});
  model.fit(client, x, y);
  std::vector<std::int64_t> xs(6000);
  std::iota(xs.begin(), xs.end(), 0);
  auto futures = client.map(plugin_tasks::slow_square, xs);
  tessera::StreamOptions options;
  options.config.set("pause_us", tessera::to_value(std::int64_t{8000}));
  auto stream = client.stream("pause_square", options);
  for (int i = 0; i < 3000; ++i) stream.push(double(i));
  stream.close();

  WebDriver browser;

  // Status: the counters and the worker table against `tessera status/workers --json`.
  browser.open(base + "/status");
  browser.wait_until("return document.body.dataset.ready === '1';", "its first update of /status");
  const auto status_before = cli_json(scheduler, "status --json");
  wait_for_fresh_figures(browser, "/status");
  const auto done_shown = number_of(browser.run(kReadField, {"#status-cards", "tasks_done"}));
  const auto workers_shown = number_of(browser.run(kReadField, {"#status-cards", "workers"}));
  const auto rows = browser.run(R"(
    return [...document.querySelectorAll('tr[data-worker-id]')].map(r => ({
      id: Number(r.dataset.workerId), name: r.querySelector('[data-field="name"]').textContent,
      threads: Number(r.querySelector('[data-field="threads"]').textContent)}));)");
  const auto status_after = cli_json(scheduler, "status --json");
  const auto workers = cli_json(scheduler, "workers --json");
  EXPECT_EQ(workers_shown, status_after["workers"].get<std::uint64_t>());
  EXPECT_LE(status_before["tasks_done"].get<std::uint64_t>(), done_shown);
  EXPECT_LE(done_shown, status_after["tasks_done"].get<std::uint64_t>());
  EXPECT_GT(status_after["tasks_pending"].get<std::uint64_t>(), 0u) << "the workload still runs";
  ASSERT_EQ(rows.size(), workers.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i]["id"], workers[i]["id"]);
    EXPECT_EQ(rows[i]["name"], workers[i]["name"]);
    EXPECT_EQ(rows[i]["threads"], workers[i]["threads"]);
  }
  EXPECT_EQ(
      browser.run("return Boolean(Chart.getChart('rate-chart')) && Boolean(Chart.getChart('memory-chart'));"),
      true);
  browser.screenshot(kArtifacts / "status.png");

  // Task stream: rectangles of slow_square on both workers while it runs.
  browser.open(base + "/tasks");
  browser.wait_until(
      "const c = Chart.getChart('stream-chart'); return Boolean(c) && "
      "c.data.datasets.some(d => d.label === 'slow_square' && d.data.length > 0);",
      "slow_square runs in the task stream");
  // One lane per compute thread in use: at most the 2 x 2 threads, each named by worker and thread.
  const auto lanes = browser.run("return Chart.getChart('stream-chart').data.labels;");
  EXPECT_GE(lanes.size(), 2u) << lanes.dump();
  for (const auto& lane : lanes)
    EXPECT_TRUE(std::regex_match(lane.get<std::string>(), std::regex(R"(worker \d+ · thread [12])")))
        << lanes.dump();
  EXPECT_GT(number_of(browser.run(kReadField, {"#task-cards", "run_count"})), 0u);
  browser.screenshot(kArtifacts / "tasks.png");

  // Progress: the function's row, and the total done between what the CLI said before and after.
  browser.open(base + "/progress");
  browser.wait_until("return Boolean(document.querySelector('tr[data-function=\"slow_square\"]'));",
                     "a progress row for slow_square");
  const auto progress_before = cli_json(scheduler, "status --json");
  wait_for_fresh_figures(browser, "/progress");
  const auto slow_tasks = number_of(browser.run(kReadField, {"tr[data-function=\"slow_square\"]", "tasks"}));
  const auto total_done = number_of(browser.run(kReadField, {"#progress-cards", "total_done"}));
  const auto progress_after = cli_json(scheduler, "status --json");
  EXPECT_EQ(slow_tasks, 6000u);
  EXPECT_LE(progress_before["tasks_done"].get<std::uint64_t>(), total_done);
  EXPECT_LE(total_done, progress_after["tasks_done"].get<std::uint64_t>());
  browser.screenshot(kArtifacts / "progress.png");

  // Streams: stored results between two `tessera results --format count`.
  browser.open(base + "/streams");
  browser.wait_until(
      "return Boolean(document.querySelector('tr[data-stream-id=\"" + std::to_string(stream.id()) + "\"]'));",
      "a row for the stream");
  const std::string row = "tr[data-stream-id=\"" + std::to_string(stream.id()) + "\"]";
  const auto stored_before = stored_count(scheduler, stream.id());
  wait_for_fresh_figures(browser, "/streams");
  const auto stored_shown = number_of(browser.run(kReadField, {row, "stored"}));
  const auto stored_after = stored_count(scheduler, stream.id());
  EXPECT_LE(stored_before, stored_shown);
  EXPECT_LE(stored_shown, stored_after);
  EXPECT_EQ(browser.run(kReadField, {row, "simulation"}), "pause_square");
  browser.screenshot(kArtifacts / "streams.png");

  // GLM fits: the fit's solver and its iterations, as the client was told.
  browser.open(base + "/glm");
  browser.wait_until("return Boolean(document.querySelector('tr[data-session]'));", "a row for the GLM fit");
  EXPECT_EQ(browser.run(kReadField, {"tr[data-session]", "solver"}), "newton");
  EXPECT_EQ(number_of(browser.run(kReadField, {"tr[data-session]", "iterations"})),
            static_cast<std::uint64_t>(model.report().iterations));
  EXPECT_EQ(browser.run(kReadField, {"tr[data-session]", "state"}),
            model.report().converged ? "converged" : "stopped");
  EXPECT_EQ(browser.run("return Chart.getChart('glm-losses').data.datasets[0].data.length > 0;"), true);
  browser.screenshot(kArtifacts / "glm.png");

  // The workload ends as it should: the dashboard changed nothing.
  const auto squares = client.gather(futures);
  EXPECT_EQ(squares[5999], 5999LL * 5999);
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(120)));
  EXPECT_EQ(stored_count(scheduler, stream.id()), 3000u);
}

// A stream alone, as a user watching the dashboard during `tessera stream push` sees it: every page shows
// the sets as work (rates, per worker, lanes per thread, progress), agreeing with `tessera status --json`,
// `tessera workers --json` and `tessera results`; screenshots of each page during the stream.
TEST_F(DashboardBrowser, EveryPageShowsARunningStreamAsWork) {
  NodeProcess node{
      "[node]\nname = \"stream-node\"\nrole = \"both\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "[worker]\nworkers = 2\nthreads_per_worker = 2\n"
      "[dashboard]\nlisten = \"127.0.0.1:0\"\n[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n"};
  const std::string base = dashboard_link(node);
  ASSERT_FALSE(base.empty()) << "the node printed no dashboard link";
  const std::string scheduler = node.endpoint();
  WebDriver browser;
  // Opened first, so the task stream records the simulation jobs from the stream's start.
  browser.open(base + "/tasks");
  browser.wait_until("return document.body.dataset.ready === '1';", "its first update of /tasks");

  tessera::Client client(scheduler);
  // 8,000 sets of 10 ms on 4 threads: about 20 s of work, its input's size said as the CLI says it.
  constexpr int kSets = 8000;
  tessera::StreamOptions options;
  options.config.set("pause_us", tessera::to_value(std::int64_t{10000}));
  options.input.sets = kSets;
  auto stream = client.stream("pause_square", options);
  for (int i = 0; i < kSets; ++i) stream.push(double(100 + i));
  stream.flush();

  // Task stream: the simulation's jobs, in one lane per compute thread of each worker.
  browser.wait_until(
      "const c = Chart.getChart('stream-chart'); return Boolean(c) && c.data.labels.length >= 4 && "
      "c.data.datasets.some(d => d.label === 'pause_square (parameter sets)' && d.data.length > 0);",
      "the stream's jobs on four lanes of the task stream");
  const auto lanes = browser.run("return Chart.getChart('stream-chart').data.labels;");
  for (const std::string expected :
       {"worker 0 · thread 1", "worker 0 · thread 2", "worker 1 · thread 1", "worker 1 · thread 2"})
    EXPECT_NE(std::find(lanes.begin(), lanes.end(), expected), lanes.end()) << lanes.dump();
  EXPECT_GT(number_of(browser.run(kReadField, {"#task-cards", "sets_per_second"})), 0u);
  browser.screenshot(kArtifacts / "stream-tasks.png");

  // Progress: the running stream, its stored sets between two `tessera results` counts.
  browser.open(base + "/progress");
  const std::string row = "tr[data-stream-id=\"" + std::to_string(stream.id()) + "\"]";
  browser.wait_until("return Boolean(document.querySelector('#progress-streams " + row + "'));",
                     "the running stream on /progress");
  const auto stored_before = stored_count(scheduler, stream.id());
  wait_for_fresh_figures(browser, "/progress");
  const auto stored_shown = number_of(browser.run(kReadField, {"#progress-streams " + row, "stored"}));
  const auto stored_after = stored_count(scheduler, stream.id());
  EXPECT_LE(stored_before, stored_shown);
  EXPECT_LE(stored_shown, stored_after);
  EXPECT_EQ(number_of(browser.run(kReadField, {"#progress-streams " + row, "input_sets"})),
            std::uint64_t{kSets});
  browser.screenshot(kArtifacts / "stream-progress.png");

  // Status: sets done and sets/s beside the tasks, and each worker's sets, against the CLI's.
  browser.open(base + "/status");
  browser.wait_until("return document.body.dataset.ready === '1';", "its first update of /status");
  const auto before = cli_json(scheduler, "status --json");
  wait_for_fresh_figures(browser, "/status");
  const auto sets_shown = number_of(browser.run(kReadField, {"#status-cards", "sets_done"}));
  const auto rate_shown = number_of(browser.run(kReadField, {"#status-cards", "sets_per_second"}));
  const auto running_shown = number_of(browser.run(kReadField, {"#status-cards", "streams_running"}));
  const auto worker_sets = browser.run(R"(
    return [...document.querySelectorAll('tr[data-worker-id]')].map(r => Number(
      r.querySelector('[data-field="sets"]').textContent.replace(/,/g, '')));)");
  const auto after = cli_json(scheduler, "status --json");
  const auto workers = cli_json(scheduler, "workers --json");
  EXPECT_LE(before["sets_done"].get<std::uint64_t>(), sets_shown);
  EXPECT_LE(sets_shown, after["sets_done"].get<std::uint64_t>());
  EXPECT_GT(sets_shown, 0u) << "the stream's sets count as work";
  EXPECT_LT(after["sets_done"].get<std::uint64_t>(), std::uint64_t{kSets}) << "the stream still runs";
  EXPECT_GT(rate_shown, 0u);
  EXPECT_EQ(running_shown, 1u);
  ASSERT_EQ(worker_sets.size(), workers.size());
  for (std::size_t i = 0; i < workers.size(); ++i) {
    EXPECT_GT(worker_sets[i].get<std::uint64_t>(), 0u) << "worker " << workers[i]["id"] << " runs sets too";
    EXPECT_LE(worker_sets[i].get<std::uint64_t>(), workers[i]["sets"].get<std::uint64_t>());
  }
  EXPECT_EQ(browser.run("return Chart.getChart('rate-chart').data.datasets[1].data.some(v => v > 0);"), true);
  browser.screenshot(kArtifacts / "stream-status.png");

  // Streams: a set's run time apart from push-to-store latency; the rate history kept once it finished.
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(120)));
  browser.open(base + "/streams");
  browser.wait_until("return Boolean(document.querySelector('" + row + "'));", "a row for the stream");
  wait_for_fresh_figures(browser, "/streams");
  EXPECT_EQ(browser.run(kReadField, {row, "state"}), "finished");
  const auto run_p50 = browser.run(kReadField, {row, "run_p50"}).get<std::string>();
  EXPECT_TRUE(std::regex_match(run_p50, std::regex(R"([0-9.]+ ms)"))) << run_p50;  // about 10 ms
  EXPECT_EQ(browser.run("return Chart.getChart('stream-rates').data.datasets[0].data.some(v => v > 0);"),
            true)
      << "a finished stream keeps its rate history";
  browser.screenshot(kArtifacts / "stream-streams.png");

  // Finished: every figure equals the store's count.
  const auto done = cli_json(scheduler, "status --json");
  EXPECT_EQ(done["sets_done"], kSets);
  EXPECT_EQ(stored_count(scheduler, stream.id()), std::uint64_t{kSets});
  std::uint64_t by_workers = 0;
  for (const auto& w : cli_json(scheduler, "workers --json")) by_workers += w["sets"].get<std::uint64_t>();
  EXPECT_EQ(by_workers, std::uint64_t{kSets});
}

}  // namespace
