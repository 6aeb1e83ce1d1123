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

Json progress_json(const Snapshot& snapshot, double now) {
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
  return out;
}

Json task_stream_json(const monitor::ClusterMonitor& monitor, double window, double now) {
  const auto snapshot = monitor.tasks.runs_since(now - window);
  std::vector<std::uint32_t> worker_ids;
  for (const auto& run : snapshot.runs) worker_ids.push_back(run.worker);
  std::sort(worker_ids.begin(), worker_ids.end());
  worker_ids.erase(std::unique(worker_ids.begin(), worker_ids.end()), worker_ids.end());

  Json runs = Json::array();
  const bool aggregate = snapshot.runs.size() > kMaxRectangles;
  if (!aggregate) {
    for (const auto& run : snapshot.runs)
      runs.push_back(Json::array(
          {run.worker, run.function, run.finished_at - run.seconds, run.finished_at, run.tasks, run.failed}));
  } else {
    // One rectangle per (worker, function, bin): the bins are as wide as the window over a quarter of
    // the rectangles allowed, each spanning the runs it holds.
    const double bin = window / static_cast<double>(kMaxRectangles / 4);
    struct Span {
      double start, end;
      std::uint64_t tasks, failed;
    };
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::int64_t>, Span> spans;
    for (const auto& run : snapshot.runs) {
      const auto key = std::make_tuple(run.worker, run.function,
                                       static_cast<std::int64_t>(std::floor((run.finished_at - now) / bin)));
      auto [it, fresh] = spans.try_emplace(key, Span{run.finished_at - run.seconds, run.finished_at, 0, 0});
      it->second.start = std::min(it->second.start, run.finished_at - run.seconds);
      it->second.end = std::max(it->second.end, run.finished_at);
      it->second.tasks += run.tasks;
      it->second.failed += run.failed;
    }
    for (const auto& [key, span] : spans) {
      if (runs.size() >= kMaxRectangles) break;
      runs.push_back(
          Json::array({std::get<0>(key), std::get<1>(key), span.start, span.end, span.tasks, span.failed}));
    }
  }
  const auto per_second = monitor.tasks.per_second(now, 60);
  return Json{{"now", now},
              {"window", window},
              {"functions", snapshot.functions},
              {"workers", worker_ids},
              {"columns", {"worker", "function", "start", "end", "tasks", "failed"}},
              {"runs", std::move(runs)},
              {"run_count", snapshot.runs.size()},
              {"aggregated", aggregate},
              {"truncated", snapshot.truncated},
              {"tasks_per_second", monitor.tasks.recent_rate(now)},
              {"tasks_per_second_series", per_second}};
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
                        {"closed", f.closed},
                        {"finished", f.finished_at > 0},
                        {"error", f.error},
                        {"opened_at", f.opened_at},
                        {"finished_at", f.finished_at}});
  }
  return Json{{"now", now}, {"stored_results", stored}, {"streams", std::move(list)}};
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
