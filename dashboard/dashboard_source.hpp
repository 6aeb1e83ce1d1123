// What a dashboard reads, as plain functions: the scheduler's status, its workers and the tasks' progress
// (each may throw when the scheduler does not answer in time), the connected clients, and the monitor
// of task runs, streams and GLM fits. actors/cluster_dashboard.hpp makes one for an EmbeddedCluster.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/cluster_monitor.hpp"
#include "scheduling/status.hpp"

namespace tessera::dashboard {

struct DashboardSource {
  std::string name;  // the node's name, or "local" for a LocalCluster
  std::function<SchedulerStatus()> status;
  std::function<std::vector<WorkerInfo>()> workers;
  std::function<std::vector<FunctionProgress>()> progress;
  std::function<std::uint64_t()> clients;  // remote clients connected; empty: none can connect
  std::shared_ptr<const monitor::ClusterMonitor> monitor;
};

// What the scheduler answered last; the dashboard serves it while a newer one is asked for.
struct Snapshot {
  double sampled_at = 0;  // seconds since the Unix epoch; 0: never answered
  SchedulerStatus status;
  std::uint64_t clients = 0;
  std::vector<WorkerInfo> workers;
  std::vector<FunctionProgress> progress;
  std::string error;  // why the latest attempt failed, if it did (the figures are then older)
};

}  // namespace tessera::dashboard
