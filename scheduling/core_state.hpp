// The scheduler's state behind SchedulerCore: the records it keeps per operation, per worker and per
// result table, and the operations on them that every handler shares. Internal to scheduling/.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "scheduling/checkpoint_source.hpp"
#include "scheduling/scheduler_core.hpp"

namespace tessera::scheduling {

inline constexpr std::uint32_t kNoWorker = std::numeric_limits<std::uint32_t>::max();

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
  std::vector<Placement> placement;   // written only by SchedulerCore::State::transition
  std::vector<std::uint32_t> worker;  // where placed; kept while a stolen task is unplaced (see place)
  std::vector<std::uint32_t> slot;
  std::vector<std::uint32_t> unplaced_inputs;  // producers not yet placed (operations with references)
  std::vector<std::uint32_t> holds;            // sink slots + unfinished consumers that need the result
  std::vector<std::vector<Edge>> dependents;   // sized on the first edge
  std::vector<WatchRange> watches;             // sorted by first_task
  // Why failed or cancelled tasks ended: a later submission that depends on one names the real cause.
  std::unordered_map<std::uint32_t, std::shared_ptr<const TaskFailed>> failures;
  std::uint32_t longest_watch = 0;  // bounds the search for the watches covering a task
  std::uint32_t unfinished = 0;
  std::uint64_t holds_total = 0;
  std::array<std::uint32_t, kPlacements> by_placement{};  // tasks in each placement, for progress
  double average_task_seconds = -1;
  std::vector<std::uint32_t> workers_used;
  // Checkpoints, sized on first use. `from_store`: this run of the task reads its result from a
  // checkpoint, so it holds no inputs and subscribes to none; `restored` has the value until it is
  // placed. `checkpoint`: its result is stored when it finishes.
  std::vector<bool> from_store;
  std::unordered_map<std::uint32_t, Value> restored;
  std::vector<bool> checkpoint;

  // A record whose tasks all start in `initial`.
  OpRecord(OperationPtr operation, std::shared_ptr<Lineage> home, Placement initial)
      : op(std::move(operation)), lineage(std::move(home)) {
    const std::uint32_t n = op->size();
    placement.assign(n, initial);
    by_placement[static_cast<std::size_t>(initial)] = n;
    worker.assign(n, kNoWorker);
    slot.assign(n, 0);
    holds.assign(n, 0);
    if (op->has_references()) unplaced_inputs.assign(n, 0);
  }

  void add_edge(std::uint32_t producer_task, Edge edge) {
    if (dependents.empty()) dependents.resize(op->size());
    dependents[producer_task].push_back(edge);
  }
  bool is_from_store(std::uint32_t task) const { return !from_store.empty() && from_store[task]; }
  bool is_checkpointed(std::uint32_t task) const { return !checkpoint.empty() && checkpoint[task]; }
  void restore(std::uint32_t task, Value value) {
    if (from_store.empty()) from_store.resize(op->size());
    from_store[task] = true;
    restored[task] = std::move(value);
  }
  void used(std::uint32_t w) {
    if (std::find(workers_used.begin(), workers_used.end(), w) == workers_used.end())
      workers_used.push_back(w);
  }
};

struct WorkerRecord {
  WorkerDescription description;
  std::uint64_t occupancy = 0;  // placed tasks not yet finished
  std::unordered_map<OpId, std::uint64_t> occupancy_by_op;
  bool steal_pending = false;  // a steal request is out; one at a time per victim
  bool retiring = false;
  bool gone = false;      // lost or retired: takes no work
  bool reachable = true;  // still hears messages (a retiring worker hears its last ones after gone)
  std::unordered_map<OpId, std::uint32_t> next_slot;
  // Messages collected during one handler, moved to the outbox together.
  AssignBatch assign;
  SubscribeBatch subscribe;
  std::unordered_map<OpId, std::vector<std::uint32_t>> drop, cancel;
  bool dirty = false;
  // The progress watchdog (check_progress): tasks that ended here and stream records answered here,
  // ever; that count at the last check; and since which check it has held work it could run without
  // progress (none: it held no such work at the last check, or made progress before it).
  std::uint64_t progress = 0;
  std::uint64_t progress_seen = 0;
  std::optional<std::chrono::steady_clock::time_point> quiet_since;
  bool stall_reported = false;  // kept although stalled (nowhere else to go): reported once
  // Its memory as last reported (memory_report). Paused, it gets no new work while a worker that is not
  // takes work, and runs its queue one task at a time. `spilled_share`: the part of what it holds that is
  // on disk, the chance that an input it holds must be read back.
  bool memory_paused = false;
  double spilled_share = 0;
};

struct Range {
  OpId op;
  std::uint32_t begin, end;
};

inline std::uint64_t task_key(OpId op, std::uint32_t task) {
  return (static_cast<std::uint64_t>(op) << 32) ^ task;
}

// Adds a record's tasks, by placement, to a function's progress.
inline void add_progress(FunctionProgress& progress, const OpRecord& rec) {
  const auto count = [&](Placement p) { return rec.by_placement[static_cast<std::size_t>(p)]; };
  progress.operations += 1;
  progress.tasks += rec.op->size();
  progress.waiting += count(Placement::unplaced);
  progress.processing += count(Placement::placed);
  progress.done += count(Placement::finished);
  progress.erred += count(Placement::failed);
  progress.cancelled += count(Placement::cancelled);
}

// Where the functions past kProgressFunctions are counted.
inline constexpr std::string_view kOtherFunctions = "(other functions)";

struct SchedulerCore::State {
  SchedulerOptions options;
  CheckpointSource* checkpoints = nullptr;
  std::unordered_map<OpId, std::unique_ptr<OpRecord>> ops;
  std::unordered_map<const ResultSink*, std::shared_ptr<SinkRecord>> sinks;
  std::vector<WorkerRecord> workers;
  std::deque<Range> placeable;  // tasks whose producers are all placed
  std::vector<Range> newly_placeable;
  std::unordered_set<OpId> maybe_finished;
  // Per sink, in the order the first delivery to it was made, so that a cause is reported before
  // the cancellations it causes.
  std::vector<std::pair<SinkRecord*, std::vector<Delivery>>> deliveries;
  std::unordered_map<SinkRecord*, std::size_t> delivery_index;
  SchedulerStatus stats;
  // Progress of the operations forgotten so far, by function (at most kProgressFunctions names; the
  // rest under kOtherFunctions), so the dashboard's totals do not drop when an operation is let go.
  std::map<std::string, FunctionProgress, std::less<>> forgotten_progress;
  static constexpr std::size_t kProgressFunctions = 256;
  // Tasks computed again after a worker was lost, not yet placed. They are placed even on full workers:
  // consumers placed before the loss fill those workers while they wait for exactly these tasks.
  std::unordered_set<std::uint64_t> recovering;
  // Each stream's latest report, for the progress watchdog: simulation jobs in flight per worker.
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::uint64_t>>> stream_jobs;

  bool usable(std::uint32_t w) const { return w != kNoWorker && !workers[w].gone && !workers[w].retiring; }
  // Whether some usable worker is not paused for memory: then paused ones get no new work.
  bool any_unpaused() const;
  // Tasks a worker runs at once: its threads, or one while it is paused for memory.
  static std::uint64_t runs_at_once(const WorkerRecord& w) {
    return w.memory_paused ? 1 : w.description.threads;
  }

  // ---- Bookkeeping written once ----
  // The one place a task's placement changes.
  void transition(OpRecord& rec, std::uint32_t task, Placement to);
  OpRecord* find(OpId id) {
    auto it = ops.find(id);
    return it == ops.end() ? nullptr : it->second.get();
  }
  WorkerRecord& touch(std::uint32_t w) {
    workers[w].dirty = true;
    return workers[w];
  }
  // A placed task leaves its worker's count (it finished, was stolen back, or is withdrawn).
  void leave_worker(OpRecord& rec, std::uint32_t task);
  // A placed task reaches an end (finished or failed) on its worker.
  void end_on_worker(OpRecord& rec, std::uint32_t task, Placement to);
  // How many unfinished tasks of `rec` worker w may hold. Long tasks: one per thread, so every thread
  // takes the next task only when it is free (greedy list scheduling balances best). Short tasks: enough
  // queued work per thread to cover backlog_seconds_per_thread, plus one to hide the refill round trip.
  // Counted per operation: tasks of other operations placed ahead of their inputs (a chain placed depth
  // first) must not keep an independent branch off a worker with idle threads.
  std::uint64_t capacity(const WorkerRecord& w, const OpRecord& rec) const;
  // Unfinished tasks of `rec` placed on w.
  static std::uint64_t held(const WorkerRecord& w, const OpRecord& rec) {
    auto it = w.occupancy_by_op.find(rec.op->id());
    return it == w.occupancy_by_op.end() ? 0 : it->second;
  }
  // The least loaded usable worker with room for another task of `rec`; kNoWorker if none.
  // With `anyway`, the least loaded usable worker even when all are full.
  // Workers paused for memory only when every usable worker is.
  std::uint32_t least_loaded(const OpRecord& rec, bool anyway = false) const;
  // Where a task reads least: among the usable workers with room that hold its inputs, the one with the
  // fewest inputs to fetch from elsewhere or read back from its disk; kNoWorker if none.
  std::uint32_t nearest_home(const OpRecord& rec, std::uint32_t task) const;
  void deliver(OpRecord& rec, std::uint32_t task, TaskState state, const Value& value,
               const std::shared_ptr<const TaskFailed>& error, bool held = false);
  void flush_deliveries(Outbox& out);
  // Gives up the holds a task had on its inputs' producers (it finished, or will never run).
  void release_inputs(OpRecord& rec, std::uint32_t task);
  // A task that will never run: a placed one is withdrawn from its worker.
  void withdraw(OpRecord& rec, std::uint32_t task);
  // Withdraws a task because `cause` failed or was cancelled, tells its watchers why, and lets go of
  // its inputs.
  std::shared_ptr<const TaskFailed> cancel_because(OpRecord& rec, std::uint32_t task,
                                                   const std::shared_ptr<const TaskFailed>& cause);
  void release_hold(OpRecord& rec, std::uint32_t task);
  // Cancels every unfinished task downstream of a failed one, naming the failure as the cause.
  void cancel_dependents(OpRecord& failed_rec, std::uint32_t failed_task,
                         const std::shared_ptr<const TaskFailed>& cause);
  // ---- Placement ----
  // Places one task on worker w: assignment, subscriptions to its producers, and newly placeable consumers.
  void place(OpRecord& rec, std::uint32_t task, std::uint32_t w);
  void flush_workers(Outbox& out);
  void forget_finished(Outbox& out);
  // Work stealing: a worker with idle compute threads and nothing left to place takes queued, not yet
  // started tasks from the most backed-up worker (as Dask's work stealing does), so a long task never
  // holds up the ones queued behind it while threads elsewhere sit idle.
  void steal_for_idle_workers(Outbox& out);
  void dispatch(Outbox& out);
  // What every handler that changes tasks ends with.
  void settle(Outbox& out);
  // Fails a task of a submission that references something the scheduler does not have.
  void reject_task(OpRecord& rec, std::uint32_t task, const std::string& why);
  // Workers that stopped answering (or stalled): marked gone first, all together, so that what they ran
  // and held is computed again on the others only.
  void lose_workers(const std::vector<std::uint32_t>& lost, Outbox& out);
  // Computes these tasks again (and the producers whose results are gone with them), subscribes their
  // placed consumers again, and dispatches.
  void recover(std::vector<std::pair<OpRecord*, std::uint32_t>> pending, Outbox& out);
  // Which of the `suspects` (by worker id) hold a placed task whose inputs are all computed: one that
  // holds only tasks waiting for inputs computed elsewhere is not the one to blame for the wait.
  std::vector<bool> holds_runnable_tasks(const std::vector<bool>& suspects) const;
  // A retiring worker with nothing left to run hands its held results to other workers, then leaves.
  void try_finish_retirement(std::uint32_t w, Outbox& out);
  // A task to run again: its result was lost with a worker (or dropped, and a recomputation needs it),
  // or it was placed on a worker that is gone. Returns the producers whose results must come back too.
  void revive(OpRecord& rec, std::uint32_t task, std::vector<std::pair<OpRecord*, std::uint32_t>>& more,
              std::vector<std::pair<OpRecord*, std::uint32_t>>& revived);
  // Reads the task's result from its checkpoint, if one is stored: it then runs from the store.
  bool try_restore(OpRecord& rec, std::uint32_t task);
  bool checkpoints_possible() const { return checkpoints && checkpoints->may_hold_any(); }
  // The tasks of a new submission that are needed (watched, or inputs of needed tasks that are not
  // restored), looked up in the checkpoints from the watched ones down: a restored task's producers
  // are not looked up, and end cancelled unless something else needs them.
  void restore_needed(const std::vector<OpRecord*>& created, const std::vector<Watch>& watches);
  // A forgotten producer's record brought back from lineage, every task released until revived.
  OpRecord* restore_from_lineage(const OpRecord& consumer, OpId id);
};

}  // namespace tessera::scheduling
