// The closed set of task states a client sees (Future::status, deliveries): waiting, ready or running
// until the task ends done, erred or cancelled. The scheduler tracks placement with its own states
// (scheduling/placement.hpp, transitions checked there); a worker's slots have theirs (operation actor).
#pragma once

#include <cstdint>
#include <string_view>

namespace tessera {

enum class TaskState : std::uint8_t {
  waiting,    // some input is not yet available
  ready,      // every input is available; queued for a compute thread
  running,    // a compute thread is executing it
  done,       // finished; its result is held by its worker
  erred,      // its function threw
  cancelled,  // will never run: a dependency failed, or it was released
};

constexpr std::string_view state_name(TaskState s) {
  switch (s) {
    case TaskState::waiting:
      return "waiting";
    case TaskState::ready:
      return "ready";
    case TaskState::running:
      return "running";
    case TaskState::done:
      return "done";
    case TaskState::erred:
      return "erred";
    case TaskState::cancelled:
      return "cancelled";
  }
  return "unknown";
}

constexpr bool is_final(TaskState s) {
  return s == TaskState::done || s == TaskState::erred || s == TaskState::cancelled;
}

}  // namespace tessera
