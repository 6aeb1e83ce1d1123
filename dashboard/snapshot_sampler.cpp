#include "dashboard/snapshot_sampler.hpp"

#include "graph/stream_record.hpp"

namespace tessera::dashboard {

SnapshotSampler::SnapshotSampler(DashboardSource source, std::chrono::milliseconds interval,
                                 std::chrono::seconds idle_after)
    : source_(std::move(source)), interval_(interval), idle_after_(idle_after), thread_([this] { run(); }) {}

SnapshotSampler::~SnapshotSampler() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::shared_ptr<const Snapshot> SnapshotSampler::latest(std::chrono::milliseconds fresh_within) {
  std::unique_lock lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  const bool was_idle = now - last_look_ > idle_after_;
  last_look_ = now;
  if (was_idle) {
    wake_.notify_all();
    // Waits for a sample taken after this look, or until `fresh_within`: what is there is served then.
    sampled_.wait_for(lock, fresh_within, [&] { return stopping_ || (latest_ && last_sample_ >= now); });
  }
  if (!latest_) return std::make_shared<const Snapshot>();
  return latest_;
}

std::shared_ptr<const Snapshot> SnapshotSampler::sample(const std::shared_ptr<const Snapshot>& before) {
  auto next = std::make_shared<Snapshot>();
  try {
    next->status = source_.status();
    next->workers = source_.workers();
    next->progress = source_.progress();
    next->clients = source_.clients ? source_.clients() : 0;
    next->sampled_at = timeline_now();
  } catch (const std::exception& e) {
    // The older figures stay, with the reason they are old.
    if (before) *next = *before;
    next->error = e.what();
  }
  return next;
}

void SnapshotSampler::run() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_look_ > idle_after_) {
      wake_.wait(lock,
                 [&] { return stopping_ || std::chrono::steady_clock::now() - last_look_ <= idle_after_; });
      continue;
    }
    const auto before = latest_;
    const auto started = std::chrono::steady_clock::now();
    lock.unlock();
    auto next = sample(before);
    lock.lock();
    latest_ = std::move(next);
    last_sample_ = started;
    sampled_.notify_all();
    wake_.wait_for(lock, interval_, [&] { return stopping_; });
  }
}

}  // namespace tessera::dashboard
