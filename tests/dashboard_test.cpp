// The dashboard over plain HTTP: a LocalCluster's and a tessera-node's (scheduler and worker processes)
// JSON endpoints agree with the cluster's own status and `tessera status --json` / `tessera workers
// --json`; /metrics is valid Prometheus text whose figures agree too; the task stream stays bounded at a
// million tasks; streams, failures, latencies and GLM fits appear; a token guards the data; nothing but
// GET is accepted; bad options and a port in use are refused by name.
// Eigen (which Tessera's headers include) before httplib: <resolv.h>, which httplib includes, defines a
// macro `_res` that Eigen uses as a name.
#include <Eigen/Dense>
#include <Eigen/Sparse>
#include <tessera/glm.hpp>
#include <tessera/tessera.hpp>
// clang-format off
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
// clang-format on

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <tessera/glm.hpp>
#include <tessera/tessera.hpp>
#include <thread>

#include "monitor/task_stream_log.hpp"
#include "plugin_tasks.hpp"
#include "support/node_process.hpp"

namespace {

using Json = nlohmann::json;
using tessera::testing::NodeProcess;
using tessera::testing::run_command;
using Clock = std::chrono::steady_clock;

// The port of a link such as "http://127.0.0.1:8790/status".
int port_of(const std::string& link) {
  const std::regex pattern(R"(http://127\.0\.0\.1:(\d+)/status)");
  std::smatch match;
  if (!std::regex_search(link, match, pattern)) throw std::runtime_error("not a dashboard link: " + link);
  return std::stoi(match[1]);
}

struct Answer {
  int status = 0;
  std::string body;
  std::string content_type;
};

Answer get(int port, const std::string& path, const httplib::Headers& headers = {}) {
  httplib::Client http("127.0.0.1", port);
  http.set_connection_timeout(5);
  http.set_read_timeout(10);
  auto res = http.Get(path.c_str(), headers);
  if (!res) throw std::runtime_error("GET " + path + ": no answer (" + httplib::to_string(res.error()) + ")");
  return Answer{res->status, res->body, res->get_header_value("Content-Type")};
}

Json get_json(int port, const std::string& path, const httplib::Headers& headers = {}) {
  const auto answer = get(port, path, headers);
  EXPECT_EQ(answer.status, 200) << path << ": " << answer.body;
  EXPECT_NE(answer.content_type.find("application/json"), std::string::npos) << path;
  return Json::parse(answer.body);
}

// Polls `probe` until it holds (the dashboard's figures are at most a sampling interval old).
bool eventually(const std::function<bool()>& probe, std::chrono::seconds within = std::chrono::seconds(20)) {
  const auto deadline = Clock::now() + within;
  while (Clock::now() < deadline) {
    if (probe()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition with a deadline
  }
  return probe();
}

// A strict reading of Prometheus' text format 0.0.4: HELP and TYPE before a family's samples, names and
// labels well formed, counters named *_total, histogram buckets cumulative with +Inf equal to _count.
// Returns the samples ("name{labels}" -> value); problems go to `problems`.
std::map<std::string, double> read_prometheus(const std::string& text, std::vector<std::string>& problems) {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  const std::regex name(R"([a-zA-Z_:][a-zA-Z0-9_:]*)");
  const std::regex sample(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+))");
  const std::regex label_pair(R"re(^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$))re");
  std::istringstream lines(text);
  std::string line;
  std::map<std::string, std::vector<std::pair<double, double>>> buckets;  // series -> (le, count)
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    if (line.rfind("# HELP ", 0) == 0) {
      helped.insert(line.substr(7, line.find(' ', 7) - 7));
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream words(line.substr(7));
      std::string family, type;
      words >> family >> type;
      if (!std::regex_match(family, name)) problems.push_back("bad family name: " + line);
      if (type != "counter" && type != "gauge" && type != "histogram")
        problems.push_back("bad type: " + line);
      if (type == "counter" && family.size() < 6) problems.push_back("short counter: " + line);
      if (type == "counter" && family.substr(family.size() - 6) != "_total")
        problems.push_back("a counter not named *_total: " + line);
      if (family.rfind("tessera_", 0) != 0) problems.push_back("not a tessera_ family: " + line);
      if (types.count(family)) problems.push_back("a family declared twice: " + family);
      types[family] = type;
      continue;
    }
    if (line[0] == '#') continue;
    std::smatch m;
    if (!std::regex_match(line, m, sample)) {
      problems.push_back("not a sample: " + line);
      continue;
    }
    const std::string metric = m[1], labels = m[3], value_text = m[4];
    std::string family = metric;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (metric.size() > s.size() && metric.substr(metric.size() - s.size()) == s &&
          types.count(metric.substr(0, metric.size() - s.size())) &&
          types[metric.substr(0, metric.size() - s.size())] == "histogram")
        family = metric.substr(0, metric.size() - s.size());
    }
    if (!types.count(family)) problems.push_back("a sample before its TYPE line: " + line);
    if (!helped.count(family)) problems.push_back("a family without HELP: " + family);
    std::string rest = labels, le, series_labels;
    while (!rest.empty()) {
      std::smatch pair;
      if (!std::regex_search(rest, pair, label_pair)) {
        problems.push_back("bad labels: " + line);
        break;
      }
      if (pair[1] == "le")
        le = pair[2];
      else
        series_labels += pair[1].str() + "=" + pair[2].str() + ",";
      rest = pair.suffix();
    }
    double value = 0;
    try {
      value = value_text == "+Inf" ? INFINITY : value_text == "NaN" ? NAN : std::stod(value_text);
    } catch (const std::exception&) {
      problems.push_back("bad value: " + line);
    }
    samples[metric + "{" + labels + "}"] = value;
    if (metric.size() > 7 && metric.substr(metric.size() - 7) == "_bucket")
      buckets[family + "{" + series_labels + "}"].emplace_back(le == "+Inf" ? INFINITY : std::stod(le),
                                                               value);
    if (metric.size() > 6 && metric.substr(metric.size() - 6) == "_count" && types[family] == "histogram") {
      const auto& series = buckets[family + "{" + series_labels + "}"];
      if (series.empty() || !std::isinf(series.back().first) || series.back().second != value)
        problems.push_back("histogram " + family + "{" + series_labels + "}: +Inf bucket is not _count");
    }
  }
  for (const auto& [series, list] : buckets)
    for (std::size_t i = 1; i < list.size(); ++i)
      if (list[i].first <= list[i - 1].first || list[i].second < list[i - 1].second)
        problems.push_back("histogram " + series +
                           ": buckets not cumulative at le=" + std::to_string(list[i].first));
  return samples;
}

std::string write_temporary(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()));
  std::ofstream(path) << text;
  return path.string();
}

// pause_square's sets pause this long each (13 is refused).
tessera::StreamOptions pausing(std::int64_t microseconds) {
  tessera::StreamOptions options;
  options.config.set("pause_us", tessera::to_value(microseconds));
  return options;
}

tessera::ClusterOptions with_dashboard(std::uint32_t workers = 2, std::uint32_t threads = 2) {
  tessera::ClusterOptions options{.workers = workers, .threads_per_worker = threads};
  options.dashboard = "127.0.0.1:0";
  return options;
}

TEST(DashboardHttp, EndpointsAgreeWithTheClusterAfterAMap) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  tessera::Client client{cluster};
  std::vector<std::int64_t> xs(20000);
  std::iota(xs.begin(), xs.end(), 0);
  auto squares = client.gather(client.map(plugin_tasks::square, xs));
  ASSERT_EQ(squares[19999], 19999LL * 19999);
  const auto status = cluster.status();
  ASSERT_EQ(status.tasks_done, 20000u);

  Json page;
  ASSERT_TRUE(eventually([&] {
    page = get_json(port, "/api/status.json");
    return page["tasks_done"] == status.tasks_done;
  })) << page.dump();
  EXPECT_EQ(page["workers"], 2);
  EXPECT_EQ(page["tasks_erred"], 0);
  EXPECT_EQ(page["error"], "");
  ASSERT_EQ(page["worker_list"].size(), 2u);
  for (const auto& w : page["worker_list"]) EXPECT_EQ(w["threads"], 2);
  ASSERT_EQ(page["memory"].size(), 2u);
  std::uint64_t per_second = 0;
  for (const auto& n : page["tasks_per_second_series"]) per_second += n.get<std::uint64_t>();
  EXPECT_EQ(per_second, 20000u) << "every task of the last minute, counted once";

  const auto workers = get_json(port, "/api/workers.json");
  ASSERT_EQ(workers["workers"].size(), 2u);
  EXPECT_EQ(workers["workers"][0]["name"], "worker-0");

  const auto progress = get_json(port, "/api/progress.json");
  bool found = false;
  for (const auto& f : progress["functions"])
    if (f["function"] == "square") {
      found = true;
      EXPECT_EQ(f["tasks"], 20000);
      EXPECT_EQ(f["done"], 20000);
      EXPECT_EQ(f["waiting"], 0);
      EXPECT_EQ(f["erred"], 0);
    }
  EXPECT_TRUE(found) << progress.dump();

  const auto stream = get_json(port, "/api/task-stream.json?window=600");
  ASSERT_FALSE(stream["runs"].empty());
  std::uint64_t tasks = 0;
  const auto& functions = stream["functions"];
  for (const auto& run : stream["runs"]) {
    EXPECT_EQ(functions[run[1].get<std::size_t>()], "square");
    EXPECT_LE(run[2].get<double>(), run[3].get<double>());
    EXPECT_GT(run[3].get<double>(), stream["now"].get<double>() - 600);
    tasks += run[4].get<std::uint64_t>();
  }
  EXPECT_EQ(tasks, 20000u);
  EXPECT_EQ(stream["workers"].size(), 2u) << "both workers ran some";
  EXPECT_EQ(get(port, "/api/task-stream.json?window=nan").status, 400);
  EXPECT_EQ(get(port, "/api/task-stream.json?window=1e9").status, 400);
  EXPECT_EQ(get(port, "/api/task-stream.json?window=-1").status, 400);
}

// A stream's parameter sets are work on every panel: counted beside tasks in the status (in all, per
// second, per worker), drawn in the task stream in one lane per compute thread, listed in progress while
// they run, with a set's run time apart from its push-to-store latency.
TEST(DashboardHttp, AStreamsSetsAreWorkOnEveryPanel) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  (void)get_json(port, "/api/task-stream.json");  // a dashboard that shows the task stream records runs
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.config.set("pause_us", tessera::to_value(std::int64_t{2000}));
  auto stream = client.stream("pause_square", options);
  for (int i = 0; i < 400; ++i) stream.push(double(100 + i));
  stream.flush();
  Json progress;
  ASSERT_TRUE(eventually([&] {
    progress = get_json(port, "/api/progress.json");
    return !progress["streams"].empty();
  })) << progress.dump();
  EXPECT_EQ(progress["streams"][0]["id"], stream.id());
  EXPECT_EQ(progress["streams"][0]["simulation"], "pause_square");
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));

  Json status;
  ASSERT_TRUE(eventually([&] {
    status = get_json(port, "/api/status.json");
    return status["sets_done"] == 400;
  })) << status.dump();
  std::uint64_t per_second = 0, by_workers = 0;
  for (const auto& n : status["sets_per_second_series"]) per_second += n.get<std::uint64_t>();
  for (const auto& w : status["worker_list"]) by_workers += w["sets"].get<std::uint64_t>();
  EXPECT_EQ(per_second, 400u) << "every set in the last minute's series";
  EXPECT_EQ(by_workers, 400u);
  EXPECT_EQ(status["streams_running"], 0);

  const auto runs = get_json(port, "/api/task-stream.json?window=600");
  std::uint64_t sets = 0;
  for (const auto& run : runs["runs"]) {
    if (run[7] != 1) continue;
    EXPECT_EQ(runs["functions"][run[1].get<std::size_t>()], "pause_square");
    EXPECT_LT(run[6].get<std::uint32_t>(), 2u) << "lanes are the worker's two compute threads";
    sets += run[4].get<std::uint64_t>();
  }
  EXPECT_EQ(sets, 400u);
  for (const auto& [worker, lanes] : runs["lanes"].get<std::vector<std::pair<int, int>>>())
    EXPECT_LE(lanes, 2) << "worker " << worker;

  const auto streams = get_json(port, "/api/streams.json");
  const auto& figures = streams["streams"][0];
  EXPECT_GT(figures["run_seconds"]["p50"].get<double>(), 0.0015);
  EXPECT_GE(figures["latency_seconds"]["p50"].get<double>(), figures["run_seconds"]["p50"].get<double>());
  std::uint64_t history = 0;
  for (const auto& n : figures["rate_history"]) history += n.get<std::uint64_t>();
  EXPECT_EQ(history, 400u) << "a finished stream keeps its rate history";
}

// A stream closed before its client's input ended is shown as incomplete, with why and of how many.
TEST(DashboardHttp, AStreamClosedBeforeItsInputEndedIsIncompleteNotFinished) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  tessera::Client client{cluster};
  tessera::StreamOptions options;
  options.input.sets = 100;  // what `tessera stream push` says of its CSV
  auto stream = client.stream("pause_square", options);
  for (int i = 0; i < 10; ++i) stream.push(double(100 + i));
  stream.close();
  ASSERT_TRUE(stream.wait(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
  Json streams;
  ASSERT_TRUE(eventually([&] {
    streams = get_json(port, "/api/streams.json");
    return !streams["streams"].empty() && streams["streams"][0]["finished"] == true;
  })) << streams.dump();
  EXPECT_EQ(streams["streams"][0]["ended_early"], "closed by the client before its input ended");
  EXPECT_EQ(streams["streams"][0]["input_sets"], 100);
  EXPECT_EQ(streams["streams"][0]["accepted"], 10);
  const auto listed = client.streams();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_STREQ(tessera::stream_state(listed[0]), "incomplete");
}

TEST(DashboardHttp, FailedAndCancelledTasksShowInProgress) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  tessera::Client client{cluster};
  std::vector<std::int64_t> xs(100);
  std::iota(xs.begin(), xs.end(), 0);
  auto futures = client.map(plugin_tasks::fails_on_seven, xs);
  for (auto& f : futures) f.wait();
  Json progress;
  ASSERT_TRUE(eventually([&] {
    progress = get_json(port, "/api/progress.json");
    return progress["total"]["erred"] == 1 && progress["total"]["done"] == 99;
  })) << progress.dump();
  const auto status = get_json(port, "/api/status.json");
  EXPECT_EQ(status["tasks_erred"], 1);
}

TEST(DashboardHttp, TheTaskStreamStaysBoundedAtAMillionTasks) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  tessera::Client client{cluster};
  std::vector<std::int64_t> xs(1000000);
  std::iota(xs.begin(), xs.end(), 0);
  auto futures = client.map(plugin_tasks::square, xs);
  const auto total = client.gather(futures);
  ASSERT_EQ(total.size(), xs.size());
  const auto answer = get(port, "/api/task-stream.json?window=600");
  ASSERT_EQ(answer.status, 200);
  const auto stream = Json::parse(answer.body);
  EXPECT_LE(stream["run_count"].get<std::size_t>(), tessera::monitor::TaskStreamLog::kRuns);
  EXPECT_LE(stream["runs"].size(), 4000u);
  EXPECT_LT(answer.body.size(), 1u << 20) << "the answer is bounded whatever the task count";
  std::uint64_t tasks = 0;
  for (const auto& run : stream["runs"]) tasks += run[4].get<std::uint64_t>();
  if (stream["truncated"] == false) {
    EXPECT_EQ(tasks, 1000000u);
  } else {
    EXPECT_LT(tasks, 1000000u);
  }
  Json status;
  ASSERT_TRUE(eventually([&] {
    status = get_json(port, "/api/status.json");
    return status["tasks_done"] == 1000000;
  }));
  EXPECT_EQ(status["tasks_run"], 1000000) << "the totals count every task, the ring only the recent runs";
}

TEST(DashboardHttp, MetricsAreValidPrometheusTextThatAgreesWithTheStatus) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  tessera::Client client{cluster};
  std::vector<std::int64_t> xs(5000);
  std::iota(xs.begin(), xs.end(), 0);
  client.gather(client.map(plugin_tasks::square, xs));
  auto stream = client.stream("pause_square", pausing(100));
  for (int i = 0; i < 200; ++i) stream.push(double(i));
  stream.close();
  ASSERT_TRUE(stream.wait(Clock::now() + std::chrono::seconds(60)));

  std::map<std::string, double> samples;
  std::vector<std::string> problems;
  ASSERT_TRUE(eventually([&] {
    const auto answer = get(port, "/metrics");
    EXPECT_EQ(answer.status, 200);
    EXPECT_NE(answer.content_type.find("text/plain; version=0.0.4"), std::string::npos);
    problems.clear();
    samples = read_prometheus(answer.body, problems);
    return samples["tessera_tasks_total{state=\"done\"}"] == 5000 &&
           samples["tessera_stream_latency_seconds_count{stream=\"1\"}"] == 200;
  })) << "done: "
      << samples["tessera_tasks_total{state=\"done\"}"];
  for (const auto& problem : problems) ADD_FAILURE() << problem;
  EXPECT_EQ(samples["tessera_workers{state=\"active\"}"], 2);
  EXPECT_EQ(samples["tessera_up{}"], 1);
  EXPECT_EQ(samples["tessera_task_duration_seconds_count{}"], 5000);
  EXPECT_EQ(samples["tessera_stream_sets_total{stream=\"1\",simulation=\"pause_square\",state=\"stored\"}"],
            200);
  EXPECT_EQ(samples["tessera_stream_sets_total{stream=\"1\",simulation=\"pause_square\",state=\"failed\"}"],
            1)
      << "13 is refused";
  EXPECT_EQ(samples["tessera_stream_failures_total{stream=\"1\",kind=\"error\"}"], 1);
  EXPECT_EQ(samples["tessera_stream_sets_in_flight{stream=\"1\"}"], 0);
  EXPECT_EQ(samples["tessera_stored_results{}"], 200);
  EXPECT_TRUE(samples.count("tessera_worker_memory_bytes{worker=\"0\",kind=\"rss\"}"));
  EXPECT_GT(samples["tessera_worker_memory_bytes{worker=\"0\",kind=\"rss\"}"], 0);
}

TEST(DashboardHttp, StreamsShowTheirCountsRateAndLatency) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  tessera::Client client{cluster};
  auto stream = client.stream("pause_square", pausing(2000));
  for (int i = 0; i < 400; ++i) stream.push(double(i));
  // While it runs: sets in flight, and a rate once a whole second has passed.
  Json running;
  ASSERT_TRUE(eventually([&] {
    running = get_json(port, "/api/streams.json");
    return running["streams"].size() == 1 && running["streams"][0]["stored"].get<int>() > 0 &&
           running["streams"][0]["sets_per_second"].get<double>() > 0;
  })) << running.dump();
  EXPECT_EQ(running["streams"][0]["finished"], false);
  stream.close();
  ASSERT_TRUE(stream.wait(Clock::now() + std::chrono::seconds(60)));
  Json done;
  ASSERT_TRUE(eventually([&] {
    done = get_json(port, "/api/streams.json");
    return done["streams"][0]["finished"] == true;
  })) << done.dump();
  const auto& s = done["streams"][0];
  EXPECT_EQ(s["id"], stream.id());
  EXPECT_EQ(s["simulation"], "pause_square");
  EXPECT_EQ(s["accepted"], 400);
  EXPECT_EQ(s["stored"], 400);
  EXPECT_EQ(s["failed"], 1);
  EXPECT_EQ(s["failures"]["error"], 1);
  EXPECT_EQ(s["in_flight"], 0);
  EXPECT_EQ(s["closed"], true);
  const auto& latency = s["latency_seconds"];
  EXPECT_EQ(latency["count"], 400);
  EXPECT_GT(latency["p50"].get<double>(), 0.001) << "each set pauses 2 ms";
  EXPECT_LE(latency["p50"].get<double>(), latency["p99"].get<double>());
  EXPECT_LE(latency["p99"].get<double>(), latency["max"].get<double>());
  EXPECT_EQ(done["stored_results"], 400);
}

TEST(DashboardHttp, GlmFitsShowTheirRoundsAndOutcome) {
  tessera::LocalCluster cluster{with_dashboard()};
  const int port = port_of(cluster.dashboard_link());
  tessera::Client client{cluster};
  Eigen::MatrixXd x = Eigen::MatrixXd::Random(2000, 5);
  Eigen::VectorXd y(2000);
  for (int i = 0; i < 2000; ++i) y[i] = x(i, 0) + 0.5 * x(i, 1) > 0 ? 1 : 0;
  tessera::glm::LogisticRegression model({.solver = "lbfgs", .regularizer = "l2", .lambda = 1e-3});
  model.fit(client, x, y);
  const auto& report = model.report();
  Json glm;
  ASSERT_TRUE(eventually([&] {
    glm = get_json(port, "/api/glm.json");
    return glm["fits"].size() == 1 && glm["fits"][0]["running"] == false;
  })) << glm.dump();
  const auto& fit = glm["fits"][0];
  EXPECT_EQ(fit["solver"], "lbfgs");
  EXPECT_EQ(fit["family"], "logistic");
  EXPECT_EQ(fit["rounds"], report.rounds);
  EXPECT_EQ(fit["iterations"], report.iterations);
  EXPECT_EQ(fit["converged"], report.converged);
  EXPECT_NEAR(fit["objective"].get<double>(), report.objective, 1e-12 * std::abs(report.objective));
  EXPECT_EQ(fit["losses"].size(), static_cast<std::size_t>(report.rounds));
  EXPECT_LT(fit["losses"].back().get<double>(), fit["losses"][0].get<double>()) << "the loss went down";
}

TEST(DashboardHttp, ATokenGuardsTheDataButNotThePages) {
  const auto token_file = write_temporary("dashboard-token", "  s3cret-token-of-some-length\n");
  auto options = with_dashboard(1, 1);
  options.dashboard_token_file = token_file;
  tessera::LocalCluster cluster{options};
  const int port = port_of(cluster.dashboard_link());
  for (const char* path : {"/api/status.json", "/api/workers.json", "/api/progress.json",
                           "/api/task-stream.json", "/api/streams.json", "/api/glm.json", "/metrics"}) {
    const auto refused = get(port, path);
    EXPECT_EQ(refused.status, 401) << path;
    EXPECT_NE(refused.body.find("token"), std::string::npos) << path;
    EXPECT_EQ(get(port, path, {{"Authorization", "Bearer wrong-token-of-some-length"}}).status, 401) << path;
    EXPECT_EQ(get(port, path, {{"Authorization", "Bearer s3cret-token-of-some-length"}}).status, 200) << path;
    EXPECT_EQ(get(port, std::string(path) + "?token=s3cret-token-of-some-length").status, 200) << path;
  }
  for (const char* path : {"/status", "/tasks", "/progress", "/streams", "/glm", "/static/dashboard.js",
                           "/static/chart.min.js", "/static/dashboard.css"})
    EXPECT_EQ(get(port, path).status, 200) << path;
  std::filesystem::remove(token_file);
}

TEST(DashboardHttp, ItIsReadOnly) {
  tessera::LocalCluster cluster{with_dashboard(1, 1)};
  const int port = port_of(cluster.dashboard_link());
  httplib::Client http("127.0.0.1", port);
  for (const std::string path : {"/api/status.json", "/metrics", "/status", "/anything"}) {
    auto post = http.Post(path.c_str(), "{}", "application/json");
    ASSERT_TRUE(post);
    EXPECT_EQ(post->status, 405) << path;
    EXPECT_NE(post->body.find("read-only"), std::string::npos);
    auto put = http.Put(path.c_str(), "{}", "application/json");
    ASSERT_TRUE(put);
    EXPECT_EQ(put->status, 405) << path;
    auto del = http.Delete(path.c_str());
    ASSERT_TRUE(del);
    EXPECT_EQ(del->status, 405) << path;
  }
  EXPECT_EQ(get(port, "/no/such/page").status, 404);
  EXPECT_EQ(get(port, "/static/page.html").status, 404) << "the template is not a file to serve";
  EXPECT_EQ(cluster.status().workers, 1u);
}

TEST(DashboardHttp, BadOptionsAreRefusedByName) {
  const auto refused = [](tessera::ClusterOptions options) {
    try {
      tessera::LocalCluster cluster{options};
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  for (const char* bad : {"nope", "127.0.0.1", "127.0.0.1:70000", "127.0.0.1:-1", "1.2.3.4.5:80", ":80",
                          "127.0.0.1:99999999999999999999", "[zz]:80"}) {
    auto options = with_dashboard(1, 1);
    options.dashboard = bad;
    const auto message = refused(options);
    EXPECT_NE(message.find("ClusterOptions::dashboard"), std::string::npos) << bad << ": " << message;
  }
  auto missing = with_dashboard(1, 1);
  missing.dashboard_token_file = "/nonexistent/token";
  EXPECT_NE(refused(missing).find("ClusterOptions::dashboard_token_file: cannot read"), std::string::npos);
  auto weak = with_dashboard(1, 1);
  weak.dashboard_token_file = write_temporary("dashboard-weak-token", "short\n");
  EXPECT_NE(refused(weak).find("16 to 256 printable characters"), std::string::npos);
  std::filesystem::remove(weak.dashboard_token_file);
  auto without = tessera::ClusterOptions{.workers = 1, .threads_per_worker = 1};
  without.dashboard_token_file = "/tmp/x";
  EXPECT_NE(refused(without).find("ClusterOptions::dashboard"), std::string::npos);

  // A port in use: the second cluster is refused, naming the option and the reason.
  tessera::LocalCluster first{with_dashboard(1, 1)};
  auto second = with_dashboard(1, 1);
  second.dashboard = "127.0.0.1:" + std::to_string(port_of(first.dashboard_link()));
  const auto in_use = refused(second);
  EXPECT_NE(in_use.find("ClusterOptions::dashboard: cannot listen on " + second.dashboard), std::string::npos)
      << in_use;
  EXPECT_NE(in_use.find("in use"), std::string::npos) << in_use;
}

// ---- tessera-node -----------------------------------------------------------------------------------

std::string plugins() {
  return "[plugins]\npaths = [\"" TESSERA_TEST_PLUGIN "\"]\n";
}

// The dashboard's link, from the line after the endpoint.
int dashboard_port(NodeProcess& node) {
  const auto line = node.next_line();
  EXPECT_NE(line.find("dashboard at http://127.0.0.1:"), std::string::npos) << line;
  return port_of(line);
}

Json cli_json(const std::string& scheduler, const std::string& command) {
  int code = 0;
  const auto out =
      run_command(std::string(TESSERA_CLI_BINARY) + " --scheduler " + scheduler + " " + command, code);
  EXPECT_EQ(code, 0) << out;
  return Json::parse(out);
}

TEST(DashboardNode, AgreesWithTessera_StatusAndWorkersAcrossProcesses) {
  NodeProcess scheduler{
      "[node]\nname = \"dash-scheduler\"\nrole = \"scheduler\"\n[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n"
      "heartbeat_interval = 0.1\nheartbeat_timeout = 1.0\n[dashboard]\nlisten = \"127.0.0.1:0\"\n" +
      plugins()};
  const int port = dashboard_port(scheduler);
  const auto worker_config = [&](const std::string& name) {
    return "[node]\nname = \"" + name +
           "\"\nrole = \"worker\"\n[scheduler]\nheartbeat_interval = 0.1\n[worker]\n"
           "scheduler = \"" +
           scheduler.endpoint() + "\"\nthreads_per_worker = 2\nmemory_limit = \"512MiB\"\n" + plugins();
  };
  NodeProcess alpha{worker_config("alpha")}, beta{worker_config("beta")};
  tessera::Client client(scheduler.endpoint());
  std::vector<std::int64_t> xs(3000);
  std::iota(xs.begin(), xs.end(), 0);
  ASSERT_EQ(client.gather(client.map(plugin_tasks::square, xs))[2999], 2999LL * 2999);

  const auto cli_workers = cli_json(scheduler.endpoint(), "workers --json");
  Json page;
  ASSERT_TRUE(eventually([&] {
    page = get_json(port, "/api/workers.json");
    return page["workers"].size() == cli_workers.size();
  }));
  ASSERT_EQ(cli_workers.size(), 2u);
  for (std::size_t i = 0; i < cli_workers.size(); ++i) {
    EXPECT_EQ(page["workers"][i]["id"], cli_workers[i]["id"]);
    EXPECT_EQ(page["workers"][i]["name"], cli_workers[i]["name"]);
    EXPECT_EQ(page["workers"][i]["address"], cli_workers[i]["address"]);
    EXPECT_EQ(page["workers"][i]["threads"], cli_workers[i]["threads"]);
    EXPECT_EQ(page["workers"][i]["memory_limit"], cli_workers[i]["memory_limit"]);
    EXPECT_EQ(page["workers"][i]["memory"]["memory_limit"], 512u << 20);
  }
  const auto cli_status = cli_json(scheduler.endpoint(), "status --json");
  Json status;
  ASSERT_TRUE(eventually([&] {
    status = get_json(port, "/api/status.json");
    return status["tasks_done"] == cli_status["tasks_done"];
  })) << status.dump()
      << "\n"
      << cli_status.dump();
  for (const char* field : {"workers", "retiring_workers", "tasks_done", "tasks_erred", "tasks_cancelled",
                            "workers_lost", "checkpoints_stored"})
    EXPECT_EQ(status[field], cli_status[field]) << field;
  EXPECT_GE(status["clients"].get<int>(), 1) << "this test's client is connected";

  // Task runs of worker processes reach the task stream through their DONE messages.
  const auto stream = get_json(port, "/api/task-stream.json?window=600");
  std::set<int> ran_on;
  std::uint64_t tasks = 0;
  for (const auto& run : stream["runs"]) {
    ran_on.insert(run[0].get<int>());
    tasks += run[4].get<std::uint64_t>();
    EXPECT_NEAR(run[3].get<double>(), stream["now"].get<double>(), 120)
        << "the workers' clocks are this host's";
  }
  EXPECT_EQ(tasks, 3000u);
  EXPECT_EQ(ran_on.size(), 2u);
}

TEST(DashboardNode, APortInUseAndBadKeysAreConfigErrorsNamingTheKey) {
  // Holds a port, so the node cannot have it.
  const int holder = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  socklen_t length = sizeof address;
  getsockname(holder, reinterpret_cast<sockaddr*>(&address), &length);
  const int taken = ntohs(address.sin_port);

  const auto run_node = [](const std::string& dashboard_section, const std::string& role = "both") {
    const auto config = write_temporary(
        "dashboard-node.toml", "[node]\nname = \"d\"\nrole = \"" + role + "\"\n" +
                                   (role == "worker" ? "[worker]\nscheduler = \"tcp://127.0.0.1:1\"\n"
                                                     : "[scheduler]\nlisten = \"tcp://127.0.0.1:0\"\n") +
                                   dashboard_section);
    int code = 0;
    auto out = run_command(std::string(TESSERA_NODE_BINARY) + " --config " + config + " </dev/null", code);
    std::filesystem::remove(config);
    return std::make_pair(code, out);
  };
  const auto [in_use_code, in_use] =
      run_node("[dashboard]\nlisten = \"127.0.0.1:" + std::to_string(taken) + "\"\n");
  EXPECT_EQ(in_use_code, 2) << in_use;
  EXPECT_NE(in_use.find("key 'dashboard.listen'"), std::string::npos) << in_use;
  EXPECT_NE(in_use.find("in use"), std::string::npos) << in_use;
  close(holder);

  for (const std::string bad : {"listen = \"localhost\"", "listen = \"127.0.0.1:65536\"", "listen = 8787",
                                "listen = \"127.0.0.1:nan\"", "listen = \"no.such.host:80\"",
                                "colour = \"blue\"", "token_file = \"/nonexistent/token\""}) {
    const auto [code, out] = run_node("[dashboard]\n" + bad + "\n");
    EXPECT_EQ(code, 2) << bad << ": " << out;
    EXPECT_NE(out.find("dashboard."), std::string::npos) << bad << ": " << out;
  }
  const auto [worker_code, worker_out] = run_node("[dashboard]\n", "worker");
  EXPECT_EQ(worker_code, 2) << worker_out;
  EXPECT_NE(worker_out.find("[dashboard]"), std::string::npos) << worker_out;
}

}  // namespace
