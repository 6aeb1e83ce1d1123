// The payloads the scheduler exchanges with workers and workers with each other, as plain values: the
// scheduler's state machine (scheduling/) produces and consumes them without knowing about actors, and
// the actors and the wire codecs carry them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/errors.hpp"
#include "graph/operation.hpp"
#include "graph/watch.hpp"

namespace tessera {

class ResultSink;

// Client -> scheduler: operations to run and which of their tasks the sink wants.
// With `checkpoint`, the watched tasks' results are also stored, under keys derived from what the tasks
// compute, in the scheduler node's database when they finish; a later submission of the same tasks reads
// them instead of running them.
struct Submission {
  std::vector<OperationPtr> operations;
  std::vector<Watch> watches;
  std::shared_ptr<ResultSink> sink;
  bool checkpoint = false;
};

// Client -> scheduler: cancel these tasks (and, with them as the cause, what depends on them).
struct CancelRequest {
  std::vector<TaskRef> tasks;
};

// Scheduler -> worker: run tasks [first_task, first_task + count) of `op` in local slots from first_slot.
// An `adopt` run does not compute: its slots receive a finished result moved from a retiring worker.
// `report`: the finished results go back to the scheduler (someone watches them); otherwise only the
// fact that they finished does, so an intermediate chunk never travels to the scheduler.
// `restored` (one value per task, or empty): the tasks' results as read from their checkpoints; the slots
// take them without running. `checkpoint`: the results go back to the scheduler whatever `report` says,
// to be stored as checkpoints.
struct AssignRun {
  OperationPtr op;
  std::uint32_t first_task = 0;
  std::uint32_t count = 0;
  std::uint32_t first_slot = 0;
  bool adopt = false;
  bool report = true;
  bool checkpoint = false;
  std::vector<Value> restored{};
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

// Operation actor -> worker (-> operation actor): task inputs, sent directly between workers. Between the
// actors of one worker, `held` says the input is that worker's own result of (held_op, held_slot), to be
// read from its chunk store when the task runs, so a spilled input is not read back while it waits.
struct InputDelivery {
  OpId op;
  std::uint32_t slot;
  std::uint16_t column;
  Value value;
  bool held = false;
  OpId held_op = 0;
  std::uint32_t held_slot = 0;
};
struct InputBatch {
  std::vector<InputDelivery> inputs;
};

// Scheduler -> worker: slots of one operation (whose results nobody needs any more, or whose tasks must
// not run).
struct SlotBatch {
  OpId op;
  std::vector<std::uint32_t> slots;
};

// Scheduler -> worker: give back up to `most` queued, not yet started tasks of `op` (work stealing).
struct StealRequest {
  OpId op;
  std::uint32_t most;
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
  double finished_at = 0;   // when the job ended, in seconds since the Unix epoch (the worker's clock)
  // Indexes into tasks whose results stayed on the worker (large, with a memory limit there): delivered
  // as held, and fetched when a client asks.
  std::vector<std::uint32_t> held{};
};

// Operation actor -> scheduler: tasks taken back from a worker's queue before they started, to run on an
// idle worker instead (work stealing).
struct StolenBatch {
  std::uint32_t worker;
  OpId op;
  std::vector<std::uint32_t> tasks;
};

// Worker -> scheduler: results a task on this worker needed and could not read back (a spilled record
// that failed its checksum). The scheduler computes a producer held by this worker again from lineage,
// or has another worker that holds it send it again; the consumer waits for it meanwhile.
struct LostInput {
  TaskRef producer;
  Destination consumer;  // on the reporting worker
};
struct LostInputs {
  std::uint32_t worker = 0;
  std::vector<LostInput> inputs;
};

// Stream actor -> scheduler, when the progress watchdog asks: one worker's share of a stream.
struct StreamLoad {
  std::uint32_t worker = 0;
  std::uint64_t jobs_in_flight = 0;    // simulation jobs sent to it and not answered yet
  std::uint64_t records_answered = 0;  // parameter sets it answered since the stream's previous report
};

// Scheduler -> worker: how to reach another worker (an empty address: it left). `local_address` is set
// when both run on one host (same boot, user and namespaces): the receiver dials it first, then
// `address` if it cannot.
struct PeerNotice {
  std::uint32_t id = 0;
  std::string address;
  std::string public_key;
  std::string local_address{};
};

}  // namespace tessera
