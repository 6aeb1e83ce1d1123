// Where the scheduler finds task results stored as checkpoints. The state machine asks it for a task it
// would otherwise compute (at submit, and when a result is lost with its worker); what it answers is
// handed to a worker with the assignment instead of running the task, so producers needed only by
// restored tasks never run. The scheduler actor implements it over the node's database.
#pragma once

#include <cstdint>
#include <optional>

#include "graph/operation.hpp"

namespace tessera::scheduling {

class CheckpointSource {
 public:
  virtual ~CheckpointSource() = default;
  // Whether any checkpoint may be stored: when not, nothing is looked up and submissions pay nothing.
  virtual bool may_hold_any() const = 0;
  // The stored result of task `task` of `op`; nullopt when none is stored or its record is damaged.
  virtual std::optional<Value> restore(const Operation& op, std::uint32_t task) = 0;
};

}  // namespace tessera::scheduling
