// Recovery: tasks computed again from lineage after a worker is lost, retiring workers handing their
// held results over, and the progress watchdog that declares lost a worker holding work without progress.
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
  out.workers_retired.push_back(w);
}

void SchedulerCore::State::revive(OpRecord& rec, std::uint32_t task,
                                  std::vector<std::pair<OpRecord*, std::uint32_t>>& more,
                                  std::vector<std::pair<OpRecord*, std::uint32_t>>& revived) {
  const Placement placement = rec.placement[task];
  if (placement == Placement::unplaced) return;  // revived already, or never placed
  if (placement == Placement::failed) return;    // failures are final
  revived.emplace_back(&rec, task);
  transition(rec, task, Placement::unplaced);
  if (placement != Placement::placed) {
    // Finished (its result lost or dropped) or released with a forgotten operation: run again.
    if (placement == Placement::finished && rec.holds[task] > 0) stats.results_held -= 1;
    // Placed as if for the first time: its consumers wait for it, or subscribe again if placed already.
    rec.worker[task] = kNoWorker;
    rec.unfinished += 1;
  }
  // A result stored as a checkpoint is read again rather than computed (a placed one that reads from
  // the store lost the value it was given with its worker).
  if ((placement != Placement::placed || rec.is_from_store(task)) && try_restore(rec, task)) return;
  if (rec.is_from_store(task)) {
    rec.from_store[task] = false;  // its record is gone: computed after all, taking its inputs
  } else if (placement == Placement::placed) {
    return;  // still holds its inputs
  }
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
  Outbox out;
  state_->lose_workers({w}, out);
  return out;
}

void SchedulerCore::State::lose_workers(const std::vector<std::uint32_t>& lost_workers, Outbox& out) {
  std::vector<std::uint32_t> lost_now;
  for (const std::uint32_t w : lost_workers) {
    if (w >= workers.size() || workers[w].gone) continue;
    WorkerRecord& lost = workers[w];
    if (lost.retiring) {
      stats.retiring_workers -= 1;
    } else {
      stats.workers -= 1;
    }
    stats.workers_lost += 1;
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
    lost_now.push_back(w);
  }
  if (lost_now.empty()) return;
  for (const std::uint32_t w : lost_now)
    for (std::uint32_t other = 0; other < workers.size(); ++other)
      if (!workers[other].gone) out.send(other, PeerNotice{w, "", "", ""});

  const auto was_lost = [&](std::uint32_t w) {
    return std::find(lost_now.begin(), lost_now.end(), w) != lost_now.end();
  };
  std::vector<std::pair<OpRecord*, std::uint32_t>> pending;
  for (auto& [id, rec] : ops) {
    if (std::none_of(rec->workers_used.begin(), rec->workers_used.end(), was_lost)) continue;
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
      if (rec->worker[t] == kNoWorker || !was_lost(rec->worker[t])) continue;
      const Placement placement = rec->placement[t];
      if (placement == Placement::placed || (placement == Placement::finished && rec->holds[t] > 0))
        pending.emplace_back(rec.get(), t);
    }
  }
  recover(std::move(pending), out);
}

void SchedulerCore::State::recover(std::vector<std::pair<OpRecord*, std::uint32_t>> pending, Outbox& out) {
  std::vector<std::pair<OpRecord*, std::uint32_t>> revived;
  while (!pending.empty()) {
    auto [rec, t] = pending.back();
    pending.pop_back();
    std::vector<std::pair<OpRecord*, std::uint32_t>> more;
    revive(*rec, t, more, revived);
    for (auto& m : more) pending.push_back(m);
  }
  if (revived.empty()) return;
  // Consumers already placed on live workers subscribed to the lost places: they are subscribed again
  // when the producers are placed anew (place() follows the dependents' edges).
  std::unordered_set<std::uint64_t> again;
  for (auto& [rec, t] : revived) {
    again.insert(task_key(rec->op->id(), t));
    recovering.insert(task_key(rec->op->id(), t));
  }
  for (auto& [id, rec] : ops) {
    if (!rec->op->has_references()) continue;
    const auto& columns = rec->op->columns();
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
      if (is_ended(rec->placement[t]) || rec->is_from_store(t)) continue;
      for (std::size_t j = 0; j < columns.size(); ++j) {
        const auto* ref = columns[j].reference(t);
        if (!ref || !again.count(task_key(ref->op, ref->index))) continue;
        OpRecord* producer = find(ref->op);
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
    maybe_finished.insert(rec->op->id());
    if (rec->op->has_references() && rec->unplaced_inputs[t] != 0) continue;  // placed after its producers
    placeable.push_front(Range{rec->op->id(), t, t + 1});
  }
  dispatch(out);
  forget_finished(out);
}

// Results a worker could not read back: computed again when that worker held them, sent again by the
// worker that holds them otherwise.
Outbox SchedulerCore::results_lost(const LostInputs& lost) {
  Outbox out;
  auto& st = *state_;
  if (lost.worker >= st.workers.size() || st.workers[lost.worker].gone) return out;
  std::vector<std::pair<OpRecord*, std::uint32_t>> pending;
  for (const auto& input : lost.inputs) {
    OpRecord* rec = st.find(input.producer.op);
    const std::uint32_t t = input.producer.index;
    if (!rec || t >= rec->op->size() || rec->placement[t] != Placement::finished || rec->holds[t] == 0)
      continue;  // being computed again already (its consumers are subscribed then), or unknown
    const std::uint32_t home = rec->worker[t];
    if (home == lost.worker) {
      if (std::find(pending.begin(), pending.end(), std::make_pair(rec, t)) == pending.end())
        pending.emplace_back(rec, t);
    } else if (home < st.workers.size() && !st.workers[home].gone) {
      Destination to = input.consumer;
      to.worker = lost.worker;  // a worker speaks for its own tasks only
      st.touch(home).subscribe.subscriptions.push_back(Subscription{input.producer.op, rec->slot[t], to});
    }
  }
  if (!pending.empty()) st.recover(std::move(pending), out);
  st.flush_workers(out);
  return out;
}

// ---- The progress watchdog ----

std::vector<bool> SchedulerCore::State::holds_runnable_tasks(const std::vector<bool>& suspects) const {
  std::vector<bool> runnable(workers.size(), false);
  std::size_t unknown = std::count(suspects.begin(), suspects.end(), true);
  const auto inputs_computed = [&](const OpRecord& rec, std::uint32_t task) {
    if (!rec.op->has_references() || rec.is_from_store(task)) return true;
    for (const auto& column : rec.op->columns()) {
      const auto* ref = column.reference(task);
      if (!ref) continue;
      const auto producer = ops.find(ref->op);
      if (producer != ops.end() && producer->second->placement[ref->index] != Placement::finished)
        return false;
    }
    return true;
  };
  for (const auto& [id, rec] : ops) {
    if (unknown == 0) break;
    if (std::none_of(rec->workers_used.begin(), rec->workers_used.end(),
                     [&](std::uint32_t w) { return suspects[w] && !runnable[w]; }))
      continue;
    for (std::uint32_t t = 0; t < rec->op->size() && unknown != 0; ++t) {
      const std::uint32_t w = rec->worker[t];
      if (rec->placement[t] != Placement::placed || !suspects[w] || runnable[w]) continue;
      if (!inputs_computed(*rec, t)) continue;
      runnable[w] = true;
      unknown -= 1;
    }
  }
  return runnable;
}

Outbox SchedulerCore::check_progress(std::chrono::steady_clock::time_point now) {
  State& st = *state_;
  Outbox out;
  const auto timeout = st.options.progress_timeout;
  if (timeout <= std::chrono::milliseconds::zero()) return out;
  const std::size_t n = st.workers.size();
  std::vector<std::uint64_t> stream_jobs(n, 0);
  for (const auto& [stream, loads] : st.stream_jobs)
    for (const auto& [w, jobs] : loads)
      if (w < n) stream_jobs[w] += jobs;
  // Workers that hold work and made no progress since the last check; whether that work can run decides.
  std::vector<bool> suspects(n, false);
  bool any_suspect = false;
  for (std::uint32_t w = 0; w < n; ++w) {
    WorkerRecord& worker = st.workers[w];
    if (worker.gone) continue;
    const bool progressed = worker.progress != worker.progress_seen;
    worker.progress_seen = worker.progress;
    if (worker.occupancy == 0 && stream_jobs[w] == 0) {
      worker.quiet_since.reset();
    } else if (progressed) {
      worker.quiet_since = now;  // its last progress came before this check: quiet since then at most
    } else if (stream_jobs[w] == 0) {
      suspects[w] = any_suspect = true;  // only tasks: are any of them ready to run?
    } else if (!worker.quiet_since) {
      worker.quiet_since = now;
    }
  }
  if (any_suspect) {
    const auto runnable = st.holds_runnable_tasks(suspects);
    for (std::uint32_t w = 0; w < n; ++w) {
      if (!suspects[w]) continue;
      WorkerRecord& worker = st.workers[w];
      if (!runnable[w]) {
        worker.quiet_since.reset();  // waiting for inputs computed elsewhere: not its delay
      } else if (!worker.quiet_since) {
        worker.quiet_since = now;
      }
    }
  }
  std::vector<std::uint32_t> stalled;
  for (std::uint32_t w = 0; w < n; ++w) {
    WorkerRecord& worker = st.workers[w];
    if (!worker.gone && worker.quiet_since && now - *worker.quiet_since >= timeout) {
      stalled.push_back(w);
    } else {
      worker.stall_reported = false;
    }
  }
  // Its work must have somewhere to go: with no other worker to take it (a lone worker, or every one
  // quiet at once, as when all run long tasks), giving up on it would only stop the cluster. It is
  // reported once and kept; it is declared stalled at the first check after another worker joins.
  const bool somewhere_else = std::any_of(st.workers.begin(), st.workers.end(), [&](const WorkerRecord& w) {
    return !w.gone && !w.retiring && !(w.quiet_since && now - *w.quiet_since >= timeout);
  });
  for (const std::uint32_t w : stalled) {
    WorkerRecord& worker = st.workers[w];
    if (!somewhere_else && worker.stall_reported) continue;
    out.stalled.push_back(StalledWorker{w, worker.description.name, timeout, worker.occupancy, stream_jobs[w],
                                        !somewhere_else});
    worker.stall_reported = true;
    if (somewhere_else) st.stats.workers_stalled += 1;
  }
  if (somewhere_else) st.lose_workers(stalled, out);
  return out;
}

void SchedulerCore::stream_report(std::uint64_t stream, const std::vector<StreamLoad>& loads) {
  State& st = *state_;
  auto& jobs = st.stream_jobs[stream];
  jobs.clear();
  for (const StreamLoad& load : loads) {
    if (load.worker >= st.workers.size() || st.workers[load.worker].gone) continue;
    st.workers[load.worker].progress += load.records_answered;
    if (load.jobs_in_flight > 0) jobs.emplace_back(load.worker, load.jobs_in_flight);
  }
  if (jobs.empty()) st.stream_jobs.erase(stream);
}

void SchedulerCore::stream_ended(std::uint64_t stream) {
  state_->stream_jobs.erase(stream);
}

}  // namespace tessera::scheduling
