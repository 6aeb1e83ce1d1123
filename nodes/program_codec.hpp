// A program's declaration on the wire (the SimulationSetup's `program`), decoded as hostile input: sizes
// bounded, enums checked, and the whole spec checked again as a declaration would be (WireError names it).
#pragma once

#include <memory>

#include "graph/program_spec.hpp"
#include "messages/protocol.capnp.h"

namespace tessera::wire {

void encode(const ::tessera::ProgramSpec& spec, ::tessera::wire::ProgramSpec::Builder out);
std::shared_ptr<const ::tessera::ProgramSpec> decode(::tessera::wire::ProgramSpec::Reader in,
                                                     std::string_view simulation);

}  // namespace tessera::wire
