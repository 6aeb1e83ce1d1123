// Restoring from checkpoints: which tasks of a submission are looked up (only those still needed once
// the ones above them are restored), and the lookup that turns a task into one that runs from the store.
#include <unordered_map>

#include "scheduling/core_state.hpp"

namespace tessera::scheduling {

bool SchedulerCore::State::try_restore(OpRecord& rec, std::uint32_t task) {
  if (!checkpoints_possible()) return false;
  auto value = checkpoints->restore(*rec.op, task);
  if (!value) return false;
  rec.restore(task, std::move(*value));
  stats.tasks_from_checkpoint += 1;
  return true;
}

void SchedulerCore::State::restore_needed(const std::vector<OpRecord*>& created,
                                          const std::vector<Watch>& watches) {
  std::unordered_map<OpId, std::pair<OpRecord*, std::vector<bool>>> seen;
  for (OpRecord* rec : created) seen.emplace(rec->op->id(), std::pair{rec, std::vector<bool>{}});
  std::vector<std::pair<OpRecord*, std::uint32_t>> pending;
  const auto need = [&](OpId op, std::uint32_t task) {
    auto it = seen.find(op);
    if (it == seen.end()) return;  // an earlier submission's: computed or restored there
    auto& [rec, visited] = it->second;
    if (task >= rec->op->size()) return;  // rejected later, with the reason
    if (visited.empty()) visited.resize(rec->op->size());
    if (visited[task]) return;
    visited[task] = true;
    pending.emplace_back(rec, task);
  };
  for (const Watch& watch : watches)
    for (std::uint32_t t = watch.first_task; t < watch.first_task + watch.count; ++t) need(watch.op, t);
  while (!pending.empty()) {
    auto [rec, task] = pending.back();
    pending.pop_back();
    if (try_restore(*rec, task) || !rec->op->has_references()) continue;
    for (const auto& column : rec->op->columns())
      if (const auto* ref = column.reference(task)) need(ref->op, ref->index);
  }
}

}  // namespace tessera::scheduling
