// The codec between the scheduler's and workers' actor messages (actors/messages.hpp) and their
// Cap'n Proto form (messages/protocol.capnp), for workers in other processes. Decoding treats input as
// hostile, like the rest of messages/: a malformed message is a WireError saying what was wrong.
#pragma once

#include <functional>
#include <unordered_map>

#include "actors/messages.hpp"
#include "messages/protocol.capnp.h"
#include "messages/wire_codec.hpp"

namespace tessera::wire {

// The operations a worker process knows, by id: a definition travels once, with its first assignment.
using OperationTable = std::unordered_map<OpId, OperationPtr>;

// `first_time(op)` says whether the receiver still needs the operation's definition (and records it).
void encode(const AssignBatch& batch, const std::function<bool(OpId)>& first_time, Assign::Builder out,
            Attachments& attachments);
AssignBatch decode(Assign::Reader in, const Frames& frames, OperationTable& known,
                   const DecodeLimits& limits = {});

void encode(const SubscribeBatch& batch, Subscribe::Builder out);
SubscribeBatch decode(Subscribe::Reader in);

void encode(const SlotBatch& batch, Slots::Builder out);
SlotBatch decode(Slots::Reader in);

// `worker` is the sender's id as the scheduler knows its connection, not what the message claims.
void encode(const DoneBatch& batch, Done::Builder out, Attachments& attachments);
DoneBatch decode(Done::Reader in, const Frames& frames, std::uint32_t worker);

void encode(const StolenBatch& batch, Stolen::Builder out);
StolenBatch decode(Stolen::Reader in, std::uint32_t worker);

void encode(const ::tessera::LostInputs& lost, wire::LostInputs::Builder out);
// The consumers are the sender's own: `worker` is the scheduler's id for it.
::tessera::LostInputs decode(wire::LostInputs::Reader in, std::uint32_t worker);

void encode(std::uint32_t worker, const InputBatch& batch, Inputs::Builder out, Attachments& attachments);
InputBatch decode(Inputs::Reader in, const Frames& frames);

}  // namespace tessera::wire
