// How delayed graphs become what the scheduler runs: one operation per task function. Internal to client/.
#pragma once

#include <vector>

#include "graph/fusion_plan.hpp"
#include "graph/operation.hpp"
#include "tessera/delayed.hpp"

namespace tessera::detail {

// The operations of the graphs below `roots`, and the task each root became.
struct LoweredDelayed {
  std::vector<OperationPtr> operations;
  std::vector<TaskRef> roots;
};
// With `fusion`, chains and small diamonds become one tessera.fused task each (fusion_plan.hpp); a root
// is never fused into another task.
LoweredDelayed lower_delayed(const std::vector<const DelayedNode*>& roots, const FusionLimits* fusion);

}  // namespace tessera::detail
