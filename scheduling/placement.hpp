// The scheduler's own states for a task: where it is in placement, which is not what a client sees
// (graph/task_state.hpp). Every change goes through SchedulerCore's one transition function, checked
// against kAllowedTransitions; an edge not in the table is an internal error naming the task.
//
//   unplaced  -> placed     place: assigned to a worker
//   placed    -> unplaced   stolen back for an idle worker, or its worker was lost before it finished
//   placed    -> finished   its worker reports it done
//   placed    -> failed     its function threw
//   unplaced  -> failed     rejected at submission (it references a task the scheduler does not hold)
//   unplaced  -> cancelled  a dependency failed, the client cancelled it, or nobody wants its result
//   placed    -> cancelled  the same, withdrawn from its worker
//   finished  -> unplaced   its result was lost with a worker (or dropped) and is needed again
//   cancelled -> unplaced   revived from lineage for a recomputation
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tessera::scheduling {

enum class Placement : std::uint8_t {
  unplaced,   // on no worker: its producers are not all placed, or nothing had room yet
  placed,     // assigned to a worker, not finished there (queued or running)
  finished,   // ran; its result is (or was) held by its worker
  failed,     // its function threw, or the submission could not run it; final
  cancelled,  // will never run unless revived from lineage
};
inline constexpr std::size_t kPlacements = 5;

constexpr std::string_view placement_name(Placement p) {
  switch (p) {
    case Placement::unplaced:
      return "unplaced";
    case Placement::placed:
      return "placed";
    case Placement::finished:
      return "finished";
    case Placement::failed:
      return "failed";
    case Placement::cancelled:
      return "cancelled";
  }
  return "unknown";
}

constexpr bool is_ended(Placement p) {
  return p == Placement::finished || p == Placement::failed || p == Placement::cancelled;
}

// kAllowedTransitions[from][to]: the edges of the diagram above.
inline constexpr std::array<std::array<bool, kPlacements>, kPlacements> kAllowedTransitions = {{
    //           unplaced placed finished failed cancelled
    /* unplaced  */ {false, true, false, true, true},
    /* placed    */ {true, false, true, true, true},
    /* finished  */ {true, false, false, false, false},
    /* failed    */ {false, false, false, false, false},
    /* cancelled */ {true, false, false, false, false},
}};

constexpr bool transition_allowed(Placement from, Placement to) {
  return kAllowedTransitions[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
}

// A transition outside the table: a bug in the scheduler, never the user's input.
class IllegalTransition : public std::logic_error {
 public:
  IllegalTransition(const std::string& task_key, Placement from, Placement to)
      : std::logic_error("internal error: task " + task_key + " cannot go from " +
                         std::string(placement_name(from)) + " to " + std::string(placement_name(to))) {}
};

}  // namespace tessera::scheduling
