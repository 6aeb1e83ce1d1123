// Everything a cluster's dashboard reads besides the scheduler's status: one per EmbeddedCluster,
// shared by its scheduler actor (task runs, GLM fits) and its stream actors (their gauges).
#pragma once

#include "monitor/glm_board.hpp"
#include "monitor/stream_board.hpp"
#include "monitor/task_stream_log.hpp"

namespace tessera::monitor {

struct ClusterMonitor {
  TaskStreamLog tasks;
  StreamBoard streams;
  GlmBoard glm;
};

}  // namespace tessera::monitor
