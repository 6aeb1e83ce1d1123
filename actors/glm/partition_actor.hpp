// A worker's share of one GLM fit: the rows of X and y it already holds (persisted task results, not
// copies), kept resident for the whole fit. Each round it evaluates its partitions on the worker's
// compute threads and answers one message with their sums, so the solver never rebuilds a graph.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/compute_pool.hpp"
#include "actors/glm/spec.hpp"
#include "backends/chunk.hpp"

namespace tessera {

struct GlmPartition {
  std::int64_t index = 0;      // its place among the fit's partitions
  std::int64_t first_row = 0;  // its first row in X, for error messages
  backends::ChunkPtr x, y;
};

struct GlmPartitionArgs {
  std::uint64_t session = 0;
  std::uint32_t worker_id = 0;
  caf::actor reply_to;  // the worker's scheduler (in a worker process, its proxy over the connection)
  std::shared_ptr<ComputePool> pool;
  glm::GlmSpec spec;
  std::vector<GlmPartition> partitions;
};

// Checks the partitions' labels and answers `loaded` (X is checked when a result is not finite); then
// answers each evaluate or solve.
caf::actor spawn_glm_partitions(caf::actor_system& system, GlmPartitionArgs args);

}  // namespace tessera
