#include "monitor/stream_board.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::monitor {

StreamGauge::StreamGauge(std::uint64_t id, std::string simulation, std::string generator) : id_(id) {
  figures_.id = id;
  figures_.simulation = std::move(simulation);
  figures_.generator = std::move(generator);
  figures_.opened_at = timeline_now();
}

void StreamGauge::resumed(std::uint64_t accepted, std::uint64_t stored) {
  std::lock_guard lock(mutex_);
  figures_.accepted = std::max(accepted, stored);
  figures_.stored = stored;
}

void StreamGauge::accepted(std::uint64_t up_to) {
  std::lock_guard lock(mutex_);
  if (up_to > figures_.accepted) figures_.accepted = up_to;
}

void StreamGauge::stored(const std::vector<StreamResult>& results) {
  if (results.empty()) return;
  std::lock_guard lock(mutex_);
  for (const auto& r : results) {
    if (r.failed) {
      ++figures_.failed;
      const auto kind = static_cast<std::size_t>(r.failure);
      if (kind < figures_.failures.size()) ++figures_.failures[kind];
    }
    if (r.timeline.pushed > 0 && r.timeline.stored >= r.timeline.pushed)
      figures_.latency.add(r.timeline.stored - r.timeline.pushed);
    if (r.timeline.started > 0 && r.timeline.finished >= r.timeline.started)
      figures_.run.add(r.timeline.finished - r.timeline.started);
  }
  figures_.stored += results.size();
  if (figures_.stored > figures_.accepted) figures_.accepted = figures_.stored;
  const auto second = static_cast<std::int64_t>(std::floor(timeline_now()));
  auto& bucket = seconds_[static_cast<std::size_t>(second) % seconds_.size()];
  if (bucket.second != second) bucket = Second{second, 0};
  bucket.sets += results.size();
}

void StreamGauge::expects(std::uint64_t input_sets) {
  std::lock_guard lock(mutex_);
  figures_.input_sets = input_sets;
}

void StreamGauge::closed(std::string ended_early) {
  std::lock_guard lock(mutex_);
  figures_.closed = true;
  figures_.ended_early = std::move(ended_early);
}

void StreamGauge::reopened() {
  std::lock_guard lock(mutex_);
  figures_.closed = false;
  figures_.ended_early.clear();
}

void StreamGauge::finished(const std::string& error) {
  std::lock_guard lock(mutex_);
  figures_.closed = true;
  figures_.error = error;
  if (figures_.finished_at == 0) figures_.finished_at = timeline_now();
}

StreamFigures StreamGauge::figures() const {
  std::lock_guard lock(mutex_);
  StreamFigures out = figures_;
  // The last kRateSeconds whole seconds: the current one is not over yet.
  const auto now = static_cast<std::int64_t>(std::floor(timeline_now()));
  std::uint64_t sets = 0;
  for (const auto& bucket : seconds_)
    if (bucket.second < now && bucket.second >= now - static_cast<std::int64_t>(StreamFigures::kRateSeconds))
      sets += bucket.sets;
  out.sets_per_second = static_cast<double>(sets) / StreamFigures::kRateSeconds;
  // The history ends where the stream did, so a finished one keeps the shape of its run.
  const std::int64_t last =
      figures_.finished_at > 0 ? static_cast<std::int64_t>(std::floor(figures_.finished_at)) : now;
  out.rate_history.assign(StreamFigures::kHistorySeconds, 0);
  for (const auto& bucket : seconds_) {
    const std::int64_t ago = last - bucket.second;
    if (bucket.second >= 0 && ago >= 0 && ago < static_cast<std::int64_t>(StreamFigures::kHistorySeconds))
      out.rate_history[StreamFigures::kHistorySeconds - 1 - static_cast<std::size_t>(ago)] = bucket.sets;
  }
  return out;
}

std::shared_ptr<StreamGauge> StreamBoard::open(std::uint64_t id, std::string simulation,
                                               std::string generator) {
  auto gauge = std::make_shared<StreamGauge>(id, std::move(simulation), std::move(generator));
  std::lock_guard lock(mutex_);
  open_[id] = gauge;
  std::erase_if(finished_, [id](const auto& finished) { return finished->id() == id; });
  return gauge;
}

void StreamBoard::finish(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  auto it = open_.find(id);
  if (it == open_.end()) return;
  finished_.push_front(std::move(it->second));
  open_.erase(it);
  while (finished_.size() > kFinishedKept) finished_.pop_back();
}

std::vector<StreamFigures> StreamBoard::figures() const {
  std::vector<std::shared_ptr<StreamGauge>> gauges;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [id, gauge] : open_) gauges.push_back(gauge);
    gauges.insert(gauges.end(), finished_.begin(), finished_.end());
  }
  std::vector<StreamFigures> out;
  out.reserve(gauges.size());
  for (const auto& gauge : gauges) out.push_back(gauge->figures());
  return out;
}

}  // namespace tessera::monitor
