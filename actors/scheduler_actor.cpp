#include "actors/scheduler_actor.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "actors/glm/messages.hpp"
#include "actors/glm/solver_actor.hpp"
#include "actors/messages.hpp"
#include "actors/result_sink.hpp"

namespace tessera {
namespace {

constexpr std::uint32_t kNoWorker = std::numeric_limits<std::uint32_t>::max();

// A task that consumes another's result (stored on the producer).
struct Edge {
  OpId consumer;
  std::uint32_t task;
};

struct SinkRecord;

// Which tasks of an operation a sink wants: tasks [first_task, first_task + count) -> slots from first_slot.
struct WatchRange {
  std::shared_ptr<SinkRecord> sink;
  OpId op;
  std::uint32_t first_task, count, first_slot;
};

// The operations an operation's tasks read from, kept while any record needs them: a result lost with
// a worker is recomputed from this lineage even after its producers' records were forgotten. One node per
// submission: its operations may reference each other both ways (delayed graphs lowered by function), so
// a node per operation could hold itself in a cycle; references to earlier submissions point back only.
struct Lineage {
  std::vector<OperationPtr> ops;
  std::vector<std::shared_ptr<const Lineage>> producers;

  const OperationPtr* find(OpId id) const {
    for (const auto& op : ops)
      if (op->id() == id) return &op;
    return nullptr;
  }

  // A long chain of lineage is torn down in a loop, not by recursion that could overflow the stack.
  ~Lineage() {
    std::vector<std::shared_ptr<const Lineage>> pending = std::move(producers);
    while (!pending.empty()) {
      auto node = std::move(pending.back());
      pending.pop_back();
      if (node.use_count() == 1) {
        auto& inner = const_cast<Lineage&>(*node).producers;
        for (auto& p : inner) pending.push_back(std::move(p));
        inner.clear();
      }
    }
  }
};

struct SinkRecord {
  std::shared_ptr<ResultSink> sink;  // reset once every slot is released
  std::vector<Watch> watches;        // sorted by first_slot (no pointer back to this record: no cycle)
  std::uint64_t unreleased = 0;
};

// The scheduler's view of one operation: a dense array per field, indexed by task.
struct OpRecord {
  OperationPtr op;
  std::shared_ptr<Lineage> lineage;
  std::vector<TaskState> state;  // waiting = not yet placed; ready = placed on `worker`, not finished
  std::vector<std::uint32_t> worker;
  std::vector<std::uint32_t> slot;
  std::vector<std::uint32_t> unplaced_inputs;  // producers not yet placed (operations with references)
  std::vector<std::uint32_t> holds;            // sink slots + unfinished consumers that need the result
  std::vector<std::vector<Edge>> dependents;   // sized on the first edge
  std::vector<WatchRange> watches;             // sorted by first_task
  // Why erred or cancelled tasks ended: a later submission that depends on one names the real cause.
  std::unordered_map<std::uint32_t, std::shared_ptr<const TaskFailed>> failures;
  std::uint32_t longest_watch = 0;  // bounds the search for the watches covering a task
  std::uint32_t unfinished = 0;
  std::uint64_t holds_total = 0;
  double average_task_seconds = -1;
  std::vector<std::uint32_t> workers_used;

  void add_edge(std::uint32_t producer_task, Edge edge) {
    if (dependents.empty()) dependents.resize(op->size());
    dependents[producer_task].push_back(edge);
  }
  void used(std::uint32_t w) {
    if (std::find(workers_used.begin(), workers_used.end(), w) == workers_used.end())
      workers_used.push_back(w);
  }
};

struct WorkerRecord {
  caf::actor actor;
  std::uint32_t threads = 1;
  std::string name, address, public_key;
  std::uint64_t memory_limit = 0;
  std::uint64_t occupancy = 0;  // placed tasks not yet finished
  std::unordered_map<OpId, std::uint64_t> occupancy_by_op;
  bool steal_pending = false;  // a steal request is out; one at a time per victim
  bool retiring = false;
  bool gone = false;
  std::unordered_map<OpId, std::uint32_t> next_slot;
  // Messages collected during one handler, sent together at its end.
  AssignBatch assign;
  SubscribeBatch subscribe;
  std::unordered_map<OpId, std::vector<std::uint32_t>> drop, cancel;
  bool dirty = false;
};

struct Range {
  OpId op;
  std::uint32_t begin, end;
};

struct SchedulerState {
  SchedulerOptions options;
  std::unordered_map<OpId, std::unique_ptr<OpRecord>> ops;
  std::unordered_map<const ResultSink*, std::shared_ptr<SinkRecord>> sinks;
  std::vector<WorkerRecord> workers;
  std::deque<Range> placeable;  // tasks whose producers are all placed
  std::vector<Range> newly_placeable;
  std::unordered_set<OpId> maybe_finished;
  // Per sink, in the order the first delivery to it was made, so that a cause is reported before
  // the cancellations it causes.
  std::vector<std::pair<SinkRecord*, std::vector<ResultSink::Delivery>>> deliveries;
  std::unordered_map<SinkRecord*, std::size_t> delivery_index;
  SchedulerStatus stats;
  // Stream actors, told when a worker joins or is lost (their parameter sets run elsewhere).
  std::vector<caf::actor> stream_watchers;
  // Tasks computed again after a worker was lost, not yet placed. They are placed even on full workers:
  // consumers placed before the loss fill those workers while they wait for exactly these tasks.
  std::unordered_set<std::uint64_t> recovering;
  // GLM fits in progress: their solver actors, by session.
  std::unordered_map<std::uint64_t, caf::actor> glm_sessions;
  std::uint64_t last_glm_session = 0;
  static std::uint64_t task_key(OpId op, std::uint32_t task) {
    return (static_cast<std::uint64_t>(op) << 32) ^ task;
  }

  OpRecord* find(OpId id) {
    auto it = ops.find(id);
    return it == ops.end() ? nullptr : it->second.get();
  }

  WorkerRecord& touch(std::uint32_t w) {
    workers[w].dirty = true;
    return workers[w];
  }

  // How many unfinished tasks of `rec` worker w may hold. Long tasks: one per thread, so every thread
  // takes the next task only when it is free (greedy list scheduling balances best). Short tasks: enough
  // queued work per thread to cover backlog_seconds_per_thread, plus one to hide the refill round trip.
  // Counted per operation: tasks of other operations placed ahead of their inputs (a chain placed depth
  // first) must not keep an independent branch off a worker with idle threads.
  std::uint64_t capacity(const WorkerRecord& w, const OpRecord& rec) const {
    if (rec.average_task_seconds < 0) return std::uint64_t{w.threads} * options.initial_tasks_per_thread + 1;
    const double per_thread = options.backlog_seconds_per_thread / std::max(rec.average_task_seconds, 1e-9);
    if (per_thread < 1) return w.threads;
    return w.threads * static_cast<std::uint64_t>(std::min(per_thread, double(1 << 20))) + 1;
  }

  // Unfinished tasks of `rec` placed on w.
  static std::uint64_t held(const WorkerRecord& w, const OpRecord& rec) {
    auto it = w.occupancy_by_op.find(rec.op->id());
    return it == w.occupancy_by_op.end() ? 0 : it->second;
  }

  bool usable(std::uint32_t w) const { return w != kNoWorker && !workers[w].gone && !workers[w].retiring; }

  // The least loaded usable worker with room for another task of `rec`; kNoWorker if none.
  // With `anyway`, the least loaded usable worker even when all are full.
  std::uint32_t least_loaded(const OpRecord& rec, bool anyway = false) const {
    std::uint32_t best = kNoWorker;
    double best_load = 0;
    for (std::uint32_t w = 0; w < workers.size(); ++w) {
      if (!usable(w) || (!anyway && held(workers[w], rec) >= capacity(workers[w], rec))) continue;
      const double load = double(workers[w].occupancy) / workers[w].threads;
      if (best == kNoWorker || load < best_load) best = w, best_load = load;
    }
    return best;
  }

  void deliver(OpRecord& rec, std::uint32_t task, TaskState state, const Value& value,
               const std::shared_ptr<const TaskFailed>& error) {
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
      if (fresh) deliveries.emplace_back(it->sink.get(), std::vector<ResultSink::Delivery>{});
      deliveries[index->second].second.push_back(
          ResultSink::Delivery{it->first_slot + (task - it->first_task), state, value, error});
    }
  }

  void flush_deliveries() {
    for (auto& [sink, batch] : deliveries)
      if (sink->sink) sink->sink->deliver(batch);
    deliveries.clear();
    delivery_index.clear();
  }
};

using SchedulerActor = caf::stateful_actor<SchedulerState>;

void release_hold(SchedulerState& st, OpRecord& rec, std::uint32_t task);

// Gives up the holds a task had on its inputs' producers (it finished, or will never run).
void release_inputs(SchedulerState& st, OpRecord& rec, std::uint32_t task) {
  if (!rec.op->has_references()) return;
  const auto& columns = rec.op->columns();
  for (std::size_t j = 0; j < columns.size(); ++j)
    if (const auto* ref = columns[j].reference(task))
      if (OpRecord* producer = st.find(ref->op)) release_hold(st, *producer, ref->index);
}

// A task that will never run: placed ones are withdrawn from their worker.
void withdraw(SchedulerState& st, OpRecord& rec, std::uint32_t task) {
  if (rec.state[task] == TaskState::ready) {
    auto& w = st.touch(rec.worker[task]);
    w.occupancy -= 1;
    w.occupancy_by_op[rec.op->id()] -= 1;
    w.cancel[rec.op->id()].push_back(rec.slot[task]);
  }
  rec.state[task] = TaskState::cancelled;
  rec.unfinished -= 1;
  st.stats.tasks_cancelled += 1;
  st.maybe_finished.insert(rec.op->id());
}

void release_hold(SchedulerState& st, OpRecord& rec, std::uint32_t task) {
  rec.holds[task] -= 1;
  rec.holds_total -= 1;
  st.maybe_finished.insert(rec.op->id());
  if (rec.holds[task] != 0) return;
  const TaskState state = rec.state[task];
  if (state == TaskState::done) {
    st.touch(rec.worker[task]).drop[rec.op->id()].push_back(rec.slot[task]);
    st.stats.results_held -= 1;
  } else if (!is_final(state)) {
    // Nobody wants it any more: cancel it, as Dask does when the last future goes.
    withdraw(st, rec, task);
    release_inputs(st, rec, task);
  }
}

// Cancels every unfinished task downstream of a failed one, naming the failure as the cause.
void cancel_dependents(SchedulerState& st, OpRecord& failed_rec, std::uint32_t failed_task,
                       const std::shared_ptr<const TaskFailed>& cause) {
  std::vector<std::pair<OpId, std::uint32_t>> stack{{failed_rec.op->id(), failed_task}};
  while (!stack.empty()) {
    auto [op, task] = stack.back();
    stack.pop_back();
    OpRecord* rec = st.find(op);
    if (!rec || rec->dependents.empty()) continue;
    auto edges = std::move(rec->dependents[task]);
    rec->dependents[task] = {};
    for (const Edge& edge : edges) {
      OpRecord* consumer = st.find(edge.consumer);
      if (!consumer || is_final(consumer->state[edge.task])) continue;
      withdraw(st, *consumer, edge.task);
      auto error = std::make_shared<const TaskFailed>(
          consumer->op->function().name, consumer->op->key(edge.task),
          "its dependency " + cause->key() + " failed: " + cause->message(), true);
      st.deliver(*consumer, edge.task, TaskState::cancelled, Value{}, error);
      release_inputs(st, *consumer, edge.task);
      stack.emplace_back(edge.consumer, edge.task);
    }
  }
}

// Places one task on worker w: assignment, subscriptions to its producers, and newly placeable consumers.
void place(SchedulerState& st, OpRecord& rec, std::uint32_t task, std::uint32_t w) {
  WorkerRecord& worker = st.touch(w);
  const OpId op = rec.op->id();
  const std::uint32_t slot = worker.next_slot[op]++;
  // A task placed before and stolen back has already counted for its consumers.
  const bool first_placement = rec.worker[task] == kNoWorker;
  if (!st.recovering.empty()) st.recovering.erase(SchedulerState::task_key(op, task));
  worker.occupancy_by_op[op] += 1;
  rec.state[task] = TaskState::ready;
  rec.worker[task] = w;
  rec.slot[task] = slot;
  rec.used(w);
  worker.occupancy += 1;
  auto& runs = worker.assign.runs;
  if (!runs.empty() && !runs.back().adopt && runs.back().op == rec.op &&
      runs.back().first_task + runs.back().count == task &&
      runs.back().first_slot + runs.back().count == slot) {
    runs.back().count += 1;
  } else {
    runs.push_back(AssignRun{rec.op, task, 1, slot, false, !rec.watches.empty()});
  }
  if (rec.op->has_references()) {
    const auto& columns = rec.op->columns();
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const auto* ref = columns[j].reference(task);
      if (!ref) continue;
      OpRecord* producer = st.find(ref->op);
      // A producer being computed again subscribes this task when it is placed (below, for it).
      if (producer->worker[ref->index] == kNoWorker) continue;
      st.touch(producer->worker[ref->index])
          .subscribe.subscriptions.push_back(Subscription{
              ref->op, producer->slot[ref->index], Destination{w, op, slot, static_cast<std::uint16_t>(j)}});
    }
  }
  if (!rec.dependents.empty()) {
    for (const Edge& edge : rec.dependents[task]) {
      OpRecord* consumer = st.find(edge.consumer);
      if (!consumer) continue;
      if (first_placement && consumer->unplaced_inputs[edge.task] > 0) {
        if (--consumer->unplaced_inputs[edge.task] == 0 && consumer->state[edge.task] == TaskState::waiting)
          st.newly_placeable.push_back(Range{edge.consumer, edge.task, edge.task + 1});
      } else if (consumer->state[edge.task] == TaskState::ready) {
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

void flush_workers(SchedulerActor* self) {
  auto& st = self->state;
  for (auto& w : st.workers) {
    if (!w.dirty) continue;
    w.dirty = false;
    if (w.gone && !w.actor) {  // left: nothing to tell it
      w.assign = {};
      w.subscribe = {};
      w.cancel.clear();
      w.drop.clear();
      continue;
    }
    // Assignments first: a subscription in this flush may name a slot assigned in it.
    if (!w.assign.runs.empty()) self->send(w.actor, assign_atom::value, std::exchange(w.assign, {}));
    if (!w.subscribe.subscriptions.empty())
      self->send(w.actor, subscribe_atom::value, std::exchange(w.subscribe, {}));
    for (auto& [op, slots] : w.cancel)
      self->send(w.actor, cancel_atom::value, SlotBatch{op, std::move(slots)});
    for (auto& [op, slots] : w.drop) self->send(w.actor, drop_atom::value, SlotBatch{op, std::move(slots)});
    w.cancel.clear();
    w.drop.clear();
  }
}

void forget_finished(SchedulerActor* self) {
  auto& st = self->state;
  for (OpId id : st.maybe_finished) {
    OpRecord* rec = st.find(id);
    if (!rec || rec->unfinished != 0 || rec->holds_total != 0) continue;
    for (auto w : rec->workers_used) {
      st.workers[w].occupancy_by_op.erase(id);
      if (!st.workers[w].gone) self->send(st.workers[w].actor, forget_atom::value, id);
    }
    st.ops.erase(id);
  }
  st.maybe_finished.clear();
}

void try_finish_retirement(SchedulerActor* self, std::uint32_t w);

// Work stealing: a worker with idle compute threads and nothing left to place takes queued, not yet
// started tasks from the most backed-up worker (as Dask's work stealing does), so a long task never
// holds up the ones queued behind it while threads elsewhere sit idle.
void steal_for_idle_workers(SchedulerActor* self) {
  auto& st = self->state;
  if (!st.placeable.empty()) return;
  for (std::uint32_t idle = 0; idle < st.workers.size(); ++idle) {
    if (!st.usable(idle) || st.workers[idle].occupancy >= st.workers[idle].threads) continue;
    std::uint32_t victim = kNoWorker;
    std::uint64_t most_queued = 0;
    for (std::uint32_t v = 0; v < st.workers.size(); ++v) {
      const WorkerRecord& w = st.workers[v];
      if (v == idle || w.gone || w.steal_pending || w.occupancy <= w.threads) continue;
      if (w.occupancy - w.threads > most_queued) victim = v, most_queued = w.occupancy - w.threads;
    }
    if (victim == kNoWorker) return;
    WorkerRecord& w = st.workers[victim];
    auto busiest = std::max_element(w.occupancy_by_op.begin(), w.occupancy_by_op.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
    if (busiest == w.occupancy_by_op.end() || busiest->second == 0) continue;
    const std::uint64_t idle_threads = st.workers[idle].threads - st.workers[idle].occupancy;
    const auto most = static_cast<std::uint32_t>(
        std::max<std::uint64_t>(1, std::min(most_queued / 2 + 1, idle_threads * 64)));
    w.steal_pending = true;
    self->send(w.actor, steal_atom::value, busiest->first, most);
  }
}

void on_stolen(SchedulerActor* self, const StolenBatch& batch) {
  auto& st = self->state;
  WorkerRecord& victim = st.workers[batch.worker];
  victim.steal_pending = false;
  OpRecord* rec = st.find(batch.op);
  if (rec) {
    // Back to the front of the queue, in order, for the idle worker to take.
    for (auto it = batch.tasks.rbegin(); it != batch.tasks.rend(); ++it) {
      const std::uint32_t t = *it;
      if (rec->state[t] != TaskState::ready || rec->worker[t] != batch.worker) continue;
      rec->state[t] = TaskState::waiting;  // worker[t] keeps the old place: see place()
      victim.occupancy -= 1;
      victim.occupancy_by_op[batch.op] -= 1;
      st.stats.tasks_stolen += 1;
      st.placeable.push_front(Range{batch.op, t, t + 1});
    }
  }
  try_finish_retirement(self, batch.worker);
}

void dispatch(SchedulerActor* self) {
  auto& st = self->state;
  while (!st.placeable.empty()) {
    Range range = st.placeable.front();
    st.placeable.pop_front();
    OpRecord* rec = st.find(range.op);
    if (!rec) continue;
    while (range.begin < range.end && rec->state[range.begin] != TaskState::waiting) ++range.begin;
    if (range.begin == range.end) continue;
    bool placed_any = false;
    const bool recovering =
        !st.recovering.empty() && st.recovering.count(SchedulerState::task_key(range.op, range.begin));
    if (recovering) {
      const std::uint32_t w = st.least_loaded(*rec, true);
      if (w != kNoWorker) {
        place(st, *rec, range.begin, w);
        range.begin += 1;
        placed_any = true;
      }
    } else if (!rec->op->has_references()) {
      const std::uint32_t w = st.least_loaded(*rec);
      if (w != kNoWorker) {
        const std::uint64_t room =
            st.capacity(st.workers[w], *rec) - SchedulerState::held(st.workers[w], *rec);
        const std::uint32_t end =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(range.end, range.begin + room));
        for (std::uint32_t t = range.begin; t < end; ++t)
          if (rec->state[t] == TaskState::waiting) place(st, *rec, t, w);
        range.begin = end;
        placed_any = true;
      }
    } else {
      // Data locality first: the worker that holds (or will hold) its first input, if it has room.
      const std::uint32_t task = range.begin;
      std::uint32_t w = kNoWorker;
      for (const auto& column : rec->op->columns()) {
        const auto* ref = column.reference(task);
        if (!ref) continue;
        const std::uint32_t home = st.find(ref->op)->worker[ref->index];
        if (st.usable(home) &&
            SchedulerState::held(st.workers[home], *rec) < st.capacity(st.workers[home], *rec))
          w = home;
        break;
      }
      if (w == kNoWorker) w = st.least_loaded(*rec);
      if (w != kNoWorker) {
        place(st, *rec, task, w);
        range.begin += 1;
        placed_any = true;
      }
    }
    if (range.begin < range.end) st.placeable.push_front(range);
    // Depth first: consumers that just became placeable go before anything else.
    for (auto it = st.newly_placeable.rbegin(); it != st.newly_placeable.rend(); ++it)
      st.placeable.push_front(*it);
    st.newly_placeable.clear();
    if (!placed_any) break;
  }
  steal_for_idle_workers(self);
  flush_workers(self);
}

// Fails the tasks of a submission that reference something the scheduler does not have.
void reject_task(SchedulerState& st, OpRecord& rec, std::uint32_t task, const std::string& why) {
  auto error = std::make_shared<const TaskFailed>(rec.op->function().name, rec.op->key(task), why, false);
  rec.state[task] = TaskState::erred;
  rec.unfinished -= 1;
  st.stats.tasks_erred += 1;
  st.deliver(rec, task, TaskState::erred, Value{}, error);
  cancel_dependents(st, rec, task, error);
}

void on_submit(SchedulerActor* self, Submission& submission) {
  auto& st = self->state;
  auto sink = std::make_shared<SinkRecord>();
  sink->sink = submission.sink;
  std::vector<OpRecord*> created;
  auto lineage = std::make_shared<Lineage>();
  for (auto& op : submission.operations) {
    if (st.find(op->id())) continue;  // a shared layer submitted before
    auto rec = std::make_unique<OpRecord>();
    const std::uint32_t n = op->size();
    rec->op = op;
    rec->lineage = lineage;
    lineage->ops.push_back(op);
    rec->state.assign(n, TaskState::waiting);
    rec->worker.assign(n, kNoWorker);
    rec->slot.assign(n, 0);
    rec->holds.assign(n, 0);
    rec->unfinished = n;
    if (op->has_references()) rec->unplaced_inputs.assign(n, 0);
    st.stats.tasks_pending += n;
    created.push_back(rec.get());
    st.ops.emplace(op->id(), std::move(rec));
  }
  std::vector<std::tuple<OpRecord*, std::uint32_t, std::string>> rejected;
  std::vector<std::tuple<OpRecord*, std::uint32_t, std::shared_ptr<const TaskFailed>>> doomed;
  for (OpRecord* rec : created) {
    if (!rec->op->has_references()) continue;
    const auto& columns = rec->op->columns();
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
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
        const TaskState state = producer->state[ref->index];
        if (state == TaskState::waiting && producer->worker[ref->index] == kNoWorker)
          rec->unplaced_inputs[t] += 1;
        if (!is_final(state)) producer->add_edge(ref->index, Edge{rec->op->id(), t});
        if (state == TaskState::erred || state == TaskState::cancelled) {
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
    if (!is_final(rec->state[task])) {
      reject_task(st, *rec, task, why);
      release_inputs(st, *rec, task);
    }
  for (auto& [rec, task, cause] : doomed)
    if (!is_final(rec->state[task])) {
      withdraw(st, *rec, task);
      auto error = std::make_shared<const TaskFailed>(
          rec->op->function().name, rec->op->key(task),
          "its dependency " + cause->key() + " failed: " + cause->message(), true);
      st.deliver(*rec, task, TaskState::cancelled, Value{}, error);
      release_inputs(st, *rec, task);
      cancel_dependents(st, *rec, task, error);
    }
  // Tasks nobody watches and nothing consumes would never be released: they are cancelled at once.
  for (OpRecord* rec : created)
    for (std::uint32_t t = 0; t < rec->op->size(); ++t)
      if (rec->holds[t] == 0 && !is_final(rec->state[t])) {
        withdraw(st, *rec, t);
        release_inputs(st, *rec, t);
      }
  st.flush_deliveries();
  dispatch(self);
  forget_finished(self);
}

void on_done(SchedulerActor* self, DoneBatch& batch) {
  auto& st = self->state;
  OpRecord* rec = st.find(batch.op);
  if (!rec) return;
  WorkerRecord& worker = st.workers[batch.worker];
  if (batch.ran > 0) {
    const double per_task = batch.busy_seconds / batch.ran;
    rec->average_task_seconds =
        rec->average_task_seconds < 0 ? per_task : 0.7 * rec->average_task_seconds + 0.3 * per_task;
  }
  for (std::size_t i = 0; i < batch.tasks.size(); ++i) {
    const std::uint32_t t = batch.tasks[i];
    if (rec->state[t] != TaskState::ready || rec->worker[t] != batch.worker) continue;  // cancelled meanwhile
    rec->state[t] = TaskState::done;
    worker.occupancy -= 1;
    worker.occupancy_by_op[batch.op] -= 1;
    rec->unfinished -= 1;
    st.stats.tasks_done += 1;
    st.stats.results_held += 1;
    st.deliver(*rec, t, TaskState::done, batch.results[i], nullptr);
    release_inputs(st, *rec, t);
    if (!rec->dependents.empty()) rec->dependents[t] = {};
    if (rec->holds[t] == 0) {
      st.touch(batch.worker).drop[rec->op->id()].push_back(rec->slot[t]);
      st.stats.results_held -= 1;
    }
  }
  for (auto& failure : batch.failures) {
    const std::uint32_t t = failure.task;
    if (rec->state[t] != TaskState::ready || rec->worker[t] != batch.worker) continue;
    rec->state[t] = TaskState::erred;
    worker.occupancy -= 1;
    worker.occupancy_by_op[batch.op] -= 1;
    rec->unfinished -= 1;
    st.stats.tasks_erred += 1;
    st.deliver(*rec, t, TaskState::erred, Value{}, failure.error);
    release_inputs(st, *rec, t);
    cancel_dependents(st, *rec, t, failure.error);
  }
  st.maybe_finished.insert(batch.op);
  st.flush_deliveries();
  dispatch(self);
  forget_finished(self);
  try_finish_retirement(self, batch.worker);
}

void on_release(SchedulerActor* self, const std::shared_ptr<ResultSink>& sink) {
  auto& st = self->state;
  auto it = st.sinks.find(sink.get());
  if (it == st.sinks.end()) return;
  auto record = it->second;
  for (std::uint32_t slot : sink->take_released()) {
    auto watch = std::upper_bound(record->watches.begin(), record->watches.end(), slot,
                                  [](std::uint32_t s, const Watch& w) { return s < w.first_slot; });
    if (watch == record->watches.begin()) continue;
    --watch;
    if (slot >= watch->first_slot + watch->count) continue;
    if (OpRecord* rec = st.find(watch->op))
      release_hold(st, *rec, watch->first_task + (slot - watch->first_slot));
    record->unreleased -= 1;
  }
  if (record->unreleased == 0) {
    record->sink.reset();
    st.sinks.erase(it);
  }
  st.flush_deliveries();
  dispatch(self);
  forget_finished(self);
}

// The client cancels tasks: unfinished ones will not run (a running one finishes, its result unused),
// and what depends on them is cancelled with them as the cause.
void on_cancel(SchedulerActor* self, const CancelRequest& request) {
  auto& st = self->state;
  for (const TaskRef& ref : request.tasks) {
    OpRecord* rec = st.find(ref.op);
    if (!rec || ref.index >= rec->op->size() || is_final(rec->state[ref.index])) continue;
    withdraw(st, *rec, ref.index);
    auto cause = std::make_shared<const TaskFailed>(rec->op->function().name, rec->op->key(ref.index),
                                                    "cancelled by the client", true);
    st.deliver(*rec, ref.index, TaskState::cancelled, Value{}, cause);
    release_inputs(st, *rec, ref.index);
    cancel_dependents(st, *rec, ref.index, cause);
  }
  st.flush_deliveries();
  dispatch(self);
  forget_finished(self);
}

// A retiring worker with nothing left to run hands its held results to other workers, then leaves.
void try_finish_retirement(SchedulerActor* self, std::uint32_t w) {
  auto& st = self->state;
  WorkerRecord& leaving = st.workers[w];
  if (!leaving.retiring || leaving.gone || leaving.occupancy != 0) return;
  for (auto& [id, rec_ptr] : st.ops) {
    OpRecord& rec = *rec_ptr;
    if (std::find(rec.workers_used.begin(), rec.workers_used.end(), w) == rec.workers_used.end()) continue;
    for (std::uint32_t t = 0; t < rec.op->size(); ++t) {
      if (rec.worker[t] != w || rec.state[t] != TaskState::done || rec.holds[t] == 0) continue;
      std::uint32_t target = kNoWorker;
      for (std::uint32_t c = 0; c < st.workers.size(); ++c)
        if (st.usable(c) && (target == kNoWorker || st.workers[c].occupancy < st.workers[target].occupancy))
          target = c;
      if (target == kNoWorker) return;  // nowhere to move it: stay until a worker joins
      WorkerRecord& home = st.touch(target);
      const std::uint32_t slot = home.next_slot[id]++;
      home.assign.runs.push_back(AssignRun{rec.op, t, 1, slot, true, false});
      st.touch(w).subscribe.subscriptions.push_back(
          Subscription{id, rec.slot[t], Destination{target, id, slot, kAdoptColumn}});
      rec.worker[t] = target;
      rec.slot[t] = slot;
      rec.used(target);
    }
  }
  leaving.gone = true;
  st.stats.retiring_workers -= 1;
  flush_workers(self);
  self->send(leaving.actor, shutdown_atom::value);
  leaving.actor = nullptr;
}

std::uint32_t on_register(SchedulerActor* self, const WorkerRegistration& registration) {
  auto& st = self->state;
  const auto id = static_cast<std::uint32_t>(st.workers.size());
  WorkerRecord record;
  record.actor = registration.actor;
  record.threads = std::max<std::uint32_t>(1, registration.threads);
  record.name = registration.name.empty() ? "worker-" + std::to_string(id) : registration.name;
  record.address = registration.address;
  record.public_key = registration.public_key;
  record.memory_limit = registration.memory_limit;
  st.options.directory->set(id, registration.actor);
  // Workers in other processes learn how to reach each other before any subscription names them
  // (messages from one actor to another arrive in order).
  for (std::uint32_t other = 0; other < st.workers.size(); ++other) {
    const WorkerRecord& w = st.workers[other];
    if (w.gone) continue;
    self->send(w.actor, peer_atom::value, PeerNotice{id, record.address, record.public_key});
    self->send(record.actor, peer_atom::value, PeerNotice{other, w.address, w.public_key});
  }
  const std::uint32_t threads = record.threads;
  st.workers.push_back(std::move(record));
  st.stats.workers += 1;
  self->send(registration.actor, welcome_atom::value, id);
  for (auto& watcher : st.stream_watchers)
    self->send(watcher, stream_workers_atom::value, StreamWorker{id, registration.actor, threads});
  dispatch(self);
  return id;
}

// A task to run again: its result was lost with a worker (or dropped, and a recomputation needs it),
// or it was placed on a worker that is gone. Returns the producers whose results must come back too.
void revive(SchedulerState& st, OpRecord& rec, std::uint32_t task,
            std::vector<std::pair<OpRecord*, std::uint32_t>>& more,
            std::vector<std::pair<OpRecord*, std::uint32_t>>& revived) {
  const TaskState state = rec.state[task];
  if (state == TaskState::waiting) return;  // revived already, or never placed
  if (state == TaskState::erred) return;    // failures are final
  revived.emplace_back(&rec, task);
  if (state == TaskState::ready) {
    rec.state[task] = TaskState::waiting;  // still holds its inputs
  } else {
    // Done (its result lost or dropped) or released with a forgotten operation: computed again, which
    // takes its inputs again.
    if (state == TaskState::done && rec.holds[task] > 0) st.stats.results_held -= 1;
    // Placed as if for the first time: its consumers wait for it, or subscribe again if placed already.
    rec.worker[task] = kNoWorker;
    rec.state[task] = TaskState::waiting;
    rec.unfinished += 1;
    st.stats.tasks_recomputed += 1;
    if (!rec.op->has_references()) return;
    const auto& columns = rec.op->columns();
    for (std::size_t j = 0; j < columns.size(); ++j) {
      const auto* ref = columns[j].reference(task);
      if (!ref) continue;
      OpRecord* producer = st.find(ref->op);
      if (!producer) {
        // Forgotten: bring its record back from lineage, every task released until revived.
        std::shared_ptr<const Lineage> home = rec.lineage;
        const OperationPtr* op = home->find(ref->op);
        for (std::size_t k = 0; !op && k < rec.lineage->producers.size(); ++k) {
          home = rec.lineage->producers[k];
          op = home->find(ref->op);
        }
        if (op) {
          auto back = std::make_unique<OpRecord>();
          const std::uint32_t n = (*op)->size();
          back->op = *op;
          back->lineage = std::const_pointer_cast<Lineage>(home);
          back->state.assign(n, TaskState::cancelled);
          back->worker.assign(n, kNoWorker);
          back->slot.assign(n, 0);
          back->holds.assign(n, 0);
          if ((*op)->has_references()) back->unplaced_inputs.assign(n, 0);
          producer = back.get();
          st.ops.emplace((*op)->id(), std::move(back));
        }
        if (!producer) continue;  // not in lineage: cannot happen for a task that ran
      }
      const bool result_gone =
          producer->state[ref->index] == TaskState::cancelled ||
          (producer->state[ref->index] == TaskState::done &&
           (producer->holds[ref->index] == 0 || st.workers[producer->worker[ref->index]].gone));
      producer->holds[ref->index] += 1;
      producer->holds_total += 1;
      if (result_gone) more.emplace_back(producer, ref->index);
    }
  }
}

// A worker stopped answering: what it was running and the results it held (and that somebody still
// needs) are computed again elsewhere, from lineage, and its peers stop sending to it.
void on_worker_lost(SchedulerActor* self, std::uint32_t w) {
  auto& st = self->state;
  if (w >= st.workers.size() || st.workers[w].gone) return;
  WorkerRecord& lost = st.workers[w];
  if (lost.retiring) {
    st.stats.retiring_workers -= 1;
  } else {
    st.stats.workers -= 1;
  }
  st.stats.workers_lost += 1;
  lost.gone = true;
  // A fit whose partitions it held cannot go on: its solver fails now instead of waiting for answers.
  for (const auto& [session, solver] : st.glm_sessions)
    self->send(solver, glm_atom::value,
               GlmMessage{session, GlmKind::lost, Value(Value::List{Value(static_cast<std::int64_t>(w))})});
  // A worker that was only cut off must stop and register anew: it is told so, if it can still hear.
  self->send(lost.actor, shutdown_atom::value);
  lost.actor = nullptr;
  lost.occupancy = 0;
  lost.occupancy_by_op.clear();
  lost.assign = {};
  lost.subscribe = {};
  lost.cancel.clear();
  lost.drop.clear();
  st.options.directory->erase(w);
  for (auto& watcher : st.stream_watchers) self->send(watcher, lost_atom::value, w);
  for (auto& other : st.workers)
    if (!other.gone) self->send(other.actor, peer_atom::value, PeerNotice{w, "", ""});

  std::vector<std::pair<OpRecord*, std::uint32_t>> pending, revived;
  for (auto& [id, rec] : st.ops) {
    if (std::find(rec->workers_used.begin(), rec->workers_used.end(), w) == rec->workers_used.end()) continue;
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
      if (rec->worker[t] != w) continue;
      const TaskState state = rec->state[t];
      if (state == TaskState::ready || (state == TaskState::done && rec->holds[t] > 0))
        pending.emplace_back(rec.get(), t);
    }
  }
  while (!pending.empty()) {
    auto [rec, t] = pending.back();
    pending.pop_back();
    std::vector<std::pair<OpRecord*, std::uint32_t>> more;
    revive(st, *rec, t, more, revived);
    for (auto& m : more) pending.push_back(m);
  }
  if (revived.empty()) return;
  // Consumers already placed on live workers subscribed to the lost places: they are subscribed again
  // when the producers are placed anew (place() follows the dependents' edges).
  std::unordered_set<std::uint64_t> again;
  auto key = SchedulerState::task_key;
  for (auto& [rec, t] : revived) {
    again.insert(key(rec->op->id(), t));
    st.recovering.insert(key(rec->op->id(), t));
  }
  for (auto& [id, rec] : st.ops) {
    if (!rec->op->has_references()) continue;
    const auto& columns = rec->op->columns();
    for (std::uint32_t t = 0; t < rec->op->size(); ++t) {
      if (is_final(rec->state[t])) continue;
      for (std::size_t j = 0; j < columns.size(); ++j) {
        const auto* ref = columns[j].reference(t);
        if (!ref || !again.count(key(ref->op, ref->index))) continue;
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
        if (producer->worker[ref->index] == kNoWorker && rec->state[t] == TaskState::waiting)
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
  dispatch(self);
  forget_finished(self);
}

// A GLM fit over persisted partition tasks: finds where each result is held and hands them to a new
// solver actor, which talks to those workers directly.
void on_glm_fit(SchedulerActor* self, const Value& request, const std::shared_ptr<GlmReply>& reply) {
  auto& st = self->state;
  try {
    const auto& fields = request.as_list();
    GlmSolverArgs args;
    args.spec = glm::spec_from_value(fields.at(0));
    std::int64_t index = 0;
    for (const auto& entry : fields.at(1).as_list()) {
      const auto& e = entry.as_list();
      const auto op = static_cast<OpId>(e.at(0).as_int());
      const auto task = e.at(1).as_int();
      const std::string which = "glm: partition " + std::to_string(index);
      const auto it = st.ops.find(op);
      if (it == st.ops.end())
        throw std::invalid_argument(which + " names an operation the scheduler does not hold");
      const OpRecord& record = *it->second;
      if (task < 0 || task >= static_cast<std::int64_t>(record.state.size()))
        throw std::invalid_argument(which + " names task " + std::to_string(task) + " of an operation of " +
                                    std::to_string(record.state.size()));
      const auto t = static_cast<std::size_t>(task);
      if (record.state[t] != TaskState::done)
        throw std::invalid_argument(which + " is not computed (its task is " +
                                    std::string(state_name(record.state[t])) + ")");
      const std::uint32_t worker = record.worker[t];
      if (worker >= st.workers.size() || st.workers[worker].gone)
        throw std::invalid_argument(which + " was held by a worker that left");
      args.partitions.push_back(GlmPartitionLocation{st.workers[worker].actor, worker, op, record.slot[t],
                                                     index, e.at(2).as_int()});
      ++index;
    }
    if (args.partitions.empty()) throw std::invalid_argument("glm: a fit needs at least one partition");
    args.session = ++st.last_glm_session;
    args.scheduler = caf::actor_cast<caf::actor>(self);
    args.reply = reply;
    const auto session = args.session;
    st.glm_sessions[session] = spawn_glm_solver(self->home_system(), std::move(args));
  } catch (const std::exception& e) {
    if (reply && reply->deliver) reply->deliver(glm_error_result(e.what()));
  }
}

caf::behavior scheduler_actor(SchedulerActor* self, SchedulerOptions options) {
  if (!options.directory) options.directory = std::make_shared<WorkerDirectory>();
  self->state.options = options;
  self->set_down_handler([=](const caf::down_msg& down) {
    auto& watchers = self->state.stream_watchers;
    watchers.erase(std::remove_if(watchers.begin(), watchers.end(),
                                  [&](const caf::actor& a) { return a.address() == down.source; }),
                   watchers.end());
  });
  return {
      [=](submit_atom, Submission& submission) { on_submit(self, submission); },
      [=](glm_fit_atom, const GlmMessage& request, const std::shared_ptr<GlmReply>& reply) {
        on_glm_fit(self, request.payload, reply);
      },
      // From workers' partition actors (through their connections): forwarded to the fit's solver.
      [=](glm_atom, GlmMessage& message) {
        auto& sessions = self->state.glm_sessions;
        if (message.kind == GlmKind::finished) {
          sessions.erase(message.session);
        } else if (auto it = sessions.find(message.session); it != sessions.end()) {
          self->send(it->second, glm_atom::value, std::move(message));
        }
      },
      [=](done_atom, DoneBatch& batch) { on_done(self, batch); },
      [=](release_atom, const std::shared_ptr<ResultSink>& sink) { on_release(self, sink); },
      [=](cancel_atom, const CancelRequest& request) { on_cancel(self, request); },
      [=](stolen_atom, const StolenBatch& batch) {
        on_stolen(self, batch);
        dispatch(self);
      },
      [=](register_atom, const WorkerRegistration& registration) -> std::uint32_t {
        return on_register(self, registration);
      },
      [=](lost_atom, std::uint32_t id) { on_worker_lost(self, id); },
      [=](stream_workers_atom) -> std::vector<StreamWorker> {
        std::vector<StreamWorker> out;
        auto& st = self->state;
        if (auto watcher = caf::actor_cast<caf::actor>(self->current_sender())) {
          self->monitor(watcher);
          st.stream_watchers.push_back(watcher);
        }
        for (std::uint32_t id = 0; id < st.workers.size(); ++id)
          if (st.usable(id)) out.push_back(StreamWorker{id, st.workers[id].actor, st.workers[id].threads});
        return out;
      },
      [=](workers_atom) -> std::vector<WorkerInfo> {
        std::vector<WorkerInfo> out;
        const auto& workers = self->state.workers;
        for (std::uint32_t id = 0; id < workers.size(); ++id) {
          const WorkerRecord& w = workers[id];
          if (w.gone) continue;
          out.push_back(
              WorkerInfo{id, w.name, w.address, w.threads, w.memory_limit, w.occupancy, w.retiring});
        }
        return out;
      },
      [=](retire_atom, std::uint32_t id) {
        auto& st = self->state;
        if (id >= st.workers.size() || st.workers[id].retiring || st.workers[id].gone) return;
        st.workers[id].retiring = true;
        st.stats.workers -= 1;
        st.stats.retiring_workers += 1;
        try_finish_retirement(self, id);
        dispatch(self);
      },
      [=](status_atom) -> SchedulerStatus {
        auto status = self->state.stats;
        status.operations = self->state.ops.size();
        status.tasks_pending = 0;
        for (auto& [id, rec] : self->state.ops) status.tasks_pending += rec->unfinished;
        return status;
      },
      [=](shutdown_atom) {
        for (auto& w : self->state.workers)
          if (!w.gone) self->send(w.actor, shutdown_atom::value);
        self->quit();
      },
  };
}

}  // namespace

caf::actor spawn_scheduler(caf::actor_system& system, SchedulerOptions options) {
  return system.spawn(scheduler_actor, options);
}

}  // namespace tessera
