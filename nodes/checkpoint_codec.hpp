// The checkpoint rows of the client protocol (CHECKPOINTS_REQUEST, CHECKPOINTS_ANSWER): a request read
// into plain data on the gateway's I/O thread, its bounds checked there, and answered from the node's
// CheckpointStore on the query executor, in pages of at most max_answer_bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "messages/protocol.capnp.h"
#include "storage/checkpoint_store.hpp"

namespace tessera::wire {

inline constexpr std::size_t kMaxCheckpointKeysPerDrop = 4096;

struct CheckpointsQuery {
  std::uint64_t request_id = 0;
  std::string function;
  std::string after;
  std::uint64_t limit = 0;
  bool drop = false;
  CheckpointSelection selection;
};

// Throws WireError naming what is out of bounds (too many keys, a key or name too long).
CheckpointsQuery decode(CheckpointsRequest::Reader in);
void encode(const CheckpointsQuery& query, CheckpointsRequest::Builder out);

// Lists (a page: at most `limit` entries and about `max_bytes`) or drops, as the query asks.
void answer(const CheckpointsQuery& query, CheckpointStore& store, std::uint64_t max_bytes,
            CheckpointsAnswer::Builder out);
std::vector<::tessera::CheckpointInfo> decode_entries(CheckpointsAnswer::Reader in);

}  // namespace tessera::wire
