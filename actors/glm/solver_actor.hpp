// The solver of one GLM fit: a blocking actor on its own thread (in the scheduler's process) that runs
// spec.solver and talks to the workers' partition actors directly each round — it broadcasts the
// coefficients and sums what comes back. The scheduler only forwards the workers' answers to it.
#pragma once

#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/glm/messages.hpp"
#include "actors/glm/spec.hpp"
#include "graph/operation.hpp"
#include "monitor/glm_board.hpp"

namespace tessera {

// Where one partition's task result is held.
struct GlmPartitionLocation {
  caf::actor worker;
  std::uint32_t worker_id = 0;
  OpId op = 0;
  std::uint32_t slot = 0;
  std::int64_t index = 0;
  std::int64_t first_row = 0;
};

struct GlmSolverArgs {
  std::uint64_t session = 0;
  caf::actor scheduler;  // told `finished` at the end
  glm::GlmSpec spec;
  std::vector<GlmPartitionLocation> partitions;
  std::shared_ptr<GlmReply> reply;
  std::shared_ptr<monitor::GlmBoard> board;  // where its progress is shown (none: nowhere)
};

caf::actor spawn_glm_solver(caf::actor_system& system, GlmSolverArgs args);

// A `fitted` answer that only reports an error.
GlmFitted glm_error_result(const std::string& error);

}  // namespace tessera
