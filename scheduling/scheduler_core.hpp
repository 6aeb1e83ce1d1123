// SchedulerCore: the scheduler's state machine, free of actors and threads. It accepts submitted
// operations, places their tasks on workers (data locality first, then load, in batches sized by how
// long an operation's tasks take), tracks where every task is, delivers wanted results, cancels what
// depends on a failure, frees results nobody needs, steals queued work for idle workers, recomputes
// what a lost worker held from lineage, moves results off retiring workers, and gives up on workers that
// hold work without finishing any of it (the progress watchdog).
//
// Every handler returns the Outbox of what must be said because of it; the scheduler actor sends it.
// Every change of a task's placement goes through one transition function checked against
// kAllowedTransitions (scheduling/placement.hpp); an illegal edge throws IllegalTransition naming the
// task. Not thread-safe: one owner (the scheduler actor, or a test) calls it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scheduling/checkpoint_source.hpp"
#include "scheduling/outbox.hpp"
#include "scheduling/placement.hpp"
#include "scheduling/scheduler_options.hpp"
#include "scheduling/status.hpp"
#include "scheduling/task_messages.hpp"

namespace tessera::scheduling {

// A worker as it registers: how many tasks it runs at once and how its peers reach it.
struct WorkerDescription {
  std::uint32_t threads = 1;
  std::string name{};
  std::string address{};  // empty for a worker of the scheduler's own process
  std::string public_key{};
  std::uint64_t memory_limit = 0;
  std::string local_address{};  // a socket file for workers on its host (empty: none)
  std::string host{};           // its process's host identity (empty: unknown, on no one's host)
  std::string origin{};         // "HOSTNAME-PID" of its process: what tells two workers of one name apart
};

// Where a finished task's result is held.
struct HeldResult {
  std::uint32_t worker;
  std::uint32_t slot;
};

class SchedulerCore {
 public:
  explicit SchedulerCore(SchedulerOptions options = {});
  ~SchedulerCore();
  SchedulerCore(const SchedulerCore&) = delete;
  SchedulerCore& operator=(const SchedulerCore&) = delete;

  // A client's operations and the tasks its result table watches.
  Outbox submit(Submission submission);
  // A worker reports finished (or failed) tasks.
  Outbox done(const DoneBatch& batch);
  // Slots of a result table whose last future is gone.
  Outbox release(const ResultSink* sink, const std::vector<std::uint32_t>& slots);
  // The client cancels tasks; what depends on them is cancelled with them as the cause.
  Outbox cancel(const CancelRequest& request);
  // A worker gave back queued tasks after a steal request.
  Outbox stolen(const StolenBatch& batch);
  struct Registered {
    std::uint32_t id;
    Outbox outbox;
    std::string name{};  // what it is called here: its own name, or NAME-ORIGIN when another held that
  };
  Registered register_worker(const WorkerDescription& worker);
  // A worker stopped answering: what it ran and held is computed again elsewhere.
  Outbox worker_lost(std::uint32_t worker);
  // A worker could not read back inputs of its tasks (damaged spilled records): their producers run
  // again from lineage, or are sent again by the worker that holds them.
  Outbox results_lost(const LostInputs& lost);
  // A worker's memory report (about every 0.5 s): while it is paused for memory it gets no new work as
  // long as another worker takes work, and an idle worker may take its queue; where its results are on
  // disk, a task whose inputs it holds goes to a worker that reads less (data locality weighs memory).
  Outbox memory_report(const WorkerMemory& memory);
  // A worker drains: no new tasks; once idle its held results move to others and it is shut down.
  Outbox retire(std::uint32_t worker);
  // The progress watchdog, called on a timer with the time of the call (the core keeps no clock). A
  // worker that holds work it can run (placed tasks whose inputs are all computed, or simulation jobs of
  // a stream) and has finished none of it (no task ended there, no stream record answered) since a
  // check at least progress_timeout ago is declared stalled: reported in Outbox::stalled, and lost
  // (worker_lost). Unless no other usable worker would be left: then it is reported once as `kept`, and
  // declared at the first check after another joins. Nothing happens while progress_timeout is 0.
  Outbox check_progress(std::chrono::steady_clock::time_point now);
  // A stream's latest word on its simulation jobs, keyed by any id unique per stream: what it has in
  // flight per worker (replacing its previous report) and what each answered since then (progress).
  void stream_report(std::uint64_t stream, const std::vector<StreamLoad>& loads);
  // A stream ended: its jobs no longer count.
  void stream_ended(std::uint64_t stream);
  // Every worker is told to shut down.
  Outbox shutdown();
  // Where stored checkpoints are looked up (null: nowhere). Not owned; outlives the core's use of it.
  void set_checkpoints(CheckpointSource* source);
  // The operation of a record the scheduler holds; null when it holds none.
  const Operation* operation(OpId id) const;

  SchedulerStatus status() const;
  std::vector<WorkerInfo> workers() const;
  // Tasks by state per function, live operations and forgotten ones together, sorted by function.
  std::vector<FunctionProgress> progress() const;
  // Workers that take new work (registered, neither retiring nor gone).
  std::vector<std::uint32_t> usable_workers() const;
  std::uint32_t threads(std::uint32_t worker) const;
  // The name it registered with (empty for an unknown id).
  std::string name(std::uint32_t worker) const;
  // Where a finished task's result is held; throws std::invalid_argument, prefixed by `what`, when the
  // scheduler holds no such finished result.
  HeldResult locate(OpId op, std::int64_t task, const std::string& what) const;

  // Inspection (tests, status displays). nullopt: the scheduler holds no record of the operation.
  std::optional<Placement> placement(TaskRef task) const;
  std::optional<std::uint32_t> worker_of(TaskRef task) const;
  std::uint32_t holds(TaskRef task) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera::scheduling
