// LocalCluster: a scheduler and `workers` workers of `threads_per_worker` compute threads each, all in this
// process (the embedded default). Workers can be added or retired while work runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "scheduling/status.hpp"
#include "tessera/cluster_options.hpp"

namespace tessera {

namespace detail {
struct LocalClusterAccess;  // the client library's (and tests') way to the engine behind a cluster
}

class LocalCluster {
 public:
  explicit LocalCluster(ClusterOptions options = {});
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Adds workers, or retires the newest ones (their results move to the others first). Returns at once;
  // wait_for_workers() waits until retirements have completed.
  void scale(std::uint32_t workers);
  // Workers that take new tasks (retiring ones excluded).
  std::uint32_t workers() const;
  // Waits until exactly `workers` workers are active and none is still retiring.
  bool wait_for_workers(std::uint32_t workers, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  SchedulerStatus status() const;
  std::uint32_t threads_per_worker() const;
  // Where its dashboard is served ("http://127.0.0.1:8790/status"); empty without one
  // (ClusterOptions::dashboard).
  std::string dashboard_link() const;

 private:
  friend struct detail::LocalClusterAccess;
  struct Engine;
  std::unique_ptr<Engine> engine_;
};

}  // namespace tessera
