// The one JSON writer of what a scheduler says of itself, its workers and their memory: `tessera status
// --json`, `tessera workers --json`, Python's Client.status() and workers(), and the dashboard's status
// and workers panels all write these fields through it, so they cannot drift apart.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "scheduling/cluster_status.hpp"

namespace tessera::dashboard {

using Json = nlohmann::ordered_json;

Json memory_json(const WorkerMemory& memory);
Json worker_json(const WorkerInfo& worker);
Json workers_json(const std::vector<WorkerInfo>& workers);
// The scheduler's counters, clients among them, and each reporting worker's memory.
Json scheduler_json(const SchedulerStatus& status, std::uint32_t clients);
// The same, after the node's "name".
Json cluster_status_json(const ClusterStatus& status);

}  // namespace tessera::dashboard
