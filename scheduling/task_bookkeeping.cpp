// What a task's end, withdrawal or release changes: its placement (through the one transition
// function), its worker's counts, the holds on its inputs, its watchers' deliveries, its dependents.
#include <algorithm>
#include <tuple>

#include "scheduling/core_state.hpp"

namespace tessera::scheduling {

void SchedulerCore::State::transition(OpRecord& rec, std::uint32_t task, Placement to) {
  const Placement from = rec.placement[task];
  if (!transition_allowed(from, to)) throw IllegalTransition(rec.op->key(task), from, to);
  rec.placement[task] = to;
  rec.by_placement[static_cast<std::size_t>(from)] -= 1;
  rec.by_placement[static_cast<std::size_t>(to)] += 1;
}

void SchedulerCore::State::leave_worker(OpRecord& rec, std::uint32_t task) {
  WorkerRecord& w = workers[rec.worker[task]];
  w.occupancy -= 1;
  w.occupancy_by_op[rec.op->id()] -= 1;
}

void SchedulerCore::State::end_on_worker(OpRecord& rec, std::uint32_t task, Placement to) {
  transition(rec, task, to);
  leave_worker(rec, task);
  rec.unfinished -= 1;
  maybe_finished.insert(rec.op->id());
}

void SchedulerCore::State::deliver(OpRecord& rec, std::uint32_t task, TaskState state, const Value& value,
                                   const std::shared_ptr<const TaskFailed>& error, bool held) {
  if (error) rec.failures[task] = error;
  if (rec.watches.empty()) return;
  // Watches are sorted by first_task; one covering `task` starts within longest_watch before it.
  auto it = std::upper_bound(rec.watches.begin(), rec.watches.end(), task,
                             [](std::uint32_t t, const WatchRange& w) { return t < w.first_task; });
  while (it != rec.watches.begin()) {
    --it;
    if (it->first_task + rec.longest_watch <= task) break;
    if (task >= it->first_task + it->count || !it->sink->sink) continue;
    auto [index, fresh] = delivery_index.emplace(it->sink.get(), deliveries.size());
    if (fresh) deliveries.emplace_back(it->sink.get(), std::vector<Delivery>{});
    deliveries[index->second].second.push_back(
        Delivery{it->first_slot + (task - it->first_task), state, value, error, held});
  }
}

void SchedulerCore::State::flush_deliveries(Outbox& out) {
  for (auto& [sink, batch] : deliveries)
    if (sink->sink) out.deliveries.emplace_back(sink->sink, std::move(batch));
  deliveries.clear();
  delivery_index.clear();
}

void SchedulerCore::State::release_inputs(OpRecord& rec, std::uint32_t task) {
  if (!rec.op->has_references() || rec.is_from_store(task)) return;  // a restored task took none
  const auto& columns = rec.op->columns();
  for (std::size_t j = 0; j < columns.size(); ++j)
    if (const auto* ref = columns[j].reference(task))
      if (OpRecord* producer = find(ref->op)) release_hold(*producer, ref->index);
}

void SchedulerCore::State::withdraw(OpRecord& rec, std::uint32_t task) {
  if (rec.placement[task] == Placement::placed) {
    leave_worker(rec, task);
    touch(rec.worker[task]).cancel[rec.op->id()].push_back(rec.slot[task]);
  }
  transition(rec, task, Placement::cancelled);
  if (!rec.restored.empty()) rec.restored.erase(task);  // read for nothing
  rec.unfinished -= 1;
  stats.tasks_cancelled += 1;
  maybe_finished.insert(rec.op->id());
}

std::shared_ptr<const TaskFailed> SchedulerCore::State::cancel_because(
    OpRecord& rec, std::uint32_t task, const std::shared_ptr<const TaskFailed>& cause) {
  withdraw(rec, task);
  auto error = std::make_shared<const TaskFailed>(
      rec.op->function().name, rec.op->key(task),
      "its dependency " + cause->key() + " failed: " + cause->message(), true);
  deliver(rec, task, TaskState::cancelled, Value{}, error);
  release_inputs(rec, task);
  return error;
}

void SchedulerCore::State::release_hold(OpRecord& rec, std::uint32_t task) {
  rec.holds[task] -= 1;
  rec.holds_total -= 1;
  maybe_finished.insert(rec.op->id());
  if (rec.holds[task] != 0) return;
  const Placement placement = rec.placement[task];
  if (placement == Placement::finished) {
    touch(rec.worker[task]).drop[rec.op->id()].push_back(rec.slot[task]);
    stats.results_held -= 1;
  } else if (!is_ended(placement)) {
    // Nobody wants it any more: cancel it, as Dask does when the last future goes.
    withdraw(rec, task);
    release_inputs(rec, task);
  }
}

void SchedulerCore::State::cancel_dependents(OpRecord& failed_rec, std::uint32_t failed_task,
                                             const std::shared_ptr<const TaskFailed>& cause) {
  std::vector<std::pair<OpId, std::uint32_t>> stack{{failed_rec.op->id(), failed_task}};
  while (!stack.empty()) {
    auto [op, task] = stack.back();
    stack.pop_back();
    OpRecord* rec = find(op);
    if (!rec || rec->dependents.empty()) continue;
    auto edges = std::move(rec->dependents[task]);
    rec->dependents[task] = {};
    for (const Edge& edge : edges) {
      OpRecord* consumer = find(edge.consumer);
      if (!consumer || is_ended(consumer->placement[edge.task])) continue;
      cancel_because(*consumer, edge.task, cause);
      stack.emplace_back(edge.consumer, edge.task);
    }
  }
}

void SchedulerCore::State::reject_task(OpRecord& rec, std::uint32_t task, const std::string& why) {
  auto error = std::make_shared<const TaskFailed>(rec.op->function().name, rec.op->key(task), why, false);
  transition(rec, task, Placement::failed);
  rec.unfinished -= 1;
  stats.tasks_erred += 1;
  deliver(rec, task, TaskState::erred, Value{}, error);
  cancel_dependents(rec, task, error);
}

}  // namespace tessera::scheduling
