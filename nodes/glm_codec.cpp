#include "nodes/glm_codec.hpp"

namespace tessera::wire {

void encode(const tessera::GlmMessage& message, GlmMessage::Builder out, Attachments& attachments) {
  out.setSession(message.session);
  out.setKind(static_cast<std::uint32_t>(message.kind));
  encode(message.payload, out.initPayload(), attachments);
}

tessera::GlmMessage decode(GlmMessage::Reader in, std::span<const std::span<const std::byte>> frames) {
  if (in.getKind() > kLastGlmKind)
    throw WireError("a GLM message of unknown kind " + std::to_string(in.getKind()));
  return tessera::GlmMessage{in.getSession(), static_cast<GlmKind>(in.getKind()),
                             decode(in.getPayload(), frames)};
}

}  // namespace tessera::wire
