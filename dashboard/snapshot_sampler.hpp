// Keeps the dashboard's latest Snapshot: a thread of its own asks the source every `interval` while
// someone has looked within the last `idle_after`, so the HTTP handlers never wait on the scheduler (a
// scheduler busy with a 10,000,000-task submission answers late; its page shows the figures' age) and
// a dashboard nobody watches costs nothing.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "dashboard/dashboard_source.hpp"

namespace tessera::dashboard {

class SnapshotSampler {
 public:
  SnapshotSampler(DashboardSource source, std::chrono::milliseconds interval = std::chrono::milliseconds(500),
                  std::chrono::seconds idle_after = std::chrono::seconds(30));
  ~SnapshotSampler();
  SnapshotSampler(const SnapshotSampler&) = delete;
  SnapshotSampler& operator=(const SnapshotSampler&) = delete;

  // The latest snapshot; after an idle spell it waits up to `fresh_within` for a new one (the first
  // call waits for the first answer, up to that long).
  std::shared_ptr<const Snapshot> latest(std::chrono::milliseconds fresh_within = std::chrono::seconds(1));
  const DashboardSource& source() const { return source_; }

 private:
  DashboardSource source_;
  std::chrono::milliseconds interval_;
  std::chrono::seconds idle_after_;
  std::mutex mutex_;
  std::condition_variable wake_, sampled_;
  std::shared_ptr<const Snapshot> latest_;
  std::chrono::steady_clock::time_point last_look_{};
  std::chrono::steady_clock::time_point last_sample_{};
  bool stopping_ = false;
  std::thread thread_;

  void run();
  std::shared_ptr<const Snapshot> sample(const std::shared_ptr<const Snapshot>& before);
};

}  // namespace tessera::dashboard
