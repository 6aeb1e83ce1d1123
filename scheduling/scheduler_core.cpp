#include "scheduling/scheduler_core.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "scheduling/core_state.hpp"

namespace tessera::scheduling {

SchedulerCore::SchedulerCore(SchedulerOptions options) : state_(std::make_unique<State>()) {
  state_->options = options;
}

SchedulerCore::~SchedulerCore() = default;

Outbox SchedulerCore::submit(Submission submission) {
  State& st = *state_;
  Outbox out;
  auto sink = std::make_shared<SinkRecord>();
  sink->sink = submission.sink;
  std::vector<OpRecord*> created;
  auto lineage = std::make_shared<Lineage>();
  for (auto& op : submission.operations) {
    if (st.find(op->id())) continue;  // a shared layer submitted before
    auto rec = std::make_unique<OpRecord>(op, lineage, Placement::unplaced);
    lineage->ops.push_back(op);
    rec->unfinished = op->size();
    st.stats.tasks_pending += op->size();
    created.push_back(rec.get());
    st.ops.emplace(op->id(), std::move(rec));
  }
  if (st.checkpoints_possible()) st.restore_needed(created, submission.watches);
  std::vector<std::tuple<OpRecord*, std::uint32_t, std::string>> rejected;
  std::vector<std::tuple<OpRecord*, std::uint32_t, std::shared_ptr<const TaskFailed>>> doomed;
  for (OpRecord* rec : created) {
    if (!rec->op->has_references()) continue;
    const auto& columns = rec->op->columns();
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
      if (rec->is_from_store(t)) continue;  // needs none of its inputs
      for (std::size_t j = 0; j < columns.size(); ++j) {
        const auto* ref = columns[j].reference(t);
        if (!ref) continue;
        OpRecord* producer = st.find(ref->op);
        if (!producer || ref->index >= producer->op->size()) {
          rejected.emplace_back(rec, t,
                                "argument " + std::to_string(j) + " depends on task " +
                                    std::to_string(ref->op) + "/" + std::to_string(ref->index) +
                                    ", which the scheduler does not have (released or never submitted)");
          continue;
        }
        producer->holds[ref->index] += 1;
        producer->holds_total += 1;
        if (producer->lineage != lineage) {
          auto& earlier = lineage->producers;
          if (std::find(earlier.begin(), earlier.end(), producer->lineage) == earlier.end())
            earlier.push_back(producer->lineage);
        }
        const Placement placement = producer->placement[ref->index];
        if (placement == Placement::unplaced && producer->worker[ref->index] == kNoWorker)
          rec->unplaced_inputs[t] += 1;
        if (!is_ended(placement)) producer->add_edge(ref->index, Edge{rec->op->id(), t});
        if (placement == Placement::failed || placement == Placement::cancelled) {
          auto known = producer->failures.find(ref->index);
          doomed.emplace_back(rec, t,
                              known != producer->failures.end()
                                  ? known->second
                                  : std::make_shared<const TaskFailed>(producer->op->function().name,
                                                                       producer->op->key(ref->index),
                                                                       "it was cancelled", true));
        }
      }
    }
  }
  for (const Watch& watch : submission.watches) {
    OpRecord* rec = st.find(watch.op);
    if (!rec) continue;
    WatchRange range{sink, watch.op, watch.first_task, watch.count, watch.first_slot};
    rec->watches.push_back(range);
    rec->longest_watch = std::max(rec->longest_watch, watch.count);
    sink->watches.push_back(watch);
    sink->unreleased += watch.count;
    for (std::uint32_t t = watch.first_task; t < watch.first_task + watch.count; ++t) rec->holds[t] += 1;
    rec->holds_total += watch.count;
    if (!submission.checkpoint) continue;
    // Results already stored, or already computed, are not stored again.
    if (rec->checkpoint.empty()) rec->checkpoint.resize(rec->op->size());
    for (std::uint32_t t = watch.first_task; t < watch.first_task + watch.count; ++t)
      if (!rec->is_from_store(t) && !is_ended(rec->placement[t])) rec->checkpoint[t] = true;
  }
  std::sort(sink->watches.begin(), sink->watches.end(),
            [](const Watch& a, const Watch& b) { return a.first_slot < b.first_slot; });
  for (OpRecord* rec : created)
    std::stable_sort(rec->watches.begin(), rec->watches.end(),
                     [](const WatchRange& a, const WatchRange& b) { return a.first_task < b.first_task; });
  st.sinks[submission.sink.get()] = sink;
  for (OpRecord* rec : created) {
    const std::uint32_t n = rec->op->size();
    if (!rec->op->has_references()) {
      if (n > 0) st.placeable.push_back(Range{rec->op->id(), 0, n});
      continue;
    }
    for (std::uint32_t t = 0; t < n;) {
      if (rec->unplaced_inputs[t] != 0) {
        ++t;
        continue;
      }
      std::uint32_t end = t + 1;
      while (end < n && rec->unplaced_inputs[end] == 0) ++end;
      st.placeable.push_back(Range{rec->op->id(), t, end});
      t = end;
    }
  }
  for (auto& [rec, task, why] : rejected)
    if (!is_ended(rec->placement[task])) {
      st.reject_task(*rec, task, why);
      st.release_inputs(*rec, task);
    }
  for (auto& [rec, task, cause] : doomed)
    if (!is_ended(rec->placement[task])) {
      auto error = st.cancel_because(*rec, task, cause);
      st.cancel_dependents(*rec, task, error);
    }
  // Tasks nobody watches and nothing consumes would never be released: they are cancelled at once.
  for (OpRecord* rec : created)
    for (std::uint32_t t = 0; t < rec->op->size(); ++t)
      if (rec->holds[t] == 0 && !is_ended(rec->placement[t])) {
        st.withdraw(*rec, t);
        st.release_inputs(*rec, t);
      }
  st.settle(out);
  return out;
}

Outbox SchedulerCore::done(const DoneBatch& batch) {
  State& st = *state_;
  Outbox out;
  OpRecord* rec = st.find(batch.op);
  // A worker declared lost or stalled has nothing placed any more: its late reports count for nothing,
  // not even its durations.
  if (!rec || batch.worker >= st.workers.size() || st.workers[batch.worker].gone) return out;
  if (batch.ran > 0) {
    const double per_task = batch.busy_seconds / batch.ran;
    rec->average_task_seconds =
        rec->average_task_seconds < 0 ? per_task : 0.7 * rec->average_task_seconds + 0.3 * per_task;
  }
  const auto placed_here = [&](std::uint32_t t) {
    // Anything else was cancelled or moved meanwhile.
    return t < rec->placement.size() && rec->placement[t] == Placement::placed &&
           rec->worker[t] == batch.worker;
  };
  std::vector<bool> held;
  if (!batch.held.empty()) {
    held.resize(batch.tasks.size());
    for (const auto i : batch.held)
      if (i < held.size()) held[i] = true;
  }
  for (std::size_t i = 0; i < batch.tasks.size(); ++i) {
    const std::uint32_t t = batch.tasks[i];
    if (!placed_here(t)) continue;
    st.workers[batch.worker].progress += 1;
    st.end_on_worker(*rec, t, Placement::finished);
    const bool from_store = rec->is_from_store(t);
    if (!from_store) st.stats.tasks_done += 1;
    st.stats.results_held += 1;
    const bool held_there = !held.empty() && held[i];
    static const Value none;
    const Value& value = i < batch.results.size() ? batch.results[i] : none;
    // A held result stays on its worker; the value that came along is for its checkpoint only.
    st.deliver(*rec, t, TaskState::done, held_there ? none : value, nullptr, held_there);
    // A checkpoint run always sends its results along (AssignRun::checkpoint).
    if (!from_store && rec->is_checkpointed(t) && i < batch.results.size())
      out.checkpoints.push_back(FinishedCheckpoint{rec->op, t, value});
    st.release_inputs(*rec, t);
    if (!rec->dependents.empty()) rec->dependents[t] = {};
    if (rec->holds[t] == 0) {
      st.touch(batch.worker).drop[rec->op->id()].push_back(rec->slot[t]);
      st.stats.results_held -= 1;
    }
  }
  for (const auto& failure : batch.failures) {
    const std::uint32_t t = failure.task;
    if (!placed_here(t)) continue;
    st.workers[batch.worker].progress += 1;
    st.end_on_worker(*rec, t, Placement::failed);
    st.stats.tasks_erred += 1;
    st.deliver(*rec, t, TaskState::erred, Value{}, failure.error);
    st.release_inputs(*rec, t);
    st.cancel_dependents(*rec, t, failure.error);
  }
  st.maybe_finished.insert(batch.op);
  st.settle(out);
  st.try_finish_retirement(batch.worker, out);
  return out;
}

Outbox SchedulerCore::release(const ResultSink* sink, const std::vector<std::uint32_t>& slots) {
  State& st = *state_;
  Outbox out;
  auto it = st.sinks.find(sink);
  if (it == st.sinks.end()) return out;
  auto record = it->second;
  for (std::uint32_t slot : slots) {
    auto watch = std::upper_bound(record->watches.begin(), record->watches.end(), slot,
                                  [](std::uint32_t s, const Watch& w) { return s < w.first_slot; });
    if (watch == record->watches.begin()) continue;
    --watch;
    if (slot >= watch->first_slot + watch->count) continue;
    if (OpRecord* rec = st.find(watch->op))
      st.release_hold(*rec, watch->first_task + (slot - watch->first_slot));
    record->unreleased -= 1;
  }
  if (record->unreleased == 0) {
    record->sink.reset();
    st.sinks.erase(it);
  }
  st.settle(out);
  return out;
}

// Unfinished tasks will not run (a running one finishes, its result unused), and what depends on them is
// cancelled with them as the cause.
Outbox SchedulerCore::cancel(const CancelRequest& request) {
  State& st = *state_;
  Outbox out;
  for (const TaskRef& ref : request.tasks) {
    OpRecord* rec = st.find(ref.op);
    if (!rec || ref.index >= rec->op->size() || is_ended(rec->placement[ref.index])) continue;
    st.withdraw(*rec, ref.index);
    auto cause = std::make_shared<const TaskFailed>(rec->op->function().name, rec->op->key(ref.index),
                                                    "cancelled by the client", true);
    st.deliver(*rec, ref.index, TaskState::cancelled, Value{}, cause);
    st.release_inputs(*rec, ref.index);
    st.cancel_dependents(*rec, ref.index, cause);
  }
  st.settle(out);
  return out;
}

Outbox SchedulerCore::stolen(const StolenBatch& batch) {
  State& st = *state_;
  Outbox out;
  if (batch.worker >= st.workers.size()) return out;
  st.workers[batch.worker].steal_pending = false;
  if (OpRecord* rec = st.find(batch.op)) {
    // Back to the front of the queue, in order, for the idle worker to take.
    for (auto it = batch.tasks.rbegin(); it != batch.tasks.rend(); ++it) {
      const std::uint32_t t = *it;
      if (t >= rec->placement.size() || rec->placement[t] != Placement::placed ||
          rec->worker[t] != batch.worker)
        continue;
      st.transition(*rec, t, Placement::unplaced);  // worker[t] keeps the old place: see place()
      st.leave_worker(*rec, t);
      st.stats.tasks_stolen += 1;
      st.placeable.push_front(Range{batch.op, t, t + 1});
    }
  }
  st.try_finish_retirement(batch.worker, out);
  st.dispatch(out);
  return out;
}

SchedulerCore::Registered SchedulerCore::register_worker(const WorkerDescription& description) {
  State& st = *state_;
  Registered registered{static_cast<std::uint32_t>(st.workers.size()), {}};
  Outbox& out = registered.outbox;
  const std::uint32_t id = registered.id;
  WorkerRecord record;
  record.description = description;
  record.description.threads = std::max<std::uint32_t>(1, description.threads);
  if (record.description.name.empty()) record.description.name = "worker-" + std::to_string(id);
  // Names say who ran what (records, status): one another live worker holds is told apart by its
  // process, NAME-HOSTNAME-PID, unless it is that very process registering again (its old registration
  // not yet found gone).
  const auto taken = [&](const std::string& name) {
    return std::any_of(st.workers.begin(), st.workers.end(), [&](const WorkerRecord& w) {
      return !w.gone && w.description.name == name &&
             (description.origin.empty() || w.description.origin != description.origin);
    });
  };
  if (taken(record.description.name)) {
    const std::string base =
        record.description.name + (description.origin.empty() ? std::string() : "-" + description.origin);
    std::string name = base;
    for (int n = 2; taken(name); ++n) name = base + "-" + std::to_string(n);
    record.description.name = name;
  }
  registered.name = record.description.name;
  // Workers in other processes learn how to reach each other before any subscription names them
  // (messages from one actor to another arrive in order).
  for (std::uint32_t other = 0; other < st.workers.size(); ++other) {
    const WorkerRecord& w = st.workers[other];
    if (w.gone) continue;
    const bool same_host = !description.host.empty() && description.host == w.description.host;
    out.send(other, PeerNotice{id, record.description.address, record.description.public_key,
                               same_host ? record.description.local_address : std::string()});
    out.send(id, PeerNotice{other, w.description.address, w.description.public_key,
                            same_host ? w.description.local_address : std::string()});
  }
  st.workers.push_back(std::move(record));
  st.stats.workers += 1;
  out.send(id, WelcomeWorker{id});
  out.workers_joined.push_back(id);
  // A retiring worker that had nowhere to move its held results can hand them to this one now.
  for (std::uint32_t other = 0; other < id; ++other) st.try_finish_retirement(other, out);
  st.dispatch(out);
  return registered;
}

Outbox SchedulerCore::retire(std::uint32_t w) {
  State& st = *state_;
  Outbox out;
  if (w >= st.workers.size() || st.workers[w].retiring || st.workers[w].gone) return out;
  st.workers[w].retiring = true;
  st.stats.workers -= 1;
  st.stats.retiring_workers += 1;
  st.try_finish_retirement(w, out);
  st.dispatch(out);
  return out;
}

Outbox SchedulerCore::memory_report(const WorkerMemory& memory) {
  State& st = *state_;
  Outbox out;
  if (memory.worker >= st.workers.size() || st.workers[memory.worker].gone) return out;
  WorkerRecord& w = st.workers[memory.worker];
  const bool was_paused = std::exchange(w.memory_paused, memory.paused);
  const std::uint64_t held = memory.managed_bytes + memory.spilled_bytes;
  w.spilled_share = held > 0 ? double(memory.spilled_bytes) / double(held) : 0;
  // Paused: an idle worker may take its queue. Resumed: it takes what waited for room.
  if (was_paused != memory.paused) st.dispatch(out);
  return out;
}

Outbox SchedulerCore::shutdown() {
  Outbox out;
  for (std::uint32_t w = 0; w < state_->workers.size(); ++w)
    if (!state_->workers[w].gone) out.send(w, ShutdownWorker{});
  return out;
}

void SchedulerCore::set_checkpoints(CheckpointSource* source) {
  state_->checkpoints = source;
}

const Operation* SchedulerCore::operation(OpId id) const {
  const auto it = state_->ops.find(id);
  return it == state_->ops.end() ? nullptr : it->second->op.get();
}

SchedulerStatus SchedulerCore::status() const {
  SchedulerStatus status = state_->stats;
  status.operations = state_->ops.size();
  status.tasks_pending = 0;
  for (const auto& [id, rec] : state_->ops) status.tasks_pending += rec->unfinished;
  return status;
}

std::vector<FunctionProgress> SchedulerCore::progress() const {
  auto by_function = state_->forgotten_progress;
  for (const auto& [id, rec] : state_->ops) {
    const std::string& function = rec->op->function().name;
    auto it = by_function.find(function);
    if (it == by_function.end()) {
      const bool room = by_function.size() + 1 < State::kProgressFunctions;
      const std::string name = room ? function : std::string(kOtherFunctions);
      it = by_function.try_emplace(name, FunctionProgress{name}).first;
    }
    add_progress(it->second, *rec);
  }
  std::vector<FunctionProgress> out;
  out.reserve(by_function.size());
  for (auto& [name, progress] : by_function) out.push_back(std::move(progress));
  return out;
}

std::vector<WorkerInfo> SchedulerCore::workers() const {
  std::vector<WorkerInfo> out;
  const auto& workers = state_->workers;
  for (std::uint32_t id = 0; id < workers.size(); ++id) {
    const WorkerRecord& w = workers[id];
    if (w.gone) continue;
    const WorkerDescription& d = w.description;
    out.push_back(WorkerInfo{id, d.name, d.address, d.threads, d.memory_limit, w.occupancy, w.retiring, {}});
  }
  return out;
}

std::vector<std::uint32_t> SchedulerCore::usable_workers() const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t id = 0; id < state_->workers.size(); ++id)
    if (state_->usable(id)) out.push_back(id);
  return out;
}

std::uint32_t SchedulerCore::threads(std::uint32_t worker) const {
  return worker < state_->workers.size() ? state_->workers[worker].description.threads : 0;
}

std::string SchedulerCore::name(std::uint32_t worker) const {
  return worker < state_->workers.size() ? state_->workers[worker].description.name : std::string();
}

HeldResult SchedulerCore::locate(OpId op, std::int64_t task, const std::string& what) const {
  const auto it = state_->ops.find(op);
  if (it == state_->ops.end())
    throw std::invalid_argument(what + " names an operation the scheduler does not hold");
  const OpRecord& record = *it->second;
  if (task < 0 || task >= static_cast<std::int64_t>(record.placement.size()))
    throw std::invalid_argument(what + " names task " + std::to_string(task) + " of an operation of " +
                                std::to_string(record.placement.size()));
  const auto t = static_cast<std::size_t>(task);
  if (record.placement[t] != Placement::finished)
    throw std::invalid_argument(what + " is not computed (its task is " +
                                std::string(placement_name(record.placement[t])) + ")");
  const std::uint32_t worker = record.worker[t];
  if (worker >= state_->workers.size() || state_->workers[worker].gone)
    throw std::invalid_argument(what + " was held by a worker that left");
  return HeldResult{worker, record.slot[t]};
}

std::optional<Placement> SchedulerCore::placement(TaskRef task) const {
  const auto it = state_->ops.find(task.op);
  if (it == state_->ops.end() || task.index >= it->second->placement.size()) return std::nullopt;
  return it->second->placement[task.index];
}

std::optional<std::uint32_t> SchedulerCore::worker_of(TaskRef task) const {
  const auto it = state_->ops.find(task.op);
  if (it == state_->ops.end() || task.index >= it->second->worker.size()) return std::nullopt;
  const std::uint32_t w = it->second->worker[task.index];
  if (w == kNoWorker) return std::nullopt;
  return w;
}

std::uint32_t SchedulerCore::holds(TaskRef task) const {
  const auto it = state_->ops.find(task.op);
  if (it == state_->ops.end() || task.index >= it->second->holds.size()) return 0;
  return it->second->holds[task.index];
}

}  // namespace tessera::scheduling
