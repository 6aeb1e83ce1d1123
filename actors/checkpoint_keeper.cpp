#include "actors/checkpoint_keeper.hpp"

#include <iostream>
#include <unordered_map>

namespace tessera {

CheckpointKeeper::CheckpointKeeper(CheckpointAccess access, const scheduling::SchedulerCore& core)
    : access_(std::move(access)), store_(access_.store), core_(core) {}

CheckpointStore* CheckpointKeeper::opened() {
  if (!store_ && access_.open) {
    try {
      store_ = access_.open();
    } catch (const std::exception& e) {
      last_error_ = std::string("cannot open the checkpoint store: ") + e.what();
      access_.open = nullptr;  // said once; nothing is checkpointed
      std::cerr << "[tessera] scheduler: " << last_error_ << std::endl;
    }
  }
  return store_.get();
}

void CheckpointKeeper::prune() {
  // Digests of operations the scheduler forgot are let go of now and then, in proportion to the work.
  if (digests_.operations() < 2 * live_after_prune_ + 1024) return;
  digests_.prune([&](OpId id) { return find(id) != nullptr; });
  live_after_prune_ = digests_.operations();
}

void CheckpointKeeper::prepare(const Submission& submission) {
  prune();
  if (!submission.checkpoint) return;
  std::unordered_map<OpId, const Operation*> fresh;
  for (const auto& op : submission.operations) fresh.emplace(op->id(), op.get());
  const auto find_any = [&](OpId id) -> const Operation* {
    auto it = fresh.find(id);
    return it != fresh.end() ? it->second : find(id);
  };
  for (const Watch& watch : submission.watches) {
    const Operation* op = find_any(watch.op);
    if (!op) continue;  // rejected by the core, with the reason
    for (std::uint32_t t = watch.first_task; t < watch.first_task + watch.count && t < op->size(); ++t)
      digests_.of(*op, t, find_any);
  }
}

std::optional<Value> CheckpointKeeper::restore(const Operation& op, std::uint32_t task) {
  if (!store_ || !store_->may_hold(op.function().name)) return std::nullopt;
  const auto digest = digests_.of(op, task, [&](OpId id) { return find(id); });
  if (!digest) return std::nullopt;
  try {
    std::string damage;
    auto value = store_->read(*digest, &damage);
    if (!damage.empty())
      std::cerr << "[tessera] scheduler: " << damage << ": task " << op.key(task) << " is computed again"
                << std::endl;
    return value;
  } catch (const std::exception& e) {
    std::cerr << "[tessera] scheduler: " << e.what() << ": task " << op.key(task) << " is computed instead"
              << std::endl;
    return std::nullopt;
  }
}

std::vector<CheckpointStore::Record> CheckpointKeeper::records(
    const std::vector<scheduling::FinishedCheckpoint>& finished) {
  std::vector<CheckpointStore::Record> out;
  if (finished.empty() || !opened()) return out;
  out.reserve(finished.size());
  for (const auto& f : finished) {
    const auto digest = digests_.of(*f.op, f.task, [&](OpId id) { return find(id); });
    if (!digest) continue;  // its inputs' operations were forgotten before it was keyed: cannot happen
    out.push_back(CheckpointStore::Record{*digest, f.op->function().name, f.op->key(f.task), f.value});
  }
  return out;
}

void CheckpointKeeper::write_failed(const std::string& error, std::size_t records) {
  last_error_ = error;
  std::cerr << "[tessera] scheduler: " << last_error_ << " (" << records << " results not checkpointed)"
            << std::endl;
}

void CheckpointKeeper::report(SchedulerStatus& status) const {
  status.checkpoint_error = last_error_;
  if (!store_) return;
  status.checkpoints_written = store_->written();
  status.checkpoint_bytes_written = store_->bytes_written();
  status.checkpoint_write_seconds = store_->write_seconds();
  status.checkpoints_corrupt = store_->corrupt();
  status.checkpoints_stored = store_->count();
}

}  // namespace tessera
