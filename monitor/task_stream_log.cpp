#include "monitor/task_stream_log.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::monitor {

std::uint32_t TaskStreamLog::index_of(std::string_view function) {
  if (auto it = function_index_.find(std::string(function)); it != function_index_.end()) return it->second;
  if (functions_.size() + 1 >= kFunctions) {
    // The last index is shared by every function past the limit.
    if (functions_.size() + 1 == kFunctions) functions_.emplace_back(kOtherFunctions);
    return static_cast<std::uint32_t>(kFunctions - 1);
  }
  const auto index = static_cast<std::uint32_t>(functions_.size());
  functions_.emplace_back(function);
  function_index_.emplace(functions_.back(), index);
  return index;
}

void TaskStreamLog::record(std::uint32_t worker, std::string_view function, double finished_at,
                           double seconds, std::uint32_t tasks, std::uint32_t failed) {
  if (!enabled() || tasks == 0 || !std::isfinite(finished_at) || !std::isfinite(seconds) || seconds < 0)
    return;
  std::lock_guard lock(mutex_);
  ring_[written_ % kRuns] = TaskRun{worker, index_of(function), tasks, failed, finished_at, seconds};
  ++written_;
  bucket_of(finished_at).tasks += tasks;
  totals_.tasks += tasks;
  totals_.failed += failed;
  totals_.runs += 1;
  totals_.busy_seconds += seconds;
  totals_.task_seconds.add(seconds / tasks, tasks);
}

TaskStreamLog::Second& TaskStreamLog::bucket_of(double finished_at) {
  const auto second = static_cast<std::int64_t>(std::floor(std::max(0.0, finished_at)));
  auto& bucket = seconds_[static_cast<std::size_t>(second % static_cast<std::int64_t>(kSeconds))];
  if (bucket.second != second) bucket = Second{second, 0, 0};
  return bucket;
}

void TaskStreamLog::record_sets(std::uint32_t worker, std::string_view simulation, double finished_at,
                                double seconds, std::uint32_t sets, std::uint32_t failed) {
  if (sets == 0 || !std::isfinite(finished_at) || !std::isfinite(seconds) || seconds < 0) return;
  std::lock_guard lock(mutex_);
  bucket_of(finished_at).sets += sets;
  set_totals_.sets += sets;
  set_totals_.failed += failed;
  sets_by_worker_[worker] += sets;
  if (!enabled()) return;
  ring_[written_ % kRuns] = TaskRun{worker, index_of(simulation), sets, failed, finished_at, seconds, true};
  ++written_;
}

std::vector<std::uint64_t> TaskStreamLog::sets_per_second(double now, std::size_t count) const {
  return series(now, count, &Second::sets);
}

double TaskStreamLog::recent_set_rate(double now) const {
  return recent(now, &Second::sets);
}

SetTotals TaskStreamLog::set_totals() const {
  std::lock_guard lock(mutex_);
  return set_totals_;
}

std::uint64_t TaskStreamLog::sets_run_by(std::uint32_t worker) const {
  std::lock_guard lock(mutex_);
  auto it = sets_by_worker_.find(worker);
  return it == sets_by_worker_.end() ? 0 : it->second;
}

TaskStreamSnapshot TaskStreamLog::runs_since(double since) const {
  std::lock_guard lock(mutex_);
  TaskStreamSnapshot out;
  out.functions = functions_;
  const std::uint64_t first = written_ > kRuns ? written_ - kRuns : 0;
  // Reports arrive roughly in the order runs end, so the scan starts from the newest and stops at the
  // first run older than the window.
  std::uint64_t start = written_;
  while (start > first && ring_[(start - 1) % kRuns].finished_at > since) --start;
  out.truncated = start == first && first > 0;
  out.runs.reserve(written_ - start);
  for (std::uint64_t i = start; i < written_; ++i) out.runs.push_back(ring_[i % kRuns]);
  return out;
}

std::vector<std::uint64_t> TaskStreamLog::per_second(double now, std::size_t count) const {
  return series(now, count, &Second::tasks);
}

std::vector<std::uint64_t> TaskStreamLog::series(double now, std::size_t count,
                                                 std::uint64_t Second::*field) const {
  if (count > kSeconds) count = kSeconds;
  std::lock_guard lock(mutex_);
  std::vector<std::uint64_t> out(count, 0);
  const auto current = static_cast<std::int64_t>(std::floor(now));
  for (std::size_t k = 0; k < count; ++k) {
    const std::int64_t second = current - static_cast<std::int64_t>(count) + 1 + static_cast<std::int64_t>(k);
    if (second < 0) continue;
    const auto& bucket = seconds_[static_cast<std::size_t>(second % static_cast<std::int64_t>(kSeconds))];
    if (bucket.second == second) out[k] = bucket.*field;
  }
  return out;
}

double TaskStreamLog::recent_rate(double now) const {
  return recent(now, &Second::tasks);
}

double TaskStreamLog::recent(double now, std::uint64_t Second::*field) const {
  std::uint64_t total = 0;
  for (auto n : series(now - 1, 10, field)) total += n;
  return static_cast<double>(total) / 10;
}

TaskTotals TaskStreamLog::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

}  // namespace tessera::monitor
