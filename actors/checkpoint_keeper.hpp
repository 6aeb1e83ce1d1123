// CheckpointKeeper: the scheduler actor's side of checkpoints. It keys tasks (TaskDigests), answers the
// state machine's lookups from the node's CheckpointStore (scheduling::CheckpointSource), stores the
// results of checkpointed tasks as they finish, and counts what it did for status. The store is opened
// on first use unless the node's data_dir holds one already. Not thread-safe: the scheduler actor owns it;
// the store itself is shared with clients that list and drop checkpoints.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "actors/task_digests.hpp"
#include "scheduling/scheduler_core.hpp"
#include "storage/checkpoint_store.hpp"

namespace tessera {

// How the scheduler reaches the node's checkpoints: `store` when it is open already (a node with a
// data_dir), `open` to open it when the first checkpoint is written. Both empty: checkpoints are refused.
struct CheckpointAccess {
  std::shared_ptr<CheckpointStore> store{};
  std::function<std::shared_ptr<CheckpointStore>()> open{};
};

class CheckpointKeeper final : public scheduling::CheckpointSource {
 public:
  CheckpointKeeper(CheckpointAccess access, const scheduling::SchedulerCore& core);

  // Before the core sees a submission: a checkpointed one has its watched tasks keyed while every
  // operation they depend on is still known.
  void prepare(const Submission& submission);
  // The records of checkpointed tasks that finished (none where checkpoints cannot be stored), which the
  // checkpoint writer writes to store() (opened on first use).
  std::vector<CheckpointStore::Record> records(const std::vector<scheduling::FinishedCheckpoint>& finished);
  std::shared_ptr<CheckpointStore> store() { return opened() ? store_ : nullptr; }
  // The writer's store refused `records` records: logged and kept for status; those tasks are simply not
  // checkpointed.
  void write_failed(const std::string& error, std::size_t records);
  void report(SchedulerStatus& status) const;

  bool may_hold_any() const override { return store_ && store_->may_hold_any(); }
  std::optional<Value> restore(const Operation& op, std::uint32_t task) override;

 private:
  const Operation* find(OpId id) const { return core_.operation(id); }
  CheckpointStore* opened();
  void prune();

  CheckpointAccess access_;
  std::shared_ptr<CheckpointStore> store_;
  const scheduling::SchedulerCore& core_;
  TaskDigests digests_;
  std::size_t live_after_prune_ = 0;
  std::string last_error_;
};

}  // namespace tessera
