// A program simulation's ProgramOutcome in its Cap'n Proto form (results.capnp), shared by the store's
// records and the stream records that cross the wire.
#pragma once

#include <string>

#include "graph/stream_record.hpp"
#include "messages/results.capnp.h"

namespace tessera::wire {

// Writes `outcome` into `out`.
void encode(const tessera::ProgramOutcome& outcome, ProgramOutcome::Builder out);
// The outcome `in` holds. A tail longer than ProgramOutcome::kTailBytes is a WireError naming `where` when
// `strict` (a peer's message), and is cut to its last kTailBytes otherwise (a stored record).
tessera::ProgramOutcome decode(ProgramOutcome::Reader in, const std::string& where, bool strict);

}  // namespace tessera::wire
