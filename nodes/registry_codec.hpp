// What a scheduler says of its registries (FUNCTIONS and SIMULATIONS): the functions a client may call by
// name and the simulations a stream may name. Decoded as a peer's text: bounded, made printable.
#pragma once

#include <vector>

#include "graph/registry.hpp"
#include "graph/simulation.hpp"
#include "messages/protocol.capnp.h"

namespace tessera::wire {

void encode(const FunctionInfo& function, FunctionEntry::Builder out);
void encode(const SimulationInfo& simulation, SimulationEntry::Builder out);
// Throws WireError naming the entry when a count is past what any registration could hold.
std::vector<FunctionInfo> decode(capnp::List<FunctionEntry>::Reader in);
std::vector<SimulationInfo> decode(capnp::List<SimulationEntry>::Reader in);

}  // namespace tessera::wire
