// LocalCluster: the public face of the embedded engine (EmbeddedCluster), which tessera-node runs too.
#include "tessera/local_cluster.hpp"

#include <iostream>
#include <optional>
#include <stdexcept>

#include "actors/cluster_dashboard.hpp"
#include "client/local_cluster_access.hpp"
#include "dashboard/dashboard_server.hpp"
#include "dashboard/token_file.hpp"

namespace tessera {
namespace {

// The dashboard's options, checked before anything starts: a std::invalid_argument names the option.
std::optional<dashboard::DashboardOptions> dashboard_options(const ClusterOptions& options) {
  if (options.dashboard.empty()) {
    if (!options.dashboard_token_file.empty())
      throw std::invalid_argument(
          "ClusterOptions::dashboard_token_file is set, but ClusterOptions::dashboard "
          "(where to serve it) is not");
    return std::nullopt;
  }
  dashboard::DashboardOptions out;
  try {
    out.listen = dashboard::parse_listen_address(options.dashboard);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("ClusterOptions::dashboard (\"" + options.dashboard.substr(0, 80) +
                                "\"): " + e.what());
  }
  if (!options.dashboard_token_file.empty()) {
    try {
      out.token = dashboard::read_token_file(options.dashboard_token_file);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("ClusterOptions::dashboard_token_file: ") + e.what());
    }
  }
  return out;
}

}  // namespace

struct LocalCluster::Engine {
  explicit Engine(ClusterOptions options)
      : dashboard_options(tessera::dashboard_options(options)), cluster(std::move(options)) {
    if (!dashboard_options) return;
    try {
      dashboard = std::make_unique<dashboard::DashboardServer>(cluster_dashboard_source(cluster, "local"),
                                                               *dashboard_options);
    } catch (const dashboard::DashboardBindError& e) {
      throw std::invalid_argument(std::string("ClusterOptions::dashboard: ") + e.what());
    }
    // As Dask's Client shows its dashboard's link: where to look while the work runs.
    std::cout << "tessera: dashboard at " << dashboard->link() << std::endl;
  }
  std::optional<dashboard::DashboardOptions> dashboard_options;
  EmbeddedCluster cluster;
  std::unique_ptr<dashboard::DashboardServer> dashboard;  // after the cluster: it goes first
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

std::string LocalCluster::dashboard_link() const {
  return engine_->dashboard ? engine_->dashboard->link() : std::string();
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
