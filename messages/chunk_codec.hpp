// Chunks on the wire: their elements travel as frames beside the Cap'n Proto header (inline when small);
// decoding validates every size and index so a corrupt or hostile message is a WireError, never a crash.
#pragma once

#include <span>

#include "backends/chunk.hpp"
#include "messages/values.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera::wire {

void encode_chunk(const backends::ChunkPtr& chunk, Chunk::Builder out, Attachments& attachments,
                  const EncodeOptions& options);
backends::ChunkPtr decode_chunk(Chunk::Reader in, const Frames& frames);

}  // namespace tessera::wire
