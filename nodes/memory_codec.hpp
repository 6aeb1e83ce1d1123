// The codec of a worker's memory report (scheduling/status.hpp's WorkerMemory) and its Cap'n Proto form:
// the MEMORY row from worker processes, and the memory in `tessera workers` and `tessera status`. A
// report comes from a peer: its error text is cut to kMaxSpillErrorBytes and its times must be finite.
#pragma once

#include "messages/protocol.capnp.h"
#include "scheduling/status.hpp"

namespace tessera::wire {

inline constexpr std::size_t kMaxSpillErrorBytes = 4096;

void encode_memory(const ::tessera::WorkerMemory& memory, WorkerMemory::Builder out);
::tessera::WorkerMemory decode_memory(WorkerMemory::Reader in);

}  // namespace tessera::wire
