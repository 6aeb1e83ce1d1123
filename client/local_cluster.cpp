// LocalCluster: the public face of the embedded engine (EmbeddedCluster), which tessera-node runs too.
#include "tessera/local_cluster.hpp"

#include "client/local_cluster_access.hpp"

namespace tessera {

struct LocalCluster::Engine {
  explicit Engine(ClusterOptions options) : cluster(std::move(options)) {}
  EmbeddedCluster cluster;
};

LocalCluster::LocalCluster(ClusterOptions options) : engine_(std::make_unique<Engine>(std::move(options))) {}

LocalCluster::~LocalCluster() = default;

void LocalCluster::scale(std::uint32_t workers) {
  engine_->cluster.scale(workers);
}

std::uint32_t LocalCluster::workers() const {
  return engine_->cluster.workers();
}

bool LocalCluster::wait_for_workers(std::uint32_t workers, std::chrono::milliseconds timeout) {
  return engine_->cluster.wait_for_workers(workers, timeout);
}

SchedulerStatus LocalCluster::status() const {
  return engine_->cluster.status();
}

std::uint32_t LocalCluster::threads_per_worker() const {
  return engine_->cluster.threads_per_worker();
}

namespace detail {

EmbeddedCluster& LocalClusterAccess::engine(LocalCluster& cluster) {
  return cluster.engine_->cluster;
}

}  // namespace detail

}  // namespace tessera
