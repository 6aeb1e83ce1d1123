// A DashboardSource over an EmbeddedCluster: its scheduler's status, workers and progress (each asked
// with a deadline, so a stuck scheduler shows as stale figures rather than a hung page) and its monitor.
// `clients`: how many remote clients are connected (tessera-node's gateway); empty for a LocalCluster.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "actors/embedded_cluster.hpp"
#include "dashboard/dashboard_source.hpp"

namespace tessera {

dashboard::DashboardSource cluster_dashboard_source(
    EmbeddedCluster& cluster, std::string name, std::function<std::uint64_t()> clients = {},
    std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace tessera
