// What a client is told of the cluster it uses (Client::status, `tessera status`, the dashboard): the
// scheduler's figures, with the node's name and how many clients it serves.
#pragma once

#include <cstdint>
#include <string>

#include "scheduling/status.hpp"

namespace tessera {

struct ClusterStatus {
  std::string name;           // the scheduler node's [node] name; "local" for a cluster in this process
  std::uint32_t clients = 0;  // connected to the node (a cluster in this process: none counted)
  SchedulerStatus scheduler;
};

}  // namespace tessera
