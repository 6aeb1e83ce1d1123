// `tessera stream list|drop`: the streams a scheduler node's store holds, through the client library.
#pragma once

#include <cstdint>

#include "cli_streams.hpp"

namespace tessera::cli {

// Each stream: id, simulation, state (running, closing, finished), results stored of sets pushed.
int list_streams(const Target& target, bool json);
// Deletes a finished stream and what it stored; an unknown or unfinished one is an error naming why.
int drop_stream(const Target& target, std::uint64_t stream);

}  // namespace tessera::cli
