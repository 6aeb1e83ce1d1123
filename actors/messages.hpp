// The messages between the client, the scheduler actor, worker actors and operation actors inside one
// process. Payloads travel by value through CAF mailboxes; Values inside them are references, not copies.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actors/stream_sink.hpp"
#include "graph/errors.hpp"
#include "graph/operation.hpp"
#include "graph/simulation.hpp"
#include "graph/task_state.hpp"
#include "graph/watch.hpp"

namespace tessera {

class ResultSink;

// Client -> scheduler: operations to run and which of their tasks the sink wants.
struct Submission {
  std::vector<OperationPtr> operations;
  std::vector<Watch> watches;
  std::shared_ptr<ResultSink> sink;
};

// Client -> scheduler: cancel these tasks (and, with them as the cause, what depends on them).
struct CancelRequest {
  std::vector<TaskRef> tasks;
};

// Scheduler -> worker: run tasks [first_task, first_task + count) of `op` in local slots from first_slot.
// An `adopt` run does not compute: its slots receive a finished result moved from a retiring worker.
// `report`: the finished results go back to the scheduler (someone watches them); otherwise only the
// fact that they finished does, so an intermediate chunk never travels to the scheduler.
struct AssignRun {
  OperationPtr op;
  std::uint32_t first_task = 0;
  std::uint32_t count = 0;
  std::uint32_t first_slot = 0;
  bool adopt = false;
  bool report = true;
};
struct AssignBatch {
  std::vector<AssignRun> runs;
};

// Where one task result must go: column `column` of slot `slot` of operation `op` on `worker`.
inline constexpr std::uint16_t kAdoptColumn = 0xffff;  // the whole result, for an adopt slot
struct Destination {
  std::uint32_t worker;  // looked up in the WorkerDirectory of the sending process
  OpId op;
  std::uint32_t slot;
  std::uint16_t column;
};
// Scheduler -> worker: when slot `slot` of `op` is done (or now, if it is), send its result to `to`.
struct Subscription {
  OpId op;
  std::uint32_t slot;
  Destination to;
};
struct SubscribeBatch {
  std::vector<Subscription> subscriptions;
};

// Operation actor -> worker (-> operation actor): task inputs, sent directly between workers.
struct InputDelivery {
  OpId op;
  std::uint32_t slot;
  std::uint16_t column;
  Value value;
};
struct InputBatch {
  std::vector<InputDelivery> inputs;
};

// Scheduler -> worker: slots whose results nobody needs any more, or tasks that must not run.
struct SlotBatch {
  OpId op;
  std::vector<std::uint32_t> slots;
};

// Operation actor -> scheduler: finished tasks of one operation.
struct TaskFailure {
  std::uint32_t task;
  std::shared_ptr<const TaskFailed> error;
};
struct DoneBatch {
  std::uint32_t worker;
  OpId op;
  std::vector<std::uint32_t> tasks;
  std::vector<Value> results;  // aligned with tasks
  std::vector<TaskFailure> failures;
  double busy_seconds = 0;  // compute time the batch took, for the duration estimate
  std::uint32_t ran = 0;    // tasks that actually ran (tasks + failures)
};

// Operation actor -> scheduler: tasks taken back from a worker's queue before they started, to run on an
// idle worker instead (work stealing).
struct StolenBatch {
  std::uint32_t worker;
  OpId op;
  std::vector<std::uint32_t> tasks;
};

// Scheduler -> cluster: one worker, for `tessera workers`.
struct WorkerInfo {
  std::uint32_t id = 0;
  std::string name;
  std::string address;  // where its peers send it inputs; empty for a worker of the scheduler's process
  std::uint32_t threads = 0;
  std::uint64_t memory_limit = 0;
  std::uint64_t tasks_assigned = 0;  // placed on it, not finished
  bool retiring = false;
};

// Worker -> scheduler: who a worker is; `address` and `public_key` are how its peers reach it.
struct WorkerRegistration {
  caf::actor actor;
  std::uint32_t threads = 1;
  std::string name{};
  std::string address{};
  std::string public_key{};
  std::uint64_t memory_limit = 0;
};

// Scheduler -> worker: how to reach another worker (an empty address: it left).
struct PeerNotice {
  std::uint32_t id = 0;
  std::string address;
  std::string public_key;
};

// Scheduler -> cluster: a snapshot for status displays and tests.
struct SchedulerStatus {
  std::uint32_t workers = 0;           // live, not retiring
  std::uint32_t retiring_workers = 0;  // draining before they leave
  std::uint64_t operations = 0;        // live operation records
  std::uint64_t tasks_pending = 0;     // submitted, not yet final
  std::uint64_t results_held = 0;      // finished results still held on workers
  std::uint64_t tasks_done = 0;        // since start
  std::uint64_t tasks_erred = 0;
  std::uint64_t tasks_cancelled = 0;
  std::uint64_t tasks_stolen = 0;      // moved to an idle worker before they started
  std::uint64_t workers_lost = 0;      // declared dead (no heartbeat)
  std::uint64_t tasks_recomputed = 0;  // lost with a worker and run again from lineage
};

// ---- Streams of parameter sets ----

// Client -> stream actor: parameter sets with consecutive ids from first_id.
struct StreamBatch {
  std::uint64_t first_id = 0;
  std::vector<Value> parameters;
};

// Stream actor -> worker (-> its simulation pool): run these parameter sets, answer `stream`.
struct SimulationJob {
  caf::actor stream;
  std::uint64_t stream_id = 0;
  std::string simulation;
  std::shared_ptr<const Config> config;
  std::uint32_t pool_size = 0;  // simulation actors per worker; 0: one per compute thread
  std::vector<std::uint64_t> ids;
  std::vector<Value> parameters;  // aligned with ids
};

// Simulation actor -> stream actor: what a job gave, one record per id (results or errors).
struct SimulationOutcome {
  std::uint32_t worker = 0;
  std::uint64_t stream_id = 0;
  std::vector<StreamRecord> records;
  double busy_seconds = 0;
};

// Scheduler -> stream actor: a worker that takes simulation jobs.
struct StreamWorker {
  std::uint32_t id = 0;
  caf::actor actor;
  std::uint32_t threads = 1;
};

// Atoms (CAF 0.17: at most 10 characters).
using submit_atom = caf::atom_constant<caf::atom("submit")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using assign_atom = caf::atom_constant<caf::atom("assign")>;
using subscribe_atom = caf::atom_constant<caf::atom("subscribe")>;
using input_atom = caf::atom_constant<caf::atom("input")>;
using drop_atom = caf::atom_constant<caf::atom("drop")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using forget_atom = caf::atom_constant<caf::atom("forget")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using ran_atom = caf::atom_constant<caf::atom("ran")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using welcome_atom = caf::atom_constant<caf::atom("welcome")>;
using retire_atom = caf::atom_constant<caf::atom("retire")>;
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;
using status_atom = caf::atom_constant<caf::atom("status")>;
using steal_atom = caf::atom_constant<caf::atom("steal")>;
using stolen_atom = caf::atom_constant<caf::atom("stolen")>;
using lost_atom = caf::atom_constant<caf::atom("lost")>;
using peer_atom = caf::atom_constant<caf::atom("peer")>;
using workers_atom = caf::atom_constant<caf::atom("workers")>;
using stream_push_atom = caf::atom_constant<caf::atom("spush")>;
using stream_close_atom = caf::atom_constant<caf::atom("sclose")>;
using simulate_atom = caf::atom_constant<caf::atom("simulate")>;
using simulated_atom = caf::atom_constant<caf::atom("simulated")>;
using stream_workers_atom = caf::atom_constant<caf::atom("sworkers")>;
using idle_atom = caf::atom_constant<caf::atom("idle")>;

}  // namespace tessera

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::Submission)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::AssignBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::AssignRun)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SubscribeBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::InputBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SlotBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::DoneBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SchedulerStatus)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StolenBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::CancelRequest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::WorkerRegistration)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::PeerNotice)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::WorkerInfo)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::WorkerInfo>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamBatch)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SimulationJob)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::SimulationOutcome)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::vector<tessera::StreamWorker>)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(tessera::StreamWorker)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(std::shared_ptr<tessera::ResultSink>)
