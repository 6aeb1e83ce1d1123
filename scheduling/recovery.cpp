// Recovery: tasks computed again from lineage after a worker is lost, and retiring workers handing
// their held results over.
#include <algorithm>
#include <tuple>
#include <unordered_set>

#include "scheduling/core_state.hpp"

namespace tessera::scheduling {

void SchedulerCore::State::try_finish_retirement(std::uint32_t w, Outbox& out) {
  WorkerRecord& leaving = workers[w];
  if (!leaving.retiring || leaving.gone || leaving.occupancy != 0) return;
  for (auto& [id, rec_ptr] : ops) {
    OpRecord& rec = *rec_ptr;
    if (std::find(rec.workers_used.begin(), rec.workers_used.end(), w) == rec.workers_used.end()) continue;
    for (std::uint32_t t = 0; t < rec.op->size(); ++t) {
      if (rec.worker[t] != w || rec.placement[t] != Placement::finished || rec.holds[t] == 0) continue;
      std::uint32_t target = kNoWorker;
      for (std::uint32_t c = 0; c < workers.size(); ++c)
        if (usable(c) && (target == kNoWorker || workers[c].occupancy < workers[target].occupancy))
          target = c;
      if (target == kNoWorker) return;  // nowhere to move it: stay until a worker joins
      WorkerRecord& home = touch(target);
      const std::uint32_t slot = home.next_slot[id]++;
      home.assign.runs.push_back(AssignRun{rec.op, t, 1, slot, true, false});
      touch(w).subscribe.subscriptions.push_back(
          Subscription{id, rec.slot[t], Destination{target, id, slot, kAdoptColumn}});
      rec.worker[t] = target;
      rec.slot[t] = slot;
      rec.used(target);
    }
  }
  workers[w].gone = true;
  stats.retiring_workers -= 1;
  flush_workers(out);
  out.send(w, ShutdownWorker{});
  workers[w].reachable = false;
}

void SchedulerCore::State::revive(OpRecord& rec, std::uint32_t task,
                                  std::vector<std::pair<OpRecord*, std::uint32_t>>& more,
                                  std::vector<std::pair<OpRecord*, std::uint32_t>>& revived) {
  const Placement placement = rec.placement[task];
  if (placement == Placement::unplaced) return;  // revived already, or never placed
  if (placement == Placement::failed) return;    // failures are final
  revived.emplace_back(&rec, task);
  transition(rec, task, Placement::unplaced);
  if (placement == Placement::placed) return;  // still holds its inputs
  // Finished (its result lost or dropped) or released with a forgotten operation: computed again,
  // which takes its inputs again.
  if (placement == Placement::finished && rec.holds[task] > 0) stats.results_held -= 1;
  // Placed as if for the first time: its consumers wait for it, or subscribe again if placed already.
  rec.worker[task] = kNoWorker;
  rec.unfinished += 1;
  stats.tasks_recomputed += 1;
  if (!rec.op->has_references()) return;
  const auto& columns = rec.op->columns();
  for (std::size_t j = 0; j < columns.size(); ++j) {
    const auto* ref = columns[j].reference(task);
    if (!ref) continue;
    OpRecord* producer = find(ref->op);
    if (!producer) producer = restore_from_lineage(rec, ref->op);
    if (!producer) continue;  // not in lineage: cannot happen for a task that ran
    const Placement before = producer->placement[ref->index];
    const bool result_gone = before == Placement::cancelled ||
                             (before == Placement::finished && (producer->holds[ref->index] == 0 ||
                                                                workers[producer->worker[ref->index]].gone));
    producer->holds[ref->index] += 1;
    producer->holds_total += 1;
    if (result_gone) more.emplace_back(producer, ref->index);
  }
}

OpRecord* SchedulerCore::State::restore_from_lineage(const OpRecord& consumer, OpId id) {
  std::shared_ptr<const Lineage> home = consumer.lineage;
  const OperationPtr* op = home->find(id);
  for (std::size_t k = 0; !op && k < consumer.lineage->producers.size(); ++k) {
    home = consumer.lineage->producers[k];
    op = home->find(id);
  }
  if (!op) return nullptr;
  auto back = std::make_unique<OpRecord>(*op, std::const_pointer_cast<Lineage>(home), Placement::cancelled);
  OpRecord* raw = back.get();
  ops.emplace(id, std::move(back));
  return raw;
}

// What the lost worker was running and the results it held (and that somebody still needs) are computed
// again elsewhere, from lineage, and its peers stop sending to it.
Outbox SchedulerCore::worker_lost(std::uint32_t w) {
  State& st = *state_;
  Outbox out;
  if (w >= st.workers.size() || st.workers[w].gone) return out;
  WorkerRecord& lost = st.workers[w];
  if (lost.retiring) {
    st.stats.retiring_workers -= 1;
  } else {
    st.stats.workers -= 1;
  }
  st.stats.workers_lost += 1;
  lost.gone = true;
  out.workers_lost.push_back(w);
  // A worker that was only cut off must stop and register anew: it is told so, if it can still hear.
  out.send(w, ShutdownWorker{});
  lost.reachable = false;
  lost.occupancy = 0;
  lost.occupancy_by_op.clear();
  lost.assign = {};
  lost.subscribe = {};
  lost.cancel.clear();
  lost.drop.clear();
  for (std::uint32_t other = 0; other < st.workers.size(); ++other)
    if (!st.workers[other].gone) out.send(other, PeerNotice{w, "", ""});

  std::vector<std::pair<OpRecord*, std::uint32_t>> pending, revived;
  for (auto& [id, rec] : st.ops) {
    if (std::find(rec->workers_used.begin(), rec->workers_used.end(), w) == rec->workers_used.end()) continue;
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
      if (rec->worker[t] != w) continue;
      const Placement placement = rec->placement[t];
      if (placement == Placement::placed || (placement == Placement::finished && rec->holds[t] > 0))
        pending.emplace_back(rec.get(), t);
    }
  }
  while (!pending.empty()) {
    auto [rec, t] = pending.back();
    pending.pop_back();
    std::vector<std::pair<OpRecord*, std::uint32_t>> more;
    st.revive(*rec, t, more, revived);
    for (auto& m : more) pending.push_back(m);
  }
  if (revived.empty()) return out;
  // Consumers already placed on live workers subscribed to the lost places: they are subscribed again
  // when the producers are placed anew (place() follows the dependents' edges).
  std::unordered_set<std::uint64_t> again;
  for (auto& [rec, t] : revived) {
    again.insert(task_key(rec->op->id(), t));
    st.recovering.insert(task_key(rec->op->id(), t));
  }
  for (auto& [id, rec] : st.ops) {
    if (!rec->op->has_references()) continue;
    const auto& columns = rec->op->columns();
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
      if (is_ended(rec->placement[t])) continue;
      for (std::size_t j = 0; j < columns.size(); ++j) {
        const auto* ref = columns[j].reference(t);
        if (!ref || !again.count(task_key(ref->op, ref->index))) continue;
        OpRecord* producer = st.find(ref->op);
        if (!producer) continue;
        if (producer->dependents.empty()) producer->dependents.resize(producer->op->size());
        auto& edges = producer->dependents[ref->index];
        const bool known = std::any_of(edges.begin(), edges.end(), [&](const Edge& e) {
          return e.consumer == rec->op->id() && e.task == t;
        });
        if (known) continue;
        edges.push_back(Edge{rec->op->id(), t});
        // One count per edge: place() takes one off per edge when the producer is placed.
        if (producer->worker[ref->index] == kNoWorker && rec->placement[t] == Placement::unplaced)
          rec->unplaced_inputs[t] += 1;
      }
    }
  }
  // At the front: what waits for them may be filling the workers.
  for (auto it = revived.rbegin(); it != revived.rend(); ++it) {
    auto [rec, t] = *it;
    st.maybe_finished.insert(rec->op->id());
    if (rec->op->has_references() && rec->unplaced_inputs[t] != 0) continue;  // placed after its producers
    st.placeable.push_front(Range{rec->op->id(), t, t + 1});
  }
  st.dispatch(out);
  st.forget_finished(out);
  return out;
}

}  // namespace tessera::scheduling
