#include "actors/cluster_dashboard.hpp"

namespace tessera {

dashboard::DashboardSource cluster_dashboard_source(EmbeddedCluster& cluster, std::string name,
                                                    std::function<std::uint64_t()> clients,
                                                    std::chrono::milliseconds timeout) {
  cluster.record_task_runs();
  dashboard::DashboardSource source;
  source.name = std::move(name);
  source.status = [&cluster, timeout] { return cluster.status(timeout); };
  source.workers = [&cluster, timeout] { return cluster.worker_list(timeout); };
  source.progress = [&cluster, timeout] { return cluster.progress(timeout); };
  source.clients = std::move(clients);
  source.monitor = cluster.monitor();
  return source;
}

}  // namespace tessera
