// The codec for the client <-> scheduler messages of protocol.capnp: submissions, results, releases
// and cancellations. Like wire_codec, decoding treats input as hostile and throws WireError.
#pragma once

#include <vector>

#include "graph/watch.hpp"
#include "messages/protocol.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera::wire {

struct SubmitMessage {
  std::uint64_t sink_id = 0;
  std::uint32_t slots = 0;
  std::vector<OperationPtr> operations;
  std::vector<tessera::Watch> watches;
  bool checkpoint = false;
};

void encode(const SubmitMessage& message, Submit::Builder out, Attachments& attachments);
// `map_id` gives the sender's operation ids the receiver's numbers (see IdMap).
SubmitMessage decode(Submit::Reader in, const Frames& frames, const IdMap& map_id,
                     const DecodeLimits& limits = {});

void encode(const tessera::TaskFailed& error, TaskFailure::Builder out);
std::shared_ptr<const tessera::TaskFailed> decode(TaskFailure::Reader in);

void encode(std::uint64_t sink_id, const std::vector<tessera::Delivery>& deliveries, Results::Builder out,
            Attachments& attachments);
std::vector<tessera::Delivery> decode(Results::Reader in, const Frames& frames);

}  // namespace tessera::wire
