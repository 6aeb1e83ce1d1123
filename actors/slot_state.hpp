// A slot's own life on a worker, apart from the scheduler's placement states (scheduling/placement.hpp)
// and the client's task states. Every change goes through try_move_slot or move_slot, checked against
// kSlotTransitions at compile time; a state found where a move does not allow it is an internal error.
//
//   waiting -> ready      its last input arrived
//   waiting -> running    a compute thread runs it right after its producer (a continuation)
//   ready   -> running    a compute thread (or the GPU device actor) starts it
//   waiting -> done       adopted: a finished result handed over from a retiring worker
//   ready   -> done       the same, for a slot whose inputs had all come
//   running -> done       its job reports it ran
//   running -> failed     its function threw (or the worker could not give it memory)
//   running -> waiting    an input could not be read back: it waits for it again
//   waiting -> withdrawn  cancelled by the scheduler
//   ready   -> withdrawn  cancelled, or stolen back for an idle worker
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessera {

enum class SlotState : std::uint8_t { waiting, ready, running, done, failed, withdrawn };
inline constexpr std::size_t kSlotStates = 6;

constexpr std::string_view slot_state_name(SlotState s) {
  constexpr std::array<std::string_view, kSlotStates> names{"waiting", "ready",  "running",
                                                            "done",    "failed", "withdrawn"};
  return names[static_cast<std::size_t>(s)];
}

constexpr bool is_final(SlotState s) {
  return s == SlotState::done || s == SlotState::failed || s == SlotState::withdrawn;
}

// kSlotTransitions[from][to]: the edges of the diagram above.
inline constexpr std::array<std::array<bool, kSlotStates>, kSlotStates> kSlotTransitions = {{
    //             waiting ready  running done   failed withdrawn
    /* waiting   */ {false, true, true, true, false, true},
    /* ready     */ {false, false, true, true, false, true},
    /* running   */ {true, false, false, true, true, false},
    /* done      */ {false, false, false, false, false, false},
    /* failed    */ {false, false, false, false, false, false},
    /* withdrawn */ {false, false, false, false, false, false},
}};

constexpr bool slot_transition_allowed(SlotState from, SlotState to) {
  return kSlotTransitions[static_cast<std::size_t>(from)][static_cast<std::size_t>(to)];
}

// Reports a move that found the slot in a state it does not allow: printed, and fatal where
// TESSERA_FATAL_INTERNAL_ERRORS is set (the test suite sets it), since the slot table is suspect then.
void report_illegal_slot_move(std::string_view operation, std::uint32_t task, SlotState found, SlotState to);

// From `From` to `To` if the slot is still in `From`: false when another thread moved it first (a compute
// thread and the actor race for ready slots; either may lose).
template <SlotState From, SlotState To>
bool try_move_slot(std::atomic<SlotState>& state) {
  static_assert(slot_transition_allowed(From, To), "not an edge of kSlotTransitions");
  SlotState expected = From;
  return state.compare_exchange_strong(expected, To);
}

// To `To` from whichever of `From...` the slot is in; any other state is an internal error, reported
// naming the operation and task, and the slot is left as it was (false).
template <SlotState To, SlotState... From>
bool move_slot(std::atomic<SlotState>& state, std::string_view operation, std::uint32_t task) {
  static_assert(sizeof...(From) > 0 && (slot_transition_allowed(From, To) && ...),
                "not an edge of kSlotTransitions");
  for (;;) {
    SlotState found = state.load();
    if (!((found == From) || ...)) {
      report_illegal_slot_move(operation, task, found, To);
      return false;
    }
    if (state.compare_exchange_weak(found, To)) return true;
  }
}

}  // namespace tessera
