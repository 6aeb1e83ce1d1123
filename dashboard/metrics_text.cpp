#include "dashboard/metrics_text.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tessera::dashboard {
namespace {

std::string number(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

class Writer {
 public:
  void family(const char* name, const char* type, const char* help) {
    out_ << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
  }
  // `labels`: already formatted, `a="x",b="y"`, or empty.
  void sample(const std::string& name, const std::string& labels, double value) {
    out_ << name;
    if (!labels.empty()) out_ << '{' << labels << '}';
    out_ << ' ' << number(value) << '\n';
  }
  void histogram(const std::string& name, const std::string& labels, const monitor::LogHistogram& h) {
    const std::string prefix = labels.empty() ? "" : labels + ",";
    for (double bound : monitor::LogHistogram::exported_bounds())
      sample(name + "_bucket", prefix + "le=\"" + number(bound) + "\"",
             static_cast<double>(h.count_at_most(bound)));
    sample(name + "_bucket", prefix + "le=\"+Inf\"", static_cast<double>(h.count()));
    sample(name + "_sum", labels, h.sum());
    sample(name + "_count", labels, static_cast<double>(h.count()));
  }
  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

std::string label(const char* key, const std::string& value) {
  return std::string(key) + "=\"" + escape_label(value) + "\"";
}

}  // namespace

std::string escape_label(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string metrics_text(const Snapshot& snapshot, const monitor::ClusterMonitor& monitor, double now) {
  const auto& s = snapshot.status;
  Writer w;
  w.family("tessera_up", "gauge",
           "1 while the scheduler answers the dashboard; 0 when its last answer is missing.");
  w.sample("tessera_up", "", snapshot.error.empty() && snapshot.sampled_at > 0 ? 1 : 0);
  w.family("tessera_scrape_age_seconds", "gauge", "How old the scheduler's figures below are.");
  w.sample("tessera_scrape_age_seconds", "", snapshot.sampled_at > 0 ? now - snapshot.sampled_at : 0);

  w.family("tessera_workers", "gauge", "Workers registered with the scheduler, by state.");
  w.sample("tessera_workers", label("state", "active"), s.workers);
  w.sample("tessera_workers", label("state", "retiring"), s.retiring_workers);
  w.family("tessera_workers_lost_total", "counter",
           "Workers declared lost (silent, or stalled), since start.");
  w.sample("tessera_workers_lost_total", "", static_cast<double>(s.workers_lost));
  w.family("tessera_clients", "gauge", "Remote clients connected.");
  w.sample("tessera_clients", "", static_cast<double>(snapshot.clients));
  w.family("tessera_operations", "gauge", "Live operations (graph layers) the scheduler holds.");
  w.sample("tessera_operations", "", static_cast<double>(s.operations));

  w.family("tessera_tasks", "gauge",
           "Tasks now, by state: submitted and not final, or finished with a result held.");
  w.sample("tessera_tasks", label("state", "pending"), static_cast<double>(s.tasks_pending));
  w.sample("tessera_tasks", label("state", "held"), static_cast<double>(s.results_held));
  w.family("tessera_tasks_total", "counter", "Tasks that reached a state, since start.");
  w.sample("tessera_tasks_total", label("state", "done"), static_cast<double>(s.tasks_done));
  w.sample("tessera_tasks_total", label("state", "erred"), static_cast<double>(s.tasks_erred));
  w.sample("tessera_tasks_total", label("state", "cancelled"), static_cast<double>(s.tasks_cancelled));
  w.sample("tessera_tasks_total", label("state", "stolen"), static_cast<double>(s.tasks_stolen));
  w.sample("tessera_tasks_total", label("state", "recomputed"), static_cast<double>(s.tasks_recomputed));
  w.sample("tessera_tasks_total", label("state", "from_checkpoint"),
           static_cast<double>(s.tasks_from_checkpoint));
  w.family("tessera_tasks_per_second", "gauge", "Tasks run per second, over the last 10 whole seconds.");
  w.sample("tessera_tasks_per_second", "", monitor.tasks.recent_rate(now));
  w.family("tessera_sets_total", "counter", "Streams' parameter sets the workers ran, since start.");
  // sets_done counts every set run, failed ones too.
  w.sample("tessera_sets_total", label("state", "done"),
           static_cast<double>(s.sets_done - std::min(s.sets_done, s.sets_failed)));
  w.sample("tessera_sets_total", label("state", "failed"), static_cast<double>(s.sets_failed));
  w.family("tessera_sets_per_second", "gauge",
           "Streams' parameter sets run per second, over the last 10 whole seconds.");
  w.sample("tessera_sets_per_second", "", monitor.tasks.recent_set_rate(now));
  const auto totals = monitor.tasks.totals();
  w.family("tessera_task_duration_seconds", "histogram", "Each task's share of its job's compute time.");
  w.histogram("tessera_task_duration_seconds", "", totals.task_seconds);

  w.family("tessera_worker_threads", "gauge", "Compute threads of each worker.");
  for (const auto& worker : snapshot.workers)
    w.sample("tessera_worker_threads",
             label("worker", std::to_string(worker.id)) + "," + label("name", worker.name), worker.threads);
  w.family("tessera_worker_tasks", "gauge", "Tasks placed on each worker and not finished.");
  for (const auto& worker : snapshot.workers)
    w.sample("tessera_worker_tasks", label("worker", std::to_string(worker.id)),
             static_cast<double>(worker.tasks_assigned));
  w.family("tessera_worker_sets_total", "counter",
           "Streams' parameter sets each worker ran, since it joined.");
  for (const auto& worker : snapshot.workers)
    w.sample("tessera_worker_sets_total", label("worker", std::to_string(worker.id)),
             static_cast<double>(worker.sets_run));
  w.family("tessera_worker_memory_bytes", "gauge",
           "Each worker's memory: results Tessera manages in memory (managed), on disk (spilled), its "
           "process's resident bytes above its start (rss) and in all (process_rss, shared by the workers "
           "of one process), the limit.");
  for (const auto& m : s.memory) {
    const std::string id = label("worker", std::to_string(m.worker));
    w.sample("tessera_worker_memory_bytes", id + "," + label("kind", "managed"),
             static_cast<double>(m.managed_bytes));
    w.sample("tessera_worker_memory_bytes", id + "," + label("kind", "spilled"),
             static_cast<double>(m.spilled_bytes));
    w.sample("tessera_worker_memory_bytes", id + "," + label("kind", "rss"), static_cast<double>(m.rss));
    w.sample("tessera_worker_memory_bytes", id + "," + label("kind", "process_rss"),
             static_cast<double>(m.process_rss));
    w.sample("tessera_worker_memory_bytes", id + "," + label("kind", "limit"), static_cast<double>(m.limit));
  }
  w.family("tessera_worker_paused", "gauge",
           "1 while a worker starts no task: memory above its pause fraction.");
  for (const auto& m : s.memory)
    w.sample("tessera_worker_paused", label("worker", std::to_string(m.worker)), m.paused);
  w.family("tessera_spills_total", "counter", "Results written to disk past the memory target.");
  for (const auto& m : s.memory)
    w.sample("tessera_spills_total", label("worker", std::to_string(m.worker)),
             static_cast<double>(m.spills));
  w.family("tessera_spilled_bytes_total", "counter", "Bytes written to disk by spills.");
  for (const auto& m : s.memory)
    w.sample("tessera_spilled_bytes_total", label("worker", std::to_string(m.worker)),
             static_cast<double>(m.spilled_total));
  w.family("tessera_unspills_total", "counter", "Spilled results read back.");
  for (const auto& m : s.memory)
    w.sample("tessera_unspills_total", label("worker", std::to_string(m.worker)),
             static_cast<double>(m.unspills));
  w.family("tessera_unspilled_bytes_total", "counter", "Bytes read back from disk.");
  for (const auto& m : s.memory)
    w.sample("tessera_unspilled_bytes_total", label("worker", std::to_string(m.worker)),
             static_cast<double>(m.unspilled_total));
  w.family("tessera_spill_corrupt_records_total", "counter",
           "Spilled records that came back damaged (recomputed).");
  for (const auto& m : s.memory)
    w.sample("tessera_spill_corrupt_records_total", label("worker", std::to_string(m.worker)),
             static_cast<double>(m.corrupt_records));

  w.family("tessera_checkpoints_stored", "gauge", "Checkpoint records in the store.");
  w.sample("tessera_checkpoints_stored", "", static_cast<double>(s.checkpoints_stored));
  w.family("tessera_checkpoints_written_total", "counter", "Checkpoints written, since start.");
  w.sample("tessera_checkpoints_written_total", "", static_cast<double>(s.checkpoints_written));
  w.family("tessera_checkpoint_bytes_written_total", "counter", "Bytes of checkpoints written, since start.");
  w.sample("tessera_checkpoint_bytes_written_total", "", static_cast<double>(s.checkpoint_bytes_written));

  const auto streams = monitor.streams.figures();
  std::uint64_t stored = 0;
  for (const auto& f : streams) stored += f.stored;
  w.family("tessera_stored_results", "gauge", "Results the streams shown below have stored.");
  w.sample("tessera_stored_results", "", static_cast<double>(stored));
  w.family("tessera_stream_sets_total", "counter",
           "Parameter sets of each stream, by what happened to them.");
  for (const auto& f : streams) {
    const std::string id = label("stream", std::to_string(f.id)) + "," + label("simulation", f.simulation);
    w.sample("tessera_stream_sets_total", id + "," + label("state", "accepted"),
             static_cast<double>(f.accepted));
    w.sample("tessera_stream_sets_total", id + "," + label("state", "stored"), static_cast<double>(f.stored));
    w.sample("tessera_stream_sets_total", id + "," + label("state", "failed"), static_cast<double>(f.failed));
  }
  w.family("tessera_stream_sets_in_flight", "gauge", "Sets accepted and not yet stored, per stream.");
  for (const auto& f : streams)
    w.sample("tessera_stream_sets_in_flight", label("stream", std::to_string(f.id)),
             static_cast<double>(f.in_flight()));
  w.family("tessera_stream_failures_total", "counter", "Failed sets of each stream, by kind.");
  for (const auto& f : streams)
    for (std::size_t k = 1; k < f.failures.size(); ++k)
      w.sample(
          "tessera_stream_failures_total",
          label("stream", std::to_string(f.id)) + "," + label("kind", failure_name(static_cast<Failure>(k))),
          static_cast<double>(f.failures[k]));
  w.family("tessera_stream_sets_per_second", "gauge",
           "Sets stored per second, over the last 10 whole seconds.");
  for (const auto& f : streams)
    w.sample("tessera_stream_sets_per_second", label("stream", std::to_string(f.id)), f.sets_per_second);
  w.family("tessera_stream_open", "gauge", "1 while a stream runs, 0 once it finished.");
  for (const auto& f : streams)
    w.sample("tessera_stream_open", label("stream", std::to_string(f.id)), f.finished_at > 0 ? 0 : 1);
  w.family("tessera_stream_latency_seconds", "histogram", "From a set's acceptance to its stored result.");
  for (const auto& f : streams)
    w.histogram("tessera_stream_latency_seconds", label("stream", std::to_string(f.id)), f.latency);

  const auto fits = monitor.glm.figures();
  std::uint64_t running = 0;
  for (const auto& fit : fits) running += fit.running;
  w.family("tessera_glm_fits", "gauge", "GLM fits shown, by state.");
  w.sample("tessera_glm_fits", label("state", "running"), static_cast<double>(running));
  w.sample("tessera_glm_fits", label("state", "ended"), static_cast<double>(fits.size() - running));
  return w.text();
}

}  // namespace tessera::dashboard
