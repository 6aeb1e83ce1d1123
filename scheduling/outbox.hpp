// What one scheduler handler decided to say: messages for workers in the order they must be sent, the
// deliveries for result tables, and the worker events that stream actors and GLM solvers follow. The
// scheduler actor sends them; the state machine never touches an actor.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "graph/watch.hpp"
#include "scheduling/task_messages.hpp"

namespace tessera::scheduling {

// The messages a scheduler sends a worker.
struct WelcomeWorker {
  std::uint32_t id;
};
struct CancelSlots {
  SlotBatch batch;
};
struct DropSlots {
  SlotBatch batch;
};
struct ForgetOperation {
  OpId op;
};
struct ShutdownWorker {};
using WorkerMessage = std::variant<PeerNotice, WelcomeWorker, StealRequest, AssignBatch, SubscribeBatch,
                                   CancelSlots, DropSlots, ForgetOperation, ShutdownWorker>;

// A worker the progress watchdog found stalled (SchedulerCore::check_progress), for the log. Unless
// `kept`, it is given up on: it is also in workers_lost, and its work runs again elsewhere.
struct StalledWorker {
  std::uint32_t id;
  std::string name;  // as the worker registered it: peer-supplied text
  std::chrono::milliseconds timeout;
  std::uint64_t tasks;        // placed there, not finished
  std::uint64_t stream_jobs;  // simulation jobs in flight there, by the streams' latest reports
  bool kept = false;          // no other worker could take its work: it stays until one joins
};

// A finished task whose result is to be stored as a checkpoint.
struct FinishedCheckpoint {
  OperationPtr op;
  std::uint32_t task;
  Value value;
};

struct Outbox {
  // (worker id, message); messages to one worker keep this order.
  std::vector<std::pair<std::uint32_t, WorkerMessage>> to_workers;
  // Finished slots, per result table, in the order of each table's first delivery (a cause is reported
  // before the cancellations it causes).
  std::vector<std::pair<std::shared_ptr<ResultSink>, std::vector<Delivery>>> deliveries;
  std::vector<std::uint32_t> workers_joined;
  std::vector<std::uint32_t> workers_lost;
  // Retired and sent SHUTDOWN (once idle of tasks): streams run again what they sent there, which its
  // shutdown leaves unanswered; nothing of its tasks' is recomputed.
  std::vector<std::uint32_t> workers_retired;
  std::vector<StalledWorker> stalled;
  std::vector<FinishedCheckpoint> checkpoints;

  template <class Message>
  void send(std::uint32_t worker, Message message) {
    to_workers.emplace_back(worker, WorkerMessage{std::move(message)});
  }
  bool empty() const {
    return to_workers.empty() && deliveries.empty() && workers_joined.empty() && workers_lost.empty() &&
           workers_retired.empty() && stalled.empty() && checkpoints.empty();
  }
};

}  // namespace tessera::scheduling
