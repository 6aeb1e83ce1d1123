// The codec for GLM fit messages on the wire (every hop uses the one GlmMessage struct). Decoding treats
// input as hostile and throws WireError.
#pragma once

#include "actors/glm/messages.hpp"
#include "messages/protocol.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera::wire {

void encode(const tessera::GlmMessage& message, GlmMessage::Builder out, Attachments& attachments);
tessera::GlmMessage decode(GlmMessage::Reader in, std::span<const std::span<const std::byte>> frames);

}  // namespace tessera::wire
