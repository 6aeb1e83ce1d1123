// A message through the wire in a test: encoded into an envelope, then read back as the receiving process
// reads it (its header, and its frames as attachments).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "nodes/transport.hpp"

namespace tessera::testing {

// `fill(message)` encodes; `read(envelope, frames)` decodes what a receiver would get, and its result is
// returned.
template <class Fill, class Read>
auto through_the_wire(Fill fill, Read read) {
  transport::Outgoing message;
  fill(message);
  auto frames = message.frames();
  std::vector<std::span<const std::byte>> attachments;
  for (std::size_t i = 1; i < frames.size(); ++i)
    attachments.emplace_back(static_cast<const std::byte*>(frames[i].data()), frames[i].size());
  wire::HeaderReader reader(
      std::span<const std::byte>(static_cast<const std::byte*>(frames[0].data()), frames[0].size()));
  return read(reader.root<wire::Envelope>(), std::span<const std::span<const std::byte>>(attachments));
}

}  // namespace tessera::testing
