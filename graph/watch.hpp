// Which tasks a client's result table wants, and what it receives for each.
#pragma once

#include <cstdint>
#include <memory>

#include "graph/errors.hpp"
#include "graph/operation.hpp"
#include "graph/task_state.hpp"

namespace tessera {

// Tasks [first_task, first_task + count) of `op` fill table slots [first_slot, first_slot + count).
struct Watch {
  OpId op;
  std::uint32_t first_task;
  std::uint32_t count;
  std::uint32_t first_slot;
};

// A finished slot: its value when done, its failure when erred or cancelled. `held`: done, but the value
// stayed on its worker (large, and the worker bounds its memory); it is fetched when asked for.
struct Delivery {
  std::uint32_t slot;
  TaskState state;
  Value value;
  std::shared_ptr<const TaskFailed> error;
  bool held = false;
};

}  // namespace tessera
