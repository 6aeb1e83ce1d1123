// ClusterOptions: how a LocalCluster is sized (what tessera-node reads from its configuration, too).
#pragma once

#include <cstdint>
#include <string>

#include "scheduling/scheduler_options.hpp"

namespace tessera {

struct ClusterOptions {
  // Worker count; each worker owns its own compute threads and operation actors. Default 1.
  std::uint32_t workers = 1;
  // Compute threads per worker: how many task functions one worker runs at once. Default: the cores.
  std::uint32_t threads_per_worker = 0;
  // Threads that handle the runtime's messages. Default: the cores (at least 2).
  std::uint32_t actor_threads = 0;
  SchedulerOptions scheduler{};
  // Where stream results are stored. Empty: a temporary directory, removed with the cluster.
  std::string data_dir{};
};

}  // namespace tessera
