#include "dashboard/panel_json.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace tessera::dashboard {
namespace {

// JSON has no NaN or infinity: a figure that is not known yet is null.
Json number_or_null(double value) {
  return std::isfinite(value) ? Json(value) : Json(nullptr);
}

Json sampled(const Snapshot& snapshot, double now) {
  return Json{
      {"sampled_at", snapshot.sampled_at},
      {"age_seconds",
       snapshot.sampled_at > 0 ? number_or_null(std::max(0.0, now - snapshot.sampled_at)) : Json(nullptr)},
      {"error", snapshot.error}};
}

Json latency_json(const monitor::LogHistogram& latency) {
  return Json{{"count", latency.count()},
              {"mean", latency.count() ? latency.sum() / static_cast<double>(latency.count()) : 0.0},
              {"p50", latency.quantile(0.5)},
              {"p90", latency.quantile(0.9)},
              {"p99", latency.quantile(0.99)},
              {"max", latency.quantile(1.0)}};
}

// The streams that have not finished.
std::uint64_t streams_running(const monitor::ClusterMonitor& monitor) {
  std::uint64_t running = 0;
  for (const auto& f : monitor.streams.figures()) running += f.finished_at == 0 ? 1 : 0;
  return running;
}

// Each worker's runs packed into lanes, one per compute thread in use: a run goes to the first lane free
// when it starts (within kSameThread of the last run's end, which the same thread's next job is), so runs
// at once on one worker never overlap in one lane. Returns each run's lane, and the lanes per worker.
constexpr double kSameThread = 0.002;
std::pair<std::vector<std::uint32_t>, std::map<std::uint32_t, std::uint32_t>> pack_lanes(
    const std::vector<std::tuple<std::uint32_t, double, double>>& runs) {  // worker, start, end
  std::vector<std::size_t> order(runs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(std::get<0>(runs[a]), std::get<1>(runs[a])) <
           std::tie(std::get<0>(runs[b]), std::get<1>(runs[b]));
  });
  std::vector<std::uint32_t> lane_of(runs.size(), 0);
  std::map<std::uint32_t, std::vector<double>> ends;  // per worker, each lane's last end
  for (std::size_t i : order) {
    const auto& [worker, start, end] = runs[i];
    auto& lanes = ends[worker];
    std::size_t lane = 0;
    while (lane < lanes.size() && lanes[lane] > start + kSameThread) ++lane;
    if (lane == lanes.size()) lanes.push_back(end);
    lanes[lane] = std::max(lanes[lane], end);
    lane_of[i] = static_cast<std::uint32_t>(lane);
  }
  std::map<std::uint32_t, std::uint32_t> counts;
  for (const auto& [worker, lanes] : ends) counts[worker] = static_cast<std::uint32_t>(lanes.size());
  return {std::move(lane_of), std::move(counts)};
}

}  // namespace

Json status_json(const Snapshot& snapshot, const monitor::ClusterMonitor& monitor, double now) {
  const auto per_second = monitor.tasks.per_second(now, 60);
  const auto totals = monitor.tasks.totals();
  Json out = sampled(snapshot, now);
  out.update(scheduler_json(snapshot.status, snapshot.clients));
  out.update(
      Json{{"worker_list", workers_json(snapshot.workers)},
           // Over the 10 whole seconds before this one; the series: the last 60 seconds, this one last.
           {"tasks_per_second", monitor.tasks.recent_rate(now)},
           {"tasks_per_second_series", per_second},
           // A stream's parameter sets are work too, counted apart from tasks.
           {"sets_per_second", monitor.tasks.recent_set_rate(now)},
           {"sets_per_second_series", monitor.tasks.sets_per_second(now, 60)},
           {"streams_running", streams_running(monitor)},
           {"tasks_run", totals.tasks},
           {"task_seconds_p50", totals.task_seconds.quantile(0.5)},
           {"task_seconds_p99", totals.task_seconds.quantile(0.99)}});
  return out;
}

Json workers_json(const Snapshot& snapshot, double now) {
  Json out = sampled(snapshot, now);
  out["workers"] = workers_json(snapshot.workers);
  return out;
}

Json progress_json(const Snapshot& snapshot, const monitor::ClusterMonitor& monitor, double now) {
  Json list = Json::array();
  FunctionProgress total{"(all)"};
  for (const auto& p : snapshot.progress) {
    list.push_back(Json{{"function", p.function},
                        {"operations", p.operations},
                        {"tasks", p.tasks},
                        {"waiting", p.waiting},
                        {"processing", p.processing},
                        {"done", p.done},
                        {"erred", p.erred},
                        {"cancelled", p.cancelled}});
    total.operations += p.operations;
    total.tasks += p.tasks;
    total.waiting += p.waiting;
    total.processing += p.processing;
    total.done += p.done;
    total.erred += p.erred;
    total.cancelled += p.cancelled;
  }
  Json out = sampled(snapshot, now);
  out["functions"] = std::move(list);
  out["total"] = Json{{"operations", total.operations}, {"tasks", total.tasks}, {"waiting", total.waiting},
                      {"processing", total.processing}, {"done", total.done},   {"erred", total.erred},
                      {"cancelled", total.cancelled}};
  Json streams = Json::array();
  for (const auto& f : monitor.streams.figures()) {
    if (f.finished_at > 0) continue;
    streams.push_back(Json{{"id", f.id},
                           {"simulation", f.simulation},
                           {"accepted", f.accepted},
                           {"stored", f.stored},
                           {"failed", f.failed},
                           {"input_sets", f.input_sets},
                           {"sets_per_second", f.sets_per_second}});
  }
  out["streams"] = std::move(streams);
  return out;
}

Json task_stream_json(const monitor::ClusterMonitor& monitor, double window, double now) {
  const auto snapshot = monitor.tasks.runs_since(now - window);
  std::vector<std::uint32_t> worker_ids;
  for (const auto& run : snapshot.runs) worker_ids.push_back(run.worker);
  std::sort(worker_ids.begin(), worker_ids.end());
  worker_ids.erase(std::unique(worker_ids.begin(), worker_ids.end()), worker_ids.end());

  // worker, function, start, end, tasks, failed, kind (0 tasks, 1 parameter sets); lanes come after.
  using Rectangle =
      std::tuple<std::uint32_t, std::uint32_t, double, double, std::uint64_t, std::uint64_t, int>;
  std::vector<Rectangle> rectangles;
  const bool aggregate = snapshot.runs.size() > kMaxRectangles;
  if (!aggregate) {
    for (const auto& run : snapshot.runs)
      rectangles.emplace_back(run.worker, run.function, run.finished_at - run.seconds, run.finished_at,
                              run.tasks, run.failed, run.sets ? 1 : 0);
  } else {
    // One rectangle per (worker, function, bin): the bins are as wide as the window over a quarter of
    // the rectangles allowed, each spanning the runs it holds.
    const double bin = window / static_cast<double>(kMaxRectangles / 4);
    struct Span {
      double start, end;
      std::uint64_t tasks, failed;
      int kind;
    };
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::int64_t>, Span> spans;
    for (const auto& run : snapshot.runs) {
      const auto key = std::make_tuple(run.worker, run.function,
                                       static_cast<std::int64_t>(std::floor((run.finished_at - now) / bin)));
      auto [it, fresh] = spans.try_emplace(
          key, Span{run.finished_at - run.seconds, run.finished_at, 0, 0, run.sets ? 1 : 0});
      it->second.start = std::min(it->second.start, run.finished_at - run.seconds);
      it->second.end = std::max(it->second.end, run.finished_at);
      it->second.tasks += run.tasks;
      it->second.failed += run.failed;
    }
    for (const auto& [key, span] : spans) {
      if (rectangles.size() >= kMaxRectangles) break;
      rectangles.emplace_back(std::get<0>(key), std::get<1>(key), span.start, span.end, span.tasks,
                              span.failed, span.kind);
    }
  }
  std::vector<std::tuple<std::uint32_t, double, double>> extents;
  extents.reserve(rectangles.size());
  for (const auto& r : rectangles) extents.emplace_back(std::get<0>(r), std::get<2>(r), std::get<3>(r));
  const auto [lane_of, lane_counts] = pack_lanes(extents);
  Json runs = Json::array();
  for (std::size_t i = 0; i < rectangles.size(); ++i) {
    const auto& [worker, function, start, end, tasks, failed, kind] = rectangles[i];
    runs.push_back(Json::array({worker, function, start, end, tasks, failed, lane_of[i], kind}));
  }
  Json lanes = Json::array();
  for (const auto& [worker, count] : lane_counts) lanes.push_back(Json::array({worker, count}));
  const auto per_second = monitor.tasks.per_second(now, 60);
  return Json{{"now", now},
              {"window", window},
              {"functions", snapshot.functions},
              {"workers", worker_ids},
              {"columns", {"worker", "function", "start", "end", "tasks", "failed", "lane", "kind"}},
              {"runs", std::move(runs)},
              {"lanes", std::move(lanes)},  // [worker, lanes]: one per compute thread it was seen using
              {"run_count", snapshot.runs.size()},
              {"aggregated", aggregate},
              {"truncated", snapshot.truncated},
              {"tasks_per_second", monitor.tasks.recent_rate(now)},
              {"tasks_per_second_series", per_second},
              {"sets_per_second", monitor.tasks.recent_set_rate(now)}};
}

Json streams_json(const monitor::ClusterMonitor& monitor, double now) {
  Json list = Json::array();
  std::uint64_t stored = 0;
  for (const auto& f : monitor.streams.figures()) {
    Json failures = Json::object();
    for (std::size_t k = 1; k < f.failures.size(); ++k)
      failures[failure_name(static_cast<Failure>(k))] = f.failures[k];
    stored += f.stored;
    list.push_back(Json{{"id", f.id},
                        {"simulation", f.simulation},
                        {"generator", f.generator},
                        {"accepted", f.accepted},
                        {"stored", f.stored},
                        {"failed", f.failed},
                        {"in_flight", f.in_flight()},
                        {"failures", std::move(failures)},
                        {"sets_per_second", f.sets_per_second},
                        {"latency_seconds", latency_json(f.latency)},
                        {"run_seconds", latency_json(f.run)},
                        {"rate_history", f.rate_history},
                        {"closed", f.closed},
                        {"input_sets", f.input_sets},
                        {"ended_early", f.ended_early},
                        {"finished", f.finished_at > 0},
                        {"error", f.error},
                        {"opened_at", f.opened_at},
                        {"finished_at", f.finished_at}});
  }
  return Json{{"now", now},
              {"stored_results", stored},
              {"history_seconds", monitor::StreamFigures::kHistorySeconds},
              {"streams", std::move(list)}};
}

Json glm_json(const monitor::ClusterMonitor& monitor, double now) {
  Json list = Json::array();
  for (const auto& fit : monitor.glm.figures()) {
    Json losses = Json::array();
    for (double loss : fit.losses) losses.push_back(number_or_null(loss));
    list.push_back(Json{{"session", fit.session},
                        {"solver", fit.solver},
                        {"family", fit.family},
                        {"partitions", fit.partitions},
                        {"rounds", fit.rounds},
                        {"loss", number_or_null(fit.loss)},
                        {"losses", std::move(losses)},
                        {"seconds", fit.seconds},
                        {"running", fit.running},
                        {"converged", fit.converged},
                        {"iterations", fit.iterations},
                        {"objective", number_or_null(fit.objective)},
                        {"error", fit.error}});
  }
  return Json{{"now", now}, {"fits", std::move(list)}};
}

}  // namespace tessera::dashboard
