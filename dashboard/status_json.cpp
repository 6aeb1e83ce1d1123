#include "dashboard/status_json.hpp"

namespace tessera::dashboard {

Json memory_json(const WorkerMemory& m) {
  return Json{{"worker", m.worker},
              {"memory_limit", m.limit},
              {"managed_bytes", m.managed_bytes},
              {"spilled_bytes", m.spilled_bytes},
              {"rss", m.rss},
              {"process_rss", m.process_rss},
              {"process_workers", m.process_workers},
              {"spills", m.spills},
              {"unspills", m.unspills},
              {"spilled_total_bytes", m.spilled_total},
              {"unspilled_total_bytes", m.unspilled_total},
              {"spill_mb_per_s", m.spill_mb_per_second()},
              {"unspill_mb_per_s", m.unspill_mb_per_second()},
              {"corrupt_records", m.corrupt_records},
              {"paused", m.paused},
              {"spill_error", m.spill_error}};
}

Json worker_json(const WorkerInfo& w) {
  return Json{{"id", w.id},
              {"name", w.name},
              {"address", w.address},
              {"threads", w.threads},
              {"memory_limit", w.memory_limit},
              {"tasks", w.tasks_assigned},
              {"sets", w.sets_run},
              {"retiring", w.retiring},
              {"memory", memory_json(w.memory)}};
}

Json workers_json(const std::vector<WorkerInfo>& workers) {
  Json out = Json::array();
  for (const auto& w : workers) out.push_back(worker_json(w));
  return out;
}

Json scheduler_json(const SchedulerStatus& s, std::uint32_t clients) {
  Json memory = Json::array();
  for (const auto& m : s.memory) memory.push_back(memory_json(m));
  return Json{{"workers", s.workers},
              {"retiring_workers", s.retiring_workers},
              {"operations", s.operations},
              {"tasks_pending", s.tasks_pending},
              {"results_held", s.results_held},
              {"tasks_done", s.tasks_done},
              {"tasks_erred", s.tasks_erred},
              {"tasks_cancelled", s.tasks_cancelled},
              {"tasks_stolen", s.tasks_stolen},
              {"clients", clients},
              {"workers_lost", s.workers_lost},
              {"tasks_recomputed", s.tasks_recomputed},
              {"sets_done", s.sets_done},
              {"sets_failed", s.sets_failed},
              {"tasks_from_checkpoint", s.tasks_from_checkpoint},
              {"checkpoints_stored", s.checkpoints_stored},
              {"checkpoints_written", s.checkpoints_written},
              {"checkpoint_bytes_written", s.checkpoint_bytes_written},
              {"checkpoint_write_seconds", s.checkpoint_write_seconds},
              {"checkpoints_corrupt", s.checkpoints_corrupt},
              {"checkpoint_error", s.checkpoint_error},
              {"memory", std::move(memory)}};
}

Json cluster_status_json(const ClusterStatus& status) {
  Json out{{"name", status.name}};
  out.update(scheduler_json(status.scheduler, status.clients));
  return out;
}

}  // namespace tessera::dashboard
