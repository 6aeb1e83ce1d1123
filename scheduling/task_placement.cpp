// Placement: which worker gets which task (data locality first, then load, within each worker's room),
// the batched messages that follow, work stealing for idle workers, and forgetting finished operations.
#include <algorithm>
#include <tuple>

#include "scheduling/core_state.hpp"

namespace tessera::scheduling {

std::uint64_t SchedulerCore::State::capacity(const WorkerRecord& w, const OpRecord& rec) const {
  const std::uint64_t threads = w.description.threads;
  if (rec.average_task_seconds < 0) return threads * options.initial_tasks_per_thread + 1;
  const double per_thread = options.backlog_seconds_per_thread / std::max(rec.average_task_seconds, 1e-9);
  if (per_thread < 1) return threads;
  return threads * static_cast<std::uint64_t>(std::min(per_thread, double(1 << 20))) + 1;
}

bool SchedulerCore::State::any_unpaused() const {
  for (std::uint32_t w = 0; w < workers.size(); ++w)
    if (usable(w) && !workers[w].memory_paused) return true;
  return false;
}

std::uint32_t SchedulerCore::State::least_loaded(const OpRecord& rec, bool anyway) const {
  const bool skip_paused = any_unpaused();
  std::uint32_t best = kNoWorker;
  double best_load = 0;
  for (std::uint32_t w = 0; w < workers.size(); ++w) {
    if (!usable(w) || (skip_paused && workers[w].memory_paused) ||
        (!anyway && held(workers[w], rec) >= capacity(workers[w], rec)))
      continue;
    const double load = double(workers[w].occupancy) / workers[w].description.threads;
    if (best == kNoWorker || load < best_load) best = w, best_load = load;
  }
  return best;
}

std::uint32_t SchedulerCore::State::nearest_home(const OpRecord& rec, std::uint32_t task) const {
  // Each worker holding inputs of the task, with how many it holds, in the order of the columns.
  struct Home {
    std::uint32_t worker;
    std::uint32_t inputs;
  };
  std::vector<Home> homes;
  std::uint32_t inputs = 0;
  for (const auto& column : rec.op->columns()) {
    const auto* ref = column.reference(task);
    if (!ref) continue;
    const auto producer = ops.find(ref->op);
    if (producer == ops.end()) continue;
    ++inputs;
    const std::uint32_t home = producer->second->worker[ref->index];
    auto it = std::find_if(homes.begin(), homes.end(), [&](const Home& h) { return h.worker == home; });
    if (it == homes.end())
      homes.push_back(Home{home, 1});
    else
      it->inputs += 1;
  }
  std::uint32_t best = kNoWorker;
  double best_reads = 0;
  for (const Home& h : homes) {
    if (!usable(h.worker) || held(workers[h.worker], rec) >= capacity(workers[h.worker], rec) ||
        (workers[h.worker].memory_paused && any_unpaused()))
      continue;
    // An input held elsewhere is fetched; one held here is read back from disk as often as this worker's
    // results are on disk. Ties go to the first input's worker.
    const double reads = double(inputs - h.inputs) + h.inputs * workers[h.worker].spilled_share;
    if (best == kNoWorker || reads < best_reads) best = h.worker, best_reads = reads;
  }
  return best;
}

void SchedulerCore::State::place(OpRecord& rec, std::uint32_t task, std::uint32_t w) {
  WorkerRecord& worker = touch(w);
  const OpId op = rec.op->id();
  const std::uint32_t slot = worker.next_slot[op]++;
  // A task placed before and stolen back has already counted for its consumers.
  const bool first_placement = rec.worker[task] == kNoWorker;
  if (!recovering.empty()) recovering.erase(task_key(op, task));
  worker.occupancy_by_op[op] += 1;
  transition(rec, task, Placement::placed);
  rec.worker[task] = w;
  rec.slot[task] = slot;
  rec.used(w);
  worker.occupancy += 1;
  auto& runs = worker.assign.runs;
  const bool from_store = rec.is_from_store(task);
  const bool checkpoint = rec.is_checkpointed(task) && !from_store;
  if (!runs.empty() && !runs.back().adopt && runs.back().op == rec.op &&
      runs.back().first_task + runs.back().count == task &&
      runs.back().first_slot + runs.back().count == slot && runs.back().checkpoint == checkpoint &&
      runs.back().restored.empty() == !from_store) {
    runs.back().count += 1;
  } else {
    runs.push_back(AssignRun{rec.op, task, 1, slot, false, !rec.watches.empty(), checkpoint});
  }
  if (from_store) {
    // The worker takes the stored value as the result: it needs no inputs.
    auto value = rec.restored.find(task);
    runs.back().restored.push_back(value == rec.restored.end() ? Value{} : std::move(value->second));
    if (value != rec.restored.end()) rec.restored.erase(value);
  } else if (rec.op->has_references()) {
    const auto& columns = rec.op->columns();
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const auto* ref = columns[j].reference(task);
      if (!ref) continue;
      OpRecord* producer = find(ref->op);
      // A producer being computed again subscribes this task when it is placed (below, for it).
      if (producer->worker[ref->index] == kNoWorker) continue;
      touch(producer->worker[ref->index])
          .subscribe.subscriptions.push_back(Subscription{
              ref->op, producer->slot[ref->index], Destination{w, op, slot, static_cast<std::uint16_t>(j)}});
    }
  }
  if (!rec.dependents.empty()) {
    for (const Edge& edge : rec.dependents[task]) {
      OpRecord* consumer = find(edge.consumer);
      if (!consumer) continue;
      if (first_placement && consumer->unplaced_inputs[edge.task] > 0) {
        if (--consumer->unplaced_inputs[edge.task] == 0 &&
            consumer->placement[edge.task] == Placement::unplaced)
          newly_placeable.push_back(Range{edge.consumer, edge.task, edge.task + 1});
      } else if (consumer->placement[edge.task] == Placement::placed) {
        // The consumer subscribed to this task's old place: subscribe it to the new one.
        const auto& columns = consumer->op->columns();
        for (std::size_t j = 0; j < columns.size(); ++j) {
          const auto* ref = columns[j].reference(edge.task);
          if (ref && ref->op == op && ref->index == task)
            worker.subscribe.subscriptions.push_back(
                Subscription{op, slot,
                             Destination{consumer->worker[edge.task], edge.consumer,
                                         consumer->slot[edge.task], static_cast<std::uint16_t>(j)}});
        }
      }
    }
  }
}

void SchedulerCore::State::flush_workers(Outbox& out) {
  for (std::uint32_t id = 0; id < workers.size(); ++id) {
    WorkerRecord& w = workers[id];
    if (!w.dirty) continue;
    w.dirty = false;
    if (!w.reachable) {  // left: nothing to tell it
      w.assign = {};
      w.subscribe = {};
      w.cancel.clear();
      w.drop.clear();
      continue;
    }
    // Assignments first: a subscription in this flush may name a slot assigned in it.
    if (!w.assign.runs.empty()) out.send(id, std::exchange(w.assign, {}));
    if (!w.subscribe.subscriptions.empty()) out.send(id, std::exchange(w.subscribe, {}));
    for (auto& [op, slots] : w.cancel) out.send(id, CancelSlots{SlotBatch{op, std::move(slots)}});
    for (auto& [op, slots] : w.drop) out.send(id, DropSlots{SlotBatch{op, std::move(slots)}});
    w.cancel.clear();
    w.drop.clear();
  }
}

void SchedulerCore::State::forget_finished(Outbox& out) {
  for (OpId id : maybe_finished) {
    OpRecord* rec = find(id);
    if (!rec || rec->unfinished != 0 || rec->holds_total != 0) continue;
    for (auto w : rec->workers_used) {
      workers[w].occupancy_by_op.erase(id);
      if (!workers[w].gone) out.send(w, ForgetOperation{id});
    }
    const std::string& function = rec->op->function().name;
    auto progress = forgotten_progress.find(function);
    if (progress == forgotten_progress.end()) {
      const bool room = forgotten_progress.size() + 1 < kProgressFunctions;
      const std::string name = room ? function : std::string(kOtherFunctions);
      progress = forgotten_progress.try_emplace(name, FunctionProgress{name}).first;
    }
    add_progress(progress->second, *rec);
    ops.erase(id);
  }
  maybe_finished.clear();
}

void SchedulerCore::State::steal_for_idle_workers(Outbox& out) {
  if (!placeable.empty()) return;
  for (std::uint32_t idle = 0; idle < workers.size(); ++idle) {
    const std::uint32_t idle_threads = workers[idle].description.threads;
    if (!usable(idle) || workers[idle].memory_paused || workers[idle].occupancy >= idle_threads) continue;
    std::uint32_t victim = kNoWorker;
    std::uint64_t most_queued = 0;
    for (std::uint32_t v = 0; v < workers.size(); ++v) {
      const WorkerRecord& w = workers[v];
      // A worker paused for memory runs one task at a time: the rest of its queue waits.
      const std::uint64_t running = runs_at_once(w);
      if (v == idle || w.gone || w.steal_pending || w.occupancy <= running) continue;
      if (w.occupancy - running > most_queued) victim = v, most_queued = w.occupancy - running;
    }
    if (victim == kNoWorker) return;
    WorkerRecord& w = workers[victim];
    auto busiest = std::max_element(w.occupancy_by_op.begin(), w.occupancy_by_op.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
    if (busiest == w.occupancy_by_op.end() || busiest->second == 0) continue;
    const std::uint64_t free_threads = idle_threads - workers[idle].occupancy;
    const auto most = static_cast<std::uint32_t>(
        std::max<std::uint64_t>(1, std::min(most_queued / 2 + 1, free_threads * 64)));
    w.steal_pending = true;
    out.send(victim, StealRequest{busiest->first, most});
  }
}

void SchedulerCore::State::dispatch(Outbox& out) {
  while (!placeable.empty()) {
    Range range = placeable.front();
    placeable.pop_front();
    OpRecord* rec = find(range.op);
    if (!rec) continue;
    while (range.begin < range.end && rec->placement[range.begin] != Placement::unplaced) ++range.begin;
    if (range.begin == range.end) continue;
    bool placed_any = false;
    const bool is_recovering = !recovering.empty() && recovering.count(task_key(range.op, range.begin));
    if (is_recovering) {
      const std::uint32_t w = least_loaded(*rec, true);
      if (w != kNoWorker) {
        place(*rec, range.begin, w);
        range.begin += 1;
        placed_any = true;
      }
    } else if (!rec->op->has_references()) {
      const std::uint32_t w = least_loaded(*rec);
      if (w != kNoWorker) {
        const std::uint64_t room = capacity(workers[w], *rec) - held(workers[w], *rec);
        const std::uint32_t end =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(range.end, range.begin + room));
        for (std::uint32_t t = range.begin; t < end; ++t)
          if (rec->placement[t] == Placement::unplaced) place(*rec, t, w);
        range.begin = end;
        placed_any = true;
      }
    } else {
      // Data locality first: the worker holding (or to hold) its inputs that reads least, if it has
      // room; a task restored from a checkpoint reads no input and goes anywhere with room.
      const std::uint32_t task = range.begin;
      std::uint32_t w = rec->is_from_store(task) ? kNoWorker : nearest_home(*rec, task);
      if (w == kNoWorker) w = least_loaded(*rec);
      if (w != kNoWorker) {
        place(*rec, task, w);
        range.begin += 1;
        placed_any = true;
      }
    }
    if (range.begin < range.end) placeable.push_front(range);
    // Depth first: consumers that just became placeable go before anything else.
    for (auto it = newly_placeable.rbegin(); it != newly_placeable.rend(); ++it) placeable.push_front(*it);
    newly_placeable.clear();
    if (!placed_any) break;
  }
  steal_for_idle_workers(out);
  flush_workers(out);
}

void SchedulerCore::State::settle(Outbox& out) {
  flush_deliveries(out);
  dispatch(out);
  forget_finished(out);
}

}  // namespace tessera::scheduling
