// Result handles and completion order over the engine's result tables.
#include "tessera/future.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "actors/result_sink.hpp"
#include "tessera/as_completed.hpp"

namespace tessera::detail {

ResultHandle::ResultHandle(const ResultHandle& other) : table_(other.table_), slot_(other.slot_) {
  if (table_) table_->hold(slot_);
}

ResultHandle::~ResultHandle() {
  if (table_) table_->release(slot_);
}

TaskState ResultHandle::state() const {
  return table_->state(slot_);
}

bool ResultHandle::wait(std::chrono::steady_clock::time_point deadline) const {
  return table_->wait(slot_, deadline);
}

Value ResultHandle::result() const {
  return table_->result(slot_);
}

std::shared_ptr<const TaskFailed> ResultHandle::error() const {
  return table_->error(slot_);
}

TaskRef ResultHandle::task() const {
  return table_->task(slot_);
}

struct CompletionOrder::State {
  std::shared_ptr<CompletionQueue> queue = std::make_shared<CompletionQueue>();
  // (table, slot) -> the indices of the handles on it not yet given.
  std::map<std::pair<const void*, std::uint32_t>, std::vector<std::size_t>> pending;
  std::size_t remaining = 0;
};

CompletionOrder::CompletionOrder(const std::vector<const ResultHandle*>& handles)
    : state_(std::make_unique<State>()) {
  state_->remaining = handles.size();
  std::vector<ResultSink*> tables;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    ResultSink* table = handles[i]->table();
    state_->pending[{table, handles[i]->slot()}].push_back(i);
    tables.push_back(table);
  }
  std::sort(tables.begin(), tables.end());
  tables.erase(std::unique(tables.begin(), tables.end()), tables.end());
  for (ResultSink* table : tables) table->listen(state_->queue);
}

CompletionOrder::~CompletionOrder() = default;
CompletionOrder::CompletionOrder(CompletionOrder&&) noexcept = default;
CompletionOrder& CompletionOrder::operator=(CompletionOrder&&) noexcept = default;

std::optional<std::size_t> CompletionOrder::next() {
  return next(std::chrono::steady_clock::time_point::max());
}

bool CompletionOrder::exhausted() const {
  return state_->remaining == 0;
}

std::optional<std::size_t> CompletionOrder::next(std::chrono::steady_clock::time_point deadline) {
  State& st = *state_;
  if (st.remaining == 0) return std::nullopt;
  std::unique_lock lock(st.queue->mutex);
  for (;;) {
    while (!st.queue->finished.empty()) {
      auto [table, slot] = st.queue->finished.front();
      st.queue->finished.pop_front();
      auto it = st.pending.find({table, slot});
      if (it == st.pending.end()) continue;
      const std::size_t index = it->second.back();
      it->second.pop_back();
      if (it->second.empty()) {
        st.pending.erase(it);
      } else {
        st.queue->finished.emplace_front(table, slot);  // the slot's other handles come next
      }
      --st.remaining;
      return index;
    }
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      st.queue->changed.wait(lock);
    } else if (st.queue->changed.wait_until(lock, deadline) == std::cv_status::timeout &&
               st.queue->finished.empty()) {
      return std::nullopt;
    }
  }
}

}  // namespace tessera::detail
