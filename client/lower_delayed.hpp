// How delayed graphs become what the scheduler runs: one operation per task function. Internal to client/.
#pragma once

#include <vector>

#include "graph/operation.hpp"
#include "tessera/delayed.hpp"

namespace tessera::detail {

// The operations of the graphs below `roots`, and the task each root became.
struct LoweredDelayed {
  std::vector<OperationPtr> operations;
  std::vector<TaskRef> roots;
};
LoweredDelayed lower_delayed(const std::vector<const DelayedNode*>& roots);

}  // namespace tessera::detail
