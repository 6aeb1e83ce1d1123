#include "actors/slot_state.hpp"

#include <cstdlib>
#include <iostream>
#include <string>

namespace tessera {

void report_illegal_slot_move(std::string_view operation, std::uint32_t task, SlotState found, SlotState to) {
  std::cerr << "[tessera] worker: internal error: task " << task << " of " << operation << " cannot go from "
            << slot_state_name(found) << " to " << slot_state_name(to) << std::endl;
  if (const char* fatal = std::getenv("TESSERA_FATAL_INTERNAL_ERRORS"); fatal && *fatal && *fatal != '0')
    std::abort();
}

}  // namespace tessera
