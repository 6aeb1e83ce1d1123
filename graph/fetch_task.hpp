// tessera.fetch: the task that brings a held result back to its client. A worker with a memory limit
// keeps its large results (kHeldResultBytes and more) and tells the client only that they are done;
// asking such a future for its value runs this task on the worker holding it (locality), and its result
// goes back whatever its size.
#pragma once

#include <cstddef>

#include "graph/registry.hpp"

namespace tessera {

// Results of at least this many bytes stay on a worker that has a memory limit until asked for.
inline constexpr std::size_t kHeldResultBytes = 64 * 1024;

void register_fetch_task(Registry& registry);
const TaskFunction& fetch_function();

}  // namespace tessera
