// EmbeddedCluster: a scheduler and `workers` workers of `threads_per_worker` compute threads each, all in
// this process (the embedded default; users know it as tessera::LocalCluster, and tessera-node runs one).
// Workers can be added or retired while work runs.
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "actors/cluster_backend.hpp"
#include "actors/messages.hpp"
#include "actors/result_sink.hpp"
#include "actors/scheduler_actor.hpp"

namespace tessera {

struct ClusterOptions {
  // Worker count; each worker owns its own compute threads and operation actors. Default 1.
  std::uint32_t workers = 1;
  // Compute threads per worker: how many task functions one worker runs at once. Default: the cores.
  std::uint32_t threads_per_worker = 0;
  // CAF scheduler threads for message handling. Default: the cores (at least 2).
  std::uint32_t actor_threads = 0;
  SchedulerOptions scheduler{};
};

class EmbeddedCluster {
 public:
  explicit EmbeddedCluster(ClusterOptions options = {});
  ~EmbeddedCluster();
  EmbeddedCluster(const EmbeddedCluster&) = delete;
  EmbeddedCluster& operator=(const EmbeddedCluster&) = delete;

  // Adds workers, or retires the newest ones (their results move to the others first). Returns at once;
  // wait_for_workers() waits until retirements have completed.
  void scale(std::uint32_t workers);
  // Workers that take new tasks (retiring ones excluded).
  std::uint32_t workers() const;
  // Waits until exactly `workers` workers are active and none is still retiring.
  bool wait_for_workers(std::uint32_t workers, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  SchedulerStatus status() const;
  std::uint32_t threads_per_worker() const { return options_.threads_per_worker; }

  // Where clients of this cluster send their work.
  std::shared_ptr<ClusterBackend> backend() const;
  caf::actor scheduler() const { return scheduler_; }
  std::weak_ptr<const SchedulerLink> link() const { return link_; }
  caf::actor_system& system() { return *system_; }

 private:
  ClusterOptions options_;
  std::unique_ptr<caf::actor_system_config> config_;
  std::unique_ptr<caf::actor_system> system_;
  caf::actor scheduler_;
  std::shared_ptr<SchedulerLink> link_;
  mutable std::mutex mutex_;
  std::vector<std::uint32_t> active_;  // worker ids in the order they joined
};

}  // namespace tessera
