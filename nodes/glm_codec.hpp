// The codec for GLM fit messages on the wire: one Cap'n Proto struct per kind, inside GlmMessage's union
// (messages/protocol.capnp). Vectors and matrices go through the Value codec, so large ones travel as
// frames beside the header. Decoding treats input as hostile: an unknown kind, a missing or ill-typed
// field is a WireError naming the field.
#pragma once

#include "actors/glm/messages.hpp"
#include "messages/protocol.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera::wire {

void encode(const tessera::GlmMessage& message, GlmMessage::Builder out, Attachments& attachments);
tessera::GlmMessage decode(GlmMessage::Reader in, const Frames& frames);

}  // namespace tessera::wire
