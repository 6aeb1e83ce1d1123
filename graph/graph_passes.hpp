// Passes over a submission before it reaches the scheduler: each takes a graph and returns the graph that
// is sent instead, with the same answers for the keys asked for.
#pragma once

#include <string>
#include <vector>

#include "graph/fusion_plan.hpp"
#include "graph/graph_spec.hpp"

namespace tessera {

// The tasks `keys` need, and nothing else: what no requested key depends on is never sent, validated or
// run (as Dask's cull). A key that is not in the graph is a SubmissionError naming it; a dependency on a
// missing key is left for lower() to name.
GraphSpec cull(const GraphSpec& graph, const std::vector<std::string>& keys);

// Chains and small diamonds (fusion_plan.hpp) become one tessera.fused task each, under the key of the
// task they end in; the keys asked for stay. A task lower() would reject (unknown function, wrong
// arguments, a missing dependency, a cycle) is left as it is, for lower() to name.
GraphSpec fuse(const GraphSpec& graph, const std::vector<std::string>& keys, const FusionLimits& limits);

}  // namespace tessera
